#!/usr/bin/env bash
# The anchor pilot of issue 31 (plan and reading rule: results/pilots/anchor/PLAN.md): three arms fine-tuned from
# the bundled last-turn-copies release at equal steps, one after the other, alone on the CPU, with the last-turn
# chain's recipe, seeds and data order; only the anchor differs (c: weight 1, the chain's; a3: 3; a10: 10; n, added
# later: weight 1 holding the random negatives too, --anchor-negatives; o, added later: weight 1 with 4 of each
# batch's 8 contexts drawn from golds that reuse the last turn's words, --overlap-rows 4; o3: o with weight 3;
# o6 and o6a2: 6 of the 8 contexts from such golds, anchor weight 1 and 2; o6s44: o6 on another data order).
# Rerunning resumes or skips an arm. Usage: bash results/pilots/anchor_pilot.sh [ARM ...]   (default: c a3 a10)
set -euo pipefail
STEPS=${STEPS:-400}
COMMON=(--corpus dailydialog --data-dir ../shared/data/dailydialog --init-from density_metric/default
  --epochs 1 --max-steps-per-epoch "$STEPS" --warmup-steps 30 --lr 2e-5 --batch-size 8 --resample-negatives
  --seed 43 --negatives-seed 43
  --valid-limit 500 --valid-negatives 15 --validation-kinds random,echo,speaker,repeat,earlier,span
  --valid-fit-pairs 3000 --dev-judgments ../shared/data --select-on zhao_dev_spearman --evals-per-epoch 1
  --mixed-precision no --save-every 50 --fit-pairs 2000 --max-minutes "${MINUTES:-20}"
  --negatives 4 --contrastive-weight 0 --no-dropout --density-weight 1 --density-margin 3
  --bank-size 2048 --bank-shrinkage 0.1 --density-copies 4 --copy-mix echo:1,speaker:2)
declare -A ARM=([c]="--anchor-weight 1" [a3]="--anchor-weight 3" [a10]="--anchor-weight 10"
  [n]="--anchor-weight 1 --anchor-negatives" [o]="--anchor-weight 1 --overlap-rows 4"
  [o3]="--anchor-weight 3 --overlap-rows 4" [o6]="--anchor-weight 1 --overlap-rows 6"
  [o6a2]="--anchor-weight 2 --overlap-rows 6" [o6s44]="--anchor-weight 1 --overlap-rows 6 --seed 44 --negatives-seed 44")
for name in ${@:-c a3 a10}; do
  out=runs/pilot-anchor/$name
  mkdir -p "$out" "results/pilots/anchor/$name"
  if [ ! -f "$out/checkpoint/density_config.json" ]; then
    # shellcheck disable=SC2086
    python -m train train "${COMMON[@]}" ${ARM[$name]} --out "$out" \
      >> "$out/train.out" 2>> "$out/train.err" || { echo "$name failed: see $out/train.err"; exit 1; }
  fi
  cp "$out/log.jsonl" "results/pilots/anchor/$name/log.jsonl"
done
python -m benchmarks.pilot_table results/pilots/anchor --arms c a3 a10 n o o3 o6 o6a2 o6s44 \
  --title "Anchor pilot (issue 31): the evaluation at step 400 of each arm"
