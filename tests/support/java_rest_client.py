"""Run Iceberg Java 1.5.2's real ``RESTCatalog`` (``tests/support/java/JavaRestDriver.java``).

The jars come from ``scripts/fetch_iceberg_java.py`` (run by ``scripts/bootstrap.sh``) in
``.cache/iceberg-java/1.5.2/``; the driver is compiled with ``javac`` once into
``.cache/iceberg-java/classes-<digest>/`` (the digest covers the sources and the jar list). One
``run_driver`` call is one JVM: it runs the whole scripted scenario and returns its JSON lines by
step name.
"""

from __future__ import annotations

import hashlib
import json
import shutil
import subprocess
import tempfile
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
SOURCES = Path(__file__).resolve().parent / "java"
JAR_LIST = SOURCES / "jars.txt"
CACHE = ROOT / ".cache" / "iceberg-java"
JARS = CACHE / "1.5.2"
DRIVER_TIMEOUT_S = 300  # the whole scenario takes ~10 s; a hung JVM fails the module


def _jars() -> list[Path]:
    lines = (line.strip() for line in JAR_LIST.read_text().splitlines())
    jars = [JARS / line for line in lines if line and not line.startswith("#")]
    missing = [jar.name for jar in jars if not jar.exists()]
    if missing:
        raise RuntimeError(f"Iceberg Java jars missing in {JARS} ({missing}): run scripts/bootstrap.sh")
    return jars


def classpath() -> str:
    """The driver's compiled classes and the Iceberg jars, compiling the driver when needed."""
    jars = ":".join(str(jar) for jar in _jars())
    sources = sorted(SOURCES.glob("*.java"))
    digest = hashlib.sha256(JAR_LIST.read_bytes())
    for source in sources:
        digest.update(source.name.encode() + source.read_bytes())
    classes = CACHE / f"classes-{digest.hexdigest()[:16]}"
    if not (classes / "JavaRestDriver.class").exists():
        _compile(sources, jars, classes)
    return f"{classes}:{jars}"


def _compile(sources: list[Path], jars: str, classes: Path) -> None:
    """Compile into ``classes`` (atomically) and drop the classes of older sources."""
    CACHE.mkdir(parents=True, exist_ok=True)
    building = Path(tempfile.mkdtemp(prefix="building-", dir=CACHE))
    subprocess.run(
        ["javac", "-nowarn", "--release", "17", "-d", str(building), "-cp", jars, *map(str, sources)],
        check=True,
    )
    if classes.exists():  # another session compiled the same sources meanwhile
        shutil.rmtree(building)
    else:
        building.replace(classes)
    for stale in CACHE.glob("classes-*"):
        if stale != classes:
            shutil.rmtree(stale, ignore_errors=True)


def run_driver(inputs: dict[str, Any], workdir: Path) -> dict[str, dict[str, Any]]:
    """Run the scenario against ``inputs["uri"]``; the JSON line of each step, by step name."""
    spec = workdir / "java-inputs.json"
    spec.write_text(json.dumps(inputs))
    done = subprocess.run(
        ["java", "-Xshare:auto", "-XX:TieredStopAtLevel=1", "-cp", classpath(), "JavaRestDriver", str(spec)],
        capture_output=True,
        text=True,
        timeout=DRIVER_TIMEOUT_S,
    )
    if done.returncode != 0:
        raise RuntimeError(f"Java driver failed ({done.returncode}):\n{done.stderr[-4000:]}")
    steps: dict[str, dict[str, Any]] = {}
    for line in done.stdout.splitlines():
        if line.startswith("{"):
            record = json.loads(line)
            steps[record.pop("step")] = record
    (workdir / "java-stderr.txt").write_text(done.stderr)
    return steps
