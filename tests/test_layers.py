"""The layering of ARCHITECTURE.md: a module may import its own layer and the layers below, never above.

Order, bottom to top: spec, expressions, io, formats, tree, txn, scan, dml, maintenance, table,
catalog, spark, server, cli. ``icefloe/errors.py``, ``deprecation.py``, ``lru.py`` and the package
``icefloe/__init__.py`` are neutral (below everything, importable from everywhere). Every import
counts: module level, inside functions (lazy imports) and under ``if TYPE_CHECKING:`` — a type-only
import of a higher layer is still a dependency on it, and none is needed, so none is allowed.
``importlib.import_module("icefloe...")`` / ``__import__("icefloe...")`` with a literal name count
too. ``spec/`` (the pure model) imports neither pyarrow, pyspark nor fastavro, not even for type
checking. And no two modules import each other, directly or through others (no cycle in the module
import graph, within a layer too).
"""

from __future__ import annotations

import ast
import itertools
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
    "dml",
    "maintenance",
    "table",
    "catalog",
    "spark",
    "server",
    "cli",
)
NEUTRAL = {PACKAGE, f"{PACKAGE}.errors", f"{PACKAGE}.deprecation", f"{PACKAGE}.lru"}
NEUTRAL_RANK = -1
SPEC_FORBIDDEN = ("pyarrow", "pyspark", "fastavro")


@dataclass(frozen=True)
class Import:
    """One import found in a module: what it names, where, and whether it is type-checking only."""

    target: str
    lineno: int
    type_checking: bool
    names: tuple[str, ...] = ()  # what ``from <target> import ...`` names (may be submodules)


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
                found.append(Import(base, node.lineno, tc, tuple(alias.name for alias in node.names)))
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
        return [f"{module}: maps to no layer of ARCHITECTURE.md (add it to LAYERS or NEUTRAL in {__name__})"]
    facade_lazy = _lazy_import_lines(source) if module == PACKAGE else set()
    for imp in imports_of(source, module, is_package):
        if imp.lineno in facade_lazy:
            continue  # the package root is the public facade: it re-exports any layer, lazily
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


def _lazy_import_lines(source: str) -> set[int]:
    """Lines of imports inside function bodies (``icefloe.__getattr__`` loads the facade's names)."""
    lines: set[int] = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            for inner in ast.walk(node):
                if isinstance(inner, ast.Import | ast.ImportFrom | ast.Call):
                    lines.add(inner.lineno)
    return lines


def test_package_root_is_a_lazy_facade() -> None:
    """``import icefloe`` loads no layer; no module of the package imports the root's re-exports."""
    root = (SRC / "__init__.py").read_text(encoding="utf-8")
    eager = [i for i in imports_of(root, PACKAGE, True) if i.lineno not in _lazy_import_lines(root)]
    assert [i.target for i in eager if i.target.startswith(PACKAGE + ".")] == []
    for path in sorted(SRC.rglob("*.py")):
        if path == SRC / "__init__.py":
            continue
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and node.module == PACKAGE and not node.level:
                names = {a.name for a in node.names}
                allowed = {"__version__", "errors", "deprecation"}
                assert names <= allowed, f"{path}: from icefloe import {names}"


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
    assert not problems, "layering violations (ARCHITECTURE.md):\n  " + "\n  ".join(problems)


def test_every_layer_exists() -> None:
    """The layers named here are the packages that exist (catches a rename that would blind the check)."""
    packages = {p.parent.name for p in SRC.glob("*/__init__.py")}
    assert packages == set(LAYERS), f"packages {sorted(packages)} != layers {sorted(LAYERS)}"


# ---------------------------------------------------------------- no import cycle between modules


def import_graph(src_root: Path = SRC) -> dict[str, dict[str, int]]:
    """Module -> {imported icefloe module: line}, over every import (lazy and TYPE_CHECKING included).

    ``from pkg import name`` depends on the submodule ``pkg.name`` when there is one, else on
    ``pkg``; an import of something inside a module depends on that module.
    """
    files = {module_name(p, src_root): p for p in sorted(src_root.rglob("*.py"))}
    modules = {name for name, _ in files}

    def owner(target: str) -> str | None:
        while target and target not in modules:
            target = target.rpartition(".")[0]
        return target or None

    graph: dict[str, dict[str, int]] = {}
    for (module, is_package), path in files.items():
        edges: dict[str, int] = {}
        source = path.read_text(encoding="utf-8")
        facade_lazy = _lazy_import_lines(source) if module == PACKAGE else set()
        for imp in imports_of(source, module, is_package):
            if imp.lineno in facade_lazy:
                continue  # the root's lazy re-exports are not a dependency of the package itself
            targets = [f"{imp.target}.{n}" for n in imp.names] or [imp.target]
            for target in targets:
                found = owner(target)
                if found is not None and found != module:
                    edges.setdefault(found, imp.lineno)
        graph[module] = edges
    return graph


def cycles(graph: dict[str, dict[str, int]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan, iterative), sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    for root in sorted(graph):
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph.get(child, {})))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
    return sorted(found)


def describe_cycle(graph: dict[str, dict[str, int]], component: list[str]) -> str:
    """One cycle through a component, as ``a:line -> b:line -> ... -> a``."""
    members = set(component)
    path = [component[0]]
    while True:
        step = next(t for t in sorted(graph[path[-1]]) if t in members)
        if step in path:
            path = [*path[path.index(step) :], step]
            break
        path.append(step)
    hops = " -> ".join(f"{a} (line {graph[a][b]})" for a, b in itertools.pairwise(path))
    return f"{hops} -> {path[-1]}"


KNOWN_CYCLES: list[list[str]] = []


def test_no_import_cycle_between_modules() -> None:
    """No two modules of src/icefloe import each other, directly or through others."""
    graph = import_graph()
    found = cycles(graph)
    new = [c for c in found if c not in KNOWN_CYCLES]
    assert not new, "import cycles:\n  " + "\n  ".join(describe_cycle(graph, c) for c in new)
    gone = [c for c in KNOWN_CYCLES if c not in found]
    assert not gone, f"cycles fixed, remove them from KNOWN_CYCLES: {gone}"


def test_cycle_finder_reports_every_component() -> None:
    """Synthetic graphs: a 2-cycle, a 3-cycle through a lazy edge, and an acyclic chain."""
    graph = {
        "a": {"b": 1},
        "b": {"a": 2},
        "c": {"d": 3},
        "d": {"e": 4},
        "e": {"c": 5, "f": 6},
        "f": {},
    }
    assert cycles(graph) == [["a", "b"], ["c", "d", "e"]]
    assert describe_cycle(graph, ["c", "d", "e"]) == "c (line 3) -> d (line 4) -> e (line 5) -> c"
    assert cycles({"x": {"y": 1}, "y": {}}) == []


def test_graph_sees_submodules_named_in_from_imports(tmp_path: Path) -> None:
    """``from icefloe.tree import v4_read`` (even lazy or under TYPE_CHECKING) is an edge to v4_read."""
    root = tmp_path / PACKAGE
    (root / "tree").mkdir(parents=True)
    (root / "__init__.py").write_text("")
    (root / "tree" / "__init__.py").write_text("")
    (root / "tree" / "read_seam.py").write_text("from icefloe.tree import v4_read\n")
    (root / "tree" / "v4_read.py").write_text(
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from .read_seam import x\n"
    )
    graph = import_graph(root)
    assert graph["icefloe.tree.read_seam"] == {"icefloe.tree.v4_read": 1}
    assert cycles(graph) == [["icefloe.tree.read_seam", "icefloe.tree.v4_read"]]


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
        (
            "icefloe.formats.puffin.files",
            False,
            "import icefloe.spark.session as s\n",
            "higher layer 'spark'",
        ),
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
        ("icefloe.formats.puffin.files", False, "from icefloe import __version__\n"),
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
