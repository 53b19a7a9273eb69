#!/usr/bin/env bash
# Paper 004's recorded MBPP audit, offline: Llama-3.3-70B judging its own code against GPT-4o's.
#
#   bash examples/mbpp_audit/audit.sh [EVAL_FILE] [OUT_DIR]
#
# EVAL_FILE defaults to ../shared/data/mbpp_selfpref/llama-3.3-70b_gpt-4o_eval.jsonl beside the
# repository (the file has no licence, so it is not bundled). Writes into OUT_DIR (default
# examples/mbpp_audit/results): the judgments read two ways (the judge's reply, and the most
# probable of its recorded label probabilities), their metrics and reports, our own sandboxed
# re-execution of both models' code, and its agreement with the recorded execution results.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
repo="$(cd "$here/../.." && pwd)"
data="${1:-$repo/../shared/data/mbpp_selfpref/llama-3.3-70b_gpt-4o_eval.jsonl}"
out="${2:-$here/results}"
nep="${NEPOTISM:-nepotism}"
mkdir -p "$out"

for source in reply probabilities; do
  "$nep" import --format mbpp-selfpref "$data" --canonical --verdicts "$source" \
    --out "$out/judgments-$source.csv" --reference-out "$out/recorded-correctness.csv" \
    --texts-out "$out/texts.jsonl"
  "$nep" metrics "$out/judgments-$source.csv" --reference "$out/recorded-correctness.csv" --json \
    > "$out/results-$source.json"
  "$nep" report "$out/results-$source.json" --out "$out/report-$source" \
    --title "MBPP self-preference audit (verdicts from the $source)" > /dev/null
done

# Our own execution of both models' code against the prompt's visible tests, in the sandbox.
"$nep" grade "$out/texts.jsonl" --task code --out "$out/our-correctness.csv" \
  --against "$out/recorded-correctness.csv" | tee "$out/grading.txt"
echo "wrote $out"
