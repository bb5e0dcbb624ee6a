#!/usr/bin/env bash
# Judge a fitted checkpoint as a training run's own evaluation at step 0, with a Gaussian of 20,000 training golds
# (the dev-noise measurement: with 3,000, one model's `dev` Spearman spans 2.2 points over draws): --eval-at-start,
# then one step and a stop that is never used. Shared by the WiSE-FT pilot (wise_pilot.sh, seed 42) and the anchor
# pilot's sharper look (anchor/reeval.sh, seed 43). Usage: SEED=S [KINDS=K,K,...] bash results/experiments/judge_at_start.sh CHECKPOINT OUT
# (OUT/eval/log.jsonl gets the evaluation; OUT/train.out and OUT/train.err the run's output).
set -euo pipefail
: "${SEED:?the seed of the validation draws}"
checkpoint=$1 out=$2
mkdir -p "$out"
rm -rf "$out/eval"
python -m train train --corpus dailydialog --data-dir ../shared/data/dailydialog --dailydialog-train official --init-from "$checkpoint" \
  --epochs 1 --max-steps-per-epoch 100 --batch-size 8 --seed "$SEED" --negatives-seed "$SEED" \
  --valid-limit 500 --valid-negatives 15 --validation-kinds "${KINDS:-random,echo,speaker,repeat,earlier,span}" \
  --valid-fit-pairs 20000 --dev-judgments ../shared/data --eval-at-start --evals-per-epoch 1 \
  --select-on auc_density/echo+auc_density/speaker+auc_density/repeat \
  --mixed-precision no --negatives 4 --contrastive-weight 0 --no-dropout --density-weight 0 --anchor-weight 0 \
  --max-minutes 0.001 --out "$out/eval" >> "$out/train.out" 2>> "$out/train.err" ||
  { echo "$checkpoint failed: see $out/train.err"; exit 1; }
