#!/usr/bin/env bash
# The anchor pilot's arms judged again with a Gaussian of 20,000 training golds (plan: the addenda of PLAN.md beside
# this file): each arm's fitted checkpoint judged by a training run's own evaluation at step 0, as the WiSE-FT pilot
# judges its averages (../judge_at_start.sh), with the pilot's seeds (43). Alone on the CPU; rerunning skips an arm
# already judged. Usage: bash results/experiments/anchor-and-overlap-rows/reeval.sh ARM ...
set -euo pipefail
for arm in "$@"; do
  out=runs/pilot-anchor/reeval-$arm
  mkdir -p "results/experiments/anchor-and-overlap-rows/reeval/$arm"
  if [ ! -s "results/experiments/anchor-and-overlap-rows/reeval/$arm/log.jsonl" ]; then
    SEED=43 bash results/experiments/judge_at_start.sh "runs/pilot-anchor/$arm/checkpoint" "$out"
    cp "$out/eval/log.jsonl" "results/experiments/anchor-and-overlap-rows/reeval/$arm/log.jsonl"
  fi
done
# the table holds every arm judged so far, the start first (start-again, its reproduction, is left out)
python -m benchmarks.pilot_table results/experiments/anchor-and-overlap-rows/reeval \
  --arms start $(cd results/experiments/anchor-and-overlap-rows/reeval && ls -d -- */ | tr -d / | grep -v -x -e start -e start-again) \
  --title "Anchor pilot arms at step 400, judged again with a Gaussian of 20,000 training golds"
