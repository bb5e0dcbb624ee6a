#!/usr/bin/env bash
# PLAN.md, addenda: the short CPU pilot (ARMS, default "d a"; 200 steps; smaller evaluations), then the rule over
# every arm in cpu/ (SELECT, default "a d"; SELECT_FLAGS more flags of select_arm.py), written to cpu/NAME.md and .json.
set -euo pipefail
here=results/experiments/grounded-corpora
small="--evals-per-epoch 1 --valid-fit-pairs 2000 --grounding-valid-pairs 600 --weights-dtype float16"
for arm in ${ARMS:-d a}; do
  STEPS=200 MINUTES=60 EXTRA="$small" bash "$here/run.sh" "$arm" "runs/grounded-corpora-cpu/$arm"
  mkdir -p "$here/cpu/$arm" && cp "runs/grounded-corpora-cpu/$arm/log.jsonl" "$here/cpu/$arm/log.jsonl"
done
PYTHONPATH=. python "$here/select_arm.py" "$here/cpu" --arms ${SELECT:-a d} --json "$here/cpu/${NAME:-select}.json" ${SELECT_FLAGS:-} | tee "$here/cpu/${NAME:-select}.md"
