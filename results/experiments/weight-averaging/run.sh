#!/usr/bin/env bash
# The WiSE-FT pilot of issue 31 (plan, selection and ship rule: results/experiments/weight-averaging/PLAN.md): weight-space averages
# of the bundled release and the last-turn chain's kept model, each judged by a training run's own evaluation at
# step 0 (judge_at_start.sh, seed 42). Alone on the CPU; rerunning skips an arm already judged.
# Usage: bash results/experiments/weight-averaging/run.sh [W ...]   (default: 000 025 050 075 100)
set -euo pipefail
END=${END:-runs/last-turn-chain/checkpoint}
start=$(bash results/checkout_bundle.sh 3b29ef3)  # the bundled release of the time: the last-turn-copies release, read out of git
for w in ${@:-000 025 050 075 100}; do
  out=runs/wise/$w
  mkdir -p "$out" "results/experiments/weight-averaging/$w"
  if [ ! -s "results/experiments/weight-averaging/$w/log.jsonl" ]; then
    python -m train interpolate "$start" "$END" --weight "$((10#$w))e-2" --out "$out/start"
    SEED=42 bash results/experiments/judge_at_start.sh "$out/start" "$out"
    cp "$out/eval/log.jsonl" "results/experiments/weight-averaging/$w/log.jsonl"
  fi
done
python -m benchmarks.pilot_table results/experiments/weight-averaging --arms ${@:-000 025 050 075 100} \
  --title "WiSE-FT pilot (issue 31): theta(w) = (1 - w) bundled + w last-turn chain, at step 0"
