#!/usr/bin/env bash
# Diagnostic of the grounded-contexts pilot (NOTES.md), validation only: why do grounded arms lose on copies? Each named
# arm's fitted checkpoint is judged as a run's step-0 evaluation (--eval-at-start, then a stop) with the pilot's
# evaluation flags but WITHOUT --grounding, so that the evaluation's Gaussian is fitted on 3,000 plain training golds
# instead of the arm's half-grounded ones; the encoder is the arm's. Compare with the arm's own last evaluation.
# Usage: bash results/experiments/grounded-contexts/regauss.sh ARM ...   (OUT: runs/pilot-grounded/regauss-ARM)
set -euo pipefail
here=results/experiments/grounded-contexts
INIT_FROM=$(bash results/checkout_bundle.sh b7850c5)
MINUTES=0.001
source results/experiments/anchor-and-overlap-rows/recipe.sh
signal="--grounding-valid ../shared/data/convai2/valid_unused_by_benchmarks.txt --grounding-valid-pairs 1200"
for name in "$@"; do
  out=runs/pilot-grounded/regauss-$name
  rm -rf "$out" && mkdir -p "$out" "$here/regauss-$name"
  # shellcheck disable=SC2086
  python -m train train "${COMMON[@]}" --anchor-weight 1 --overlap-rows 6 --seed 57 --negatives-seed 57 --dailydialog-train clean $signal \
    --init-from "runs/pilot-grounded/$name/checkpoint" --eval-at-start --out "$out" >> "$out/train.out" 2>> "$out/train.err" ||
    { echo "$name failed: see $out/train.err"; exit 1; }
  grep '"eval"' "$out/log.jsonl" | head -1 > "$here/regauss-$name/eval.jsonl"
done
