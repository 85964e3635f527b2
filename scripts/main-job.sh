#!/usr/bin/env bash
# The main job: an end-to-end pipeline on the embedded defaults (SQLite catalog, local warehouse).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/bootstrap.sh
exec .venv/bin/python -m icefloe.cli.spark_pipeline "$@"
