#!/usr/bin/env bash
# The anchor pilot's arms judged again with a Gaussian of 20,000 training golds (plan: the last addendum of PLAN.md
# beside this file): a training run's evaluation at step 0 of each arm's fitted checkpoint, then one step and a
# stop that is never used, as results/pilots/wise_pilot.sh judges its averages, with the pilot's seeds (43).
# Alone on the CPU; rerunning skips an arm already judged. Usage: bash results/pilots/anchor/reeval.sh ARM ...
set -euo pipefail
COMMON=(--corpus dailydialog --data-dir ../shared/data/dailydialog
  --epochs 1 --max-steps-per-epoch 100 --batch-size 8 --seed 43 --negatives-seed 43
  --valid-limit 500 --valid-negatives 15 --validation-kinds random,echo,speaker,repeat,earlier,span
  --valid-fit-pairs 20000 --dev-judgments ../shared/data --eval-at-start --evals-per-epoch 1
  --select-on auc_density/echo+auc_density/speaker+auc_density/repeat
  --mixed-precision no --negatives 4 --contrastive-weight 0 --no-dropout --density-weight 0 --anchor-weight 0
  --max-minutes 0.001)
for arm in "$@"; do
  out=runs/pilot-anchor/reeval-$arm
  mkdir -p "$out" "results/pilots/anchor/reeval/$arm"
  if [ ! -s "results/pilots/anchor/reeval/$arm/log.jsonl" ]; then
    rm -rf "$out/eval"
    python -m train train "${COMMON[@]}" --init-from "runs/pilot-anchor/$arm/checkpoint" --out "$out/eval" \
      >> "$out/train.out" 2>> "$out/train.err" || { echo "$arm failed: see $out/train.err"; exit 1; }
    cp "$out/eval/log.jsonl" "results/pilots/anchor/reeval/$arm/log.jsonl"
  fi
done
python -m benchmarks.pilot_table results/pilots/anchor/reeval --arms "$@" \
  --title "Anchor pilot arms at step 400, judged again with a Gaussian of 20,000 training golds"
