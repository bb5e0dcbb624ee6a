#!/usr/bin/env bash
# The repeat pilot of issue 31 (plan and reading rule: results/experiments/training-against-repeats/PLAN.md): two arms fine-tuned from the
# bundled parrot release at equal steps, one after the other, alone on the CPU; b is the parrot release's recipe,
# r the same with the gold's repeated words among the density term's copies. Rerunning resumes or skips an arm.
# Usage: bash results/experiments/training-against-repeats/run.sh [ARM ...]   (default: b r)
set -euo pipefail
STEPS=${STEPS:-400}
start=$(bash results/checkout_bundle.sh 6cf7ce3)  # the bundled release of the time: the parrot release, read out of git
COMMON=(--corpus dailydialog --data-dir ../shared/data/dailydialog --dailydialog-train official --init-from "$start"
  --epochs 1 --max-steps-per-epoch "$STEPS" --warmup-steps 30 --lr 2e-5 --batch-size 8 --resample-negatives
  --valid-limit 500 --valid-negatives 15 --validation-kinds random,echo,speaker,repeat,earlier,span
  --valid-fit-pairs 3000 --dev-judgments ../shared/data --select-on zhao_dev_spearman --evals-per-epoch 2
  --mixed-precision no --save-every 50 --fit-pairs 2000 --max-minutes "${MINUTES:-25}"
  --negatives 4 --contrastive-weight 0 --no-dropout --density-weight 1 --density-margin 3 --anchor-weight 1
  --bank-size 2048 --bank-shrinkage 0.1 --density-copies 4)
declare -A ARM=(
  [b]="--copy-mix echo:1,speaker:2,earlier:1"
  [r]="--copy-mix echo:1,speaker:1,earlier:1,repeat:1"
)
for name in ${@:-b r}; do
  out=runs/pilot-repeat/$name
  mkdir -p "$out" "results/experiments/training-against-repeats/$name"
  start=()
  if [ "$name" = b ]; then start=(--eval-at-start); fi   # the parrot release, judged the same way, once
  if [ ! -f "$out/checkpoint/density_config.json" ]; then
    # shellcheck disable=SC2086
    python -m train train "${COMMON[@]}" "${start[@]}" ${ARM[$name]} --out "$out" \
      >> "$out/train.out" 2>> "$out/train.err" || { echo "$name failed: see $out/train.err"; exit 1; }
  fi
  cp "$out/log.jsonl" "results/experiments/training-against-repeats/$name/log.jsonl"
done
python -m benchmarks.pilot_table results/experiments/training-against-repeats --arms b r --title "Repeat pilot (issue 31): last evaluation of each arm"
