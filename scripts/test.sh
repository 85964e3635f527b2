#!/usr/bin/env bash
# The test command: install what is needed, lint, type-check, run the test suite.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/bootstrap.sh
.venv/bin/ruff check src tests bench
.venv/bin/mypy
# In CI, scale tests run at a reduced size (see tests/conftest.py).
.venv/bin/python -m pytest -q "$@"
