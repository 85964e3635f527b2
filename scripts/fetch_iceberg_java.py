"""Provide Iceberg Java 1.5.2's REST client jars for ``tests/server/test_java_rest_client*.py``.

Maven Central is not reachable where icefloe is built, but PyPI is: the pinned wheel
``bodo-iceberg-connector==2026.10`` ships Apache Iceberg Java 1.5.2 unshaded with its dependencies.
This downloads it with pip (checking its sha256), extracts only the jars listed in
``tests/support/java/jars.txt`` into ``.cache/iceberg-java/1.5.2/`` and does nothing when they are
already there. ``--from-wheel PATH`` uses a wheel already on disk instead of downloading.
"""

from __future__ import annotations

import argparse
import hashlib
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
JAR_LIST = ROOT / "tests" / "support" / "java" / "jars.txt"
TARGET = ROOT / ".cache" / "iceberg-java" / "1.5.2"
WHEEL = "bodo-iceberg-connector==2026.10"
WHEEL_SHA256 = "947a72aea7d0f0fa49e7609841d8871dd4841335eeaaf9e6abe2ae34075e4c55"
LIBS = "bodo_iceberg_connector/jars/libs/"


def wanted_jars() -> list[str]:
    """The jar file names of ``jars.txt`` (comments and blank lines skipped)."""
    lines = (line.strip() for line in JAR_LIST.read_text().splitlines())
    return [line for line in lines if line and not line.startswith("#")]


def _download(into: Path) -> Path:
    subprocess.run(
        [sys.executable, "-m", "pip", "download", "--quiet", "--no-deps", WHEEL, "-d", str(into)],
        check=True,
    )
    return next(into.glob("bodo_iceberg_connector-*.whl"))


def _extract(wheel: Path, jars: list[str]) -> None:
    digest = hashlib.sha256(wheel.read_bytes()).hexdigest()
    if digest != WHEEL_SHA256:
        raise SystemExit(f"error: {wheel.name} has sha256 {digest}, expected {WHEEL_SHA256}")
    TARGET.mkdir(parents=True, exist_ok=True)
    with zipfile.ZipFile(wheel) as archive:
        for jar in jars:
            tmp = TARGET / (jar + ".tmp")
            tmp.write_bytes(archive.read(LIBS + jar))
            tmp.replace(TARGET / jar)


def main() -> int:
    """Extract the missing jars; print what was done."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--from-wheel", type=Path, help="a downloaded copy of the pinned wheel")
    args = parser.parse_args()
    jars = wanted_jars()
    if all((TARGET / jar).exists() for jar in jars):
        print(f"{TARGET.relative_to(ROOT)} is up to date")
        return 0
    if args.from_wheel:
        _extract(args.from_wheel, jars)
    else:
        with tempfile.TemporaryDirectory() as tmp:
            _extract(_download(Path(tmp)), jars)
    print(f"extracted {len(jars)} Iceberg Java jars into {TARGET.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
