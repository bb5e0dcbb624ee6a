#!/usr/bin/env bash
# PLAN.md, addendum: the short CPU pilot (arms d, then a; 200 steps; smaller evaluations), then the rule.
set -euo pipefail
here=results/experiments/grounded-corpora
small="--evals-per-epoch 1 --valid-fit-pairs 2000 --grounding-valid-pairs 600 --weights-dtype float16"
for arm in d a; do
  STEPS=200 MINUTES=60 EXTRA="$small" bash "$here/run.sh" "$arm" "runs/grounded-corpora-cpu/$arm"
  mkdir -p "$here/cpu/$arm" && cp "runs/grounded-corpora-cpu/$arm/log.jsonl" "$here/cpu/$arm/log.jsonl"
done
PYTHONPATH=. python "$here/select_arm.py" "$here/cpu" --arms a d --json "$here/cpu/select.json" | tee "$here/cpu/select.md"
