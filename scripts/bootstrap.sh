#!/usr/bin/env bash
# Create .venv and install icefloe with everything the job and the tests need.
# Safe to run again: it reinstalls only when pyproject.toml changed.
set -euo pipefail
cd "$(dirname "$0")/.."

PYTHON=${PYTHON:-python3}
if ! command -v "$PYTHON" >/dev/null 2>&1; then
    echo "error: $PYTHON not found; icefloe needs Python >= 3.11" >&2
    exit 1
fi
if ! "$PYTHON" -c 'import sys; sys.exit(0 if sys.version_info >= (3, 11) else 1)'; then
    echo "error: icefloe needs Python >= 3.11 (found $("$PYTHON" --version 2>&1))" >&2
    exit 1
fi

# Java 17 is needed for the Spark parts (pyspark 4 runs on Java 17+).
if command -v java >/dev/null 2>&1; then
    java_major=$(java -version 2>&1 | sed -n 's/.*version "\([0-9]*\).*/\1/p' | head -n1)
    if [ -z "$java_major" ] || [ "$java_major" -lt 17 ]; then
        echo "warning: Java 17 or newer is needed for Spark; found '$(java -version 2>&1 | head -n1)'" >&2
    fi
else
    echo "warning: Java is missing: Spark features need Java 17 (apt-get install openjdk-17-jre-headless)" >&2
fi

if [ ! -x .venv/bin/python ]; then
    "$PYTHON" -m venv .venv
fi
stamp=.venv/.icefloe-installed
want=$(sha256sum pyproject.toml | cut -d' ' -f1)
if [ ! -f "$stamp" ] || [ "$(cat "$stamp")" != "$want" ]; then
    .venv/bin/python -m pip install --quiet --upgrade pip
    .venv/bin/python -m pip install --quiet -e ".[test,dev,postgres,spark]"
    echo "$want" > "$stamp"
fi

# icefloe's JVM streaming source (jvm/src/main/java): compiled against this pyspark's jars into
# src/icefloe/spark/_jars/icefloe.jar, rebuilt when a Java source changes. Without the jar (no JDK)
# icefloe streams through its Python source.
if ! command -v javac >/dev/null 2>&1 && command -v apt-get >/dev/null 2>&1 && [ "$(id -u)" = 0 ]; then
    apt-get install -y --no-install-recommends openjdk-17-jdk-headless >/dev/null || true
fi
if command -v javac >/dev/null 2>&1; then
    .venv/bin/python scripts/build_jar.py
else
    echo "warning: javac is missing: streaming reads use the Python source (apt-get install openjdk-17-jdk-headless)" >&2
fi

# Iceberg Java 1.5.2's REST client jars for tests/server/test_java_rest_client*.py: the pinned PyPI
# wheel bodo-iceberg-connector==2026.10 (sha256-checked) ships them; only the jars listed in
# tests/support/java/jars.txt are extracted, into .cache/iceberg-java/1.5.2/ (skipped when there).
.venv/bin/python scripts/fetch_iceberg_java.py
