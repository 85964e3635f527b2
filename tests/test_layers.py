"""The layering of DESIGN.md §2: a module may import its own layer and the layers below, never above.

Order, bottom to top: spec, expressions, io, formats, tree, txn, scan, catalog, maintenance, spark,
server, cli. ``icefloe/errors.py`` and the package ``icefloe/__init__.py`` are neutral (below everything,
importable from everywhere). Every import counts: module level, inside functions (lazy imports) and
under ``if TYPE_CHECKING:`` — a type-only import of a higher layer is still a dependency on it, and
none is needed, so none is allowed. ``importlib.import_module("icefloe...")`` /
``__import__("icefloe...")`` with a literal name count too. ``spec/`` (the pure model) imports neither
pyarrow, pyspark nor fastavro, not even for type checking.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass
from pathlib import Path

import pytest

PACKAGE = "icefloe"
SRC = Path(__file__).resolve().parents[1] / "src" / PACKAGE
LAYERS = (
    "spec",
    "expressions",
    "io",
    "formats",
    "tree",
    "txn",
    "scan",
    "catalog",
    "maintenance",
    "spark",
    "server",
    "cli",
)
NEUTRAL = {PACKAGE, f"{PACKAGE}.errors"}
NEUTRAL_RANK = -1
SPEC_FORBIDDEN = ("pyarrow", "pyspark", "fastavro")


@dataclass(frozen=True)
class Import:
    """One import found in a module: what it names, where, and whether it is type-checking only."""

    target: str
    lineno: int
    type_checking: bool


def layer_rank(module: str) -> int | None:
    """Rank of a module's layer (0 = spec ... 11 = cli, -1 = neutral); None if it maps to no layer."""
    if module in NEUTRAL or not module.startswith(PACKAGE + "."):
        return NEUTRAL_RANK if module in NEUTRAL else None
    head = module.split(".")[1]
    if f"{PACKAGE}.{head}" in NEUTRAL:
        return NEUTRAL_RANK
    return LAYERS.index(head) if head in LAYERS else None


def layer_name(module: str) -> str:
    """Human name of a module's layer."""
    rank = layer_rank(module)
    return "neutral" if rank == NEUTRAL_RANK else ("unmapped" if rank is None else LAYERS[rank])


def _is_type_checking_test(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _resolve_relative(module: str, is_package: bool, level: int, name: str | None) -> str:
    """The absolute module named by ``from <level dots><name> import ...`` inside ``module``."""
    parts = module.split(".") if is_package else module.split(".")[:-1]
    if level - 1 > len(parts) - 1:
        raise ValueError(f"relative import beyond the top package in {module}")
    base = parts[: len(parts) - (level - 1)]
    return ".".join(base + ([name] if name else []))


def _package_member(name: str) -> str:
    """What ``from icefloe import <name>`` imports: a layer/neutral submodule, else the package itself."""
    full = f"{PACKAGE}.{name}"
    return full if name in LAYERS or full in NEUTRAL else PACKAGE


def imports_of(source: str, module: str, is_package: bool = False) -> list[Import]:
    """Every import of an ``icefloe`` module or of a third-party top-level package in ``source``."""
    tree = ast.parse(source)
    guarded: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and _is_type_checking_test(node.test):
            for child in node.body:
                guarded.update(id(n) for n in ast.walk(child))
    found: list[Import] = []
    for node in ast.walk(tree):
        tc = id(node) in guarded
        if isinstance(node, ast.Import):
            found.extend(Import(alias.name, node.lineno, tc) for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = (
                _resolve_relative(module, is_package, node.level, node.module)
                if node.level
                else (node.module or "")
            )
            if base == PACKAGE:  # `from icefloe import scan` imports icefloe.scan; `__version__` is icefloe
                found.extend(Import(_package_member(alias.name), node.lineno, tc) for alias in node.names)
            else:
                found.append(Import(base, node.lineno, tc))
        elif isinstance(node, ast.Call) and node.args and isinstance(node.args[0], ast.Constant):
            func = node.func
            name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
            if name in ("import_module", "__import__") and isinstance(node.args[0].value, str):
                found.append(Import(node.args[0].value, node.lineno, tc))
    return found


def check_module(source: str, module: str, is_package: bool = False) -> list[str]:
    """Layering violations of one module, as readable messages (empty when it is clean)."""
    problems: list[str] = []
    rank = layer_rank(module)
    if rank is None:
        return [f"{module}: maps to no layer of DESIGN.md §2 (add it to LAYERS or NEUTRAL in {__name__})"]
    for imp in imports_of(source, module, is_package):
        where = f"{module}:{imp.lineno}" + (" (under TYPE_CHECKING)" if imp.type_checking else "")
        top = imp.target.split(".")[0]
        if top == PACKAGE:
            target_rank = layer_rank(imp.target)
            if target_rank is None:
                problems.append(f"{where} imports {imp.target}, which maps to no layer")
            elif target_rank > rank:
                problems.append(
                    f"{where} imports {imp.target}: layer {layer_name(module)!r} may not import the higher "
                    f"layer {layer_name(imp.target)!r}"
                )
        elif layer_name(module) == "spec" and top in SPEC_FORBIDDEN:
            problems.append(f"{where} imports {imp.target}: spec/ is the pure model (no {top})")
    return problems


def module_name(path: Path, src_root: Path = SRC) -> tuple[str, bool]:
    """Dotted module name of a file under src/icefloe and whether it is a package ``__init__``."""
    rel = path.relative_to(src_root.parent).with_suffix("")
    parts = list(rel.parts)
    is_package = parts[-1] == "__init__"
    if is_package:
        parts = parts[:-1]
    return ".".join(parts), is_package


def package_violations(src_root: Path = SRC) -> list[str]:
    """Layering violations of every .py file under ``src_root``."""
    problems: list[str] = []
    for path in sorted(src_root.rglob("*.py")):
        module, is_package = module_name(path, src_root)
        problems.extend(check_module(path.read_text(encoding="utf-8"), module, is_package))
    return problems


def test_package_respects_layers() -> None:
    """No module of src/icefloe imports a higher layer; spec/ imports no pyarrow/pyspark/fastavro."""
    assert SRC.is_dir(), SRC
    problems = package_violations()
    assert not problems, "layering violations (DESIGN.md §2):\n  " + "\n  ".join(problems)


def test_every_layer_exists() -> None:
    """The layers named here are the packages that exist (catches a rename that would blind the check)."""
    packages = {p.parent.name for p in SRC.glob("*/__init__.py")}
    assert packages == set(LAYERS), f"packages {sorted(packages)} != layers {sorted(LAYERS)}"


# ---------------------------------------------------------------- the checker checks itself


@pytest.mark.parametrize(
    ("module", "is_package", "source", "expected"),
    [
        (
            "icefloe.spec.schema",
            False,
            "from icefloe.scan.planner import plan_files\n",
            "higher layer 'scan'",
        ),
        ("icefloe.tree.read_seam", False, "from ..txn import producers\n", "imports icefloe.txn"),
        ("icefloe.io", True, "from ..catalog import sql\n", "imports icefloe.catalog"),
        ("icefloe.io.fileio", False, "from icefloe import catalog\n", "imports icefloe.catalog"),
        ("icefloe.formats.puffin", False, "import icefloe.spark.session as s\n", "higher layer 'spark'"),
        (
            "icefloe.expressions.binding",
            False,
            "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from icefloe.io.fileio import FileIO\n",
            "(under TYPE_CHECKING)",
        ),
        ("icefloe.txn.producers", False, "def f():\n    from icefloe.scan import planner\n", "'scan'"),
        ("icefloe.io.fileio", False, "import importlib\nimportlib.import_module('icefloe.cli')\n", "'cli'"),
        ("icefloe.spec.types", False, "import pyarrow as pa\n", "no pyarrow"),
        ("icefloe.spec.types", False, "if TYPE_CHECKING:\n    import pyspark.sql\n", "no pyspark"),
        ("icefloe.spec.types", False, "from fastavro import reader\n", "no fastavro"),
        ("icefloe.util", False, "x = 1\n", "maps to no layer"),
        ("icefloe.tree.x", False, "from icefloe.nowhere import y\n", "maps to no layer"),
    ],
)
def test_checker_detects_violation(module: str, is_package: bool, source: str, expected: str) -> None:
    """A synthetic module with a violation is reported, with a message naming the problem."""
    problems = check_module(source, module, is_package)
    assert problems, f"no violation found in {module}: {source!r}"
    assert any(expected in p for p in problems), problems


@pytest.mark.parametrize(
    ("module", "is_package", "source"),
    [
        (
            "icefloe.scan.planner",
            False,
            "from icefloe.tree.read_seam import live_entries\nfrom icefloe.spec import x\n",
        ),
        (
            "icefloe.scan.planner",
            False,
            "from . import tasks\nfrom .tasks import FileScanTask\nfrom .. import errors\n",
        ),
        ("icefloe.spec.schema", False, "from icefloe.errors import ValidationError\nimport icefloe\n"),
        ("icefloe.spec", True, "from .types import IntegerType\nfrom icefloe import errors\n"),
        ("icefloe.cli.main", False, "from icefloe.spark import session\nfrom icefloe.spec import types\n"),
        ("icefloe.expressions.arrow", False, "import pyarrow.compute as pc\n"),
        ("icefloe.errors", False, "import sys\n"),
        ("icefloe.formats.puffin", False, "from icefloe import __version__\n"),
        ("icefloe", True, "__version__ = '0'\n"),
    ],
)
def test_checker_accepts_allowed_imports(module: str, is_package: bool, source: str) -> None:
    """Same-layer, downward, neutral and relative imports are allowed; pyarrow is fine outside spec/."""
    assert check_module(source, module, is_package) == []


def test_relative_resolution() -> None:
    """Relative imports resolve against the module's package (a package's own __init__ is its package)."""
    assert _resolve_relative("icefloe.scan.planner", False, 1, "tasks") == "icefloe.scan.tasks"
    assert _resolve_relative("icefloe.scan.planner", False, 2, "tree") == "icefloe.tree"
    assert _resolve_relative("icefloe.scan", True, 1, "tasks") == "icefloe.scan.tasks"
    assert _resolve_relative("icefloe.scan", True, 2, None) == "icefloe"
    with pytest.raises(ValueError):
        _resolve_relative("icefloe.scan", True, 3, None)


def test_package_scan_uses_the_checker(tmp_path: Path) -> None:
    """package_violations walks files and names the offending one (synthetic tree on disk)."""
    root = tmp_path / PACKAGE
    (root / "spec").mkdir(parents=True)
    (root / "__init__.py").write_text("")
    (root / "spec" / "__init__.py").write_text("from .bad import x\n")
    (root / "spec" / "bad.py").write_text("from icefloe.catalog import sql\n")
    problems = package_violations(root)
    assert len(problems) == 1 and problems[0].startswith("icefloe.spec.bad:1 imports icefloe.catalog"), (
        problems
    )
