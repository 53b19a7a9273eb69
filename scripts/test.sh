#!/usr/bin/env bash
# The whole test suite on a fresh machine: a virtual environment in .venv, the project with its test
# dependencies (all pinned in pyproject.toml), Debian's headless Chromium for the browser tests, then
# pytest on 2 workers. Idempotent: a second run reuses .venv, pip's cache and the installed browser.
set -euo pipefail
cd "$(dirname "$0")/.."
python3 -m venv .venv
.venv/bin/python -m pip install --quiet --disable-pip-version-check -e '.[test]'
bash scripts/install_browser.sh
exec .venv/bin/python -m pytest -n 2 "$@"
