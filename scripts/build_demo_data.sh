#!/usr/bin/env bash
# Rebuild the bundled demo judgments from the shared AlpacaEval data (needs ../shared/data).
set -euo pipefail
cd "$(dirname "$0")/.."
source_file="${1:-../shared/data/alpaca_eval/annotations_compact.csv.gz}"
exec nepotism import "$source_file" --format alpaca-eval-compact \
    --out src/nepotism/data/alpaca_eval_judgments.parquet
