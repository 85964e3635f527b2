"""Build icefloe's JVM jar (``jvm/src/main/java``) against the installed pyspark's jars.

The jar goes to ``src/icefloe/spark/_jars/icefloe.jar`` and is rebuilt only when the Java sources
(or pyspark's version) change: a digest of them is stored in the jar's manifest directory beside it.
"""

from __future__ import annotations

import hashlib
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

import pyspark

ROOT = Path(__file__).resolve().parent.parent
SOURCES = ROOT / "jvm" / "src" / "main" / "java"
JAR = ROOT / "src" / "icefloe" / "spark" / "_jars" / "icefloe.jar"
STAMP = JAR.with_suffix(".sha256")


def _digest(files: list[Path]) -> str:
    h = hashlib.sha256(pyspark.__version__.encode())
    for f in files:
        h.update(str(f.relative_to(SOURCES)).encode())
        h.update(f.read_bytes())
    return h.hexdigest()


def main() -> int:
    """Compile and package when the sources changed; print what was done."""
    files = sorted(SOURCES.rglob("*.java"))
    digest = _digest(files)
    if JAR.exists() and STAMP.exists() and STAMP.read_text().strip() == digest:
        print(f"{JAR.relative_to(ROOT)} is up to date")
        return 0
    classpath = str(Path(pyspark.__file__).parent / "jars" / "*")
    with tempfile.TemporaryDirectory() as out:
        subprocess.run(
            ["javac", "-nowarn", "--release", "17", "-d", out, "-cp", classpath, *map(str, files)],
            check=True,
        )
        JAR.parent.mkdir(parents=True, exist_ok=True)
        tmp = JAR.with_suffix(".tmp")
        with zipfile.ZipFile(tmp, "w", zipfile.ZIP_DEFLATED) as jar:
            jar.writestr("META-INF/MANIFEST.MF", "Manifest-Version: 1.0\nCreated-By: icefloe\n\n")
            for cls in sorted(Path(out).rglob("*.class")):
                jar.write(cls, str(cls.relative_to(out)))
        tmp.replace(JAR)
    STAMP.write_text(digest + "\n")
    print(f"built {JAR.relative_to(ROOT)} from {len(files)} Java sources")
    return 0


if __name__ == "__main__":
    sys.exit(main())
