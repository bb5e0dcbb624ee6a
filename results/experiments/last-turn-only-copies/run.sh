#!/usr/bin/env bash
# Issue 31: the parrot release's recipe without copies of earlier context turns (plan and ship rule: PLAN.md
# beside this file). Starts from the first release's committed weights (commit 35dcd63's density_metric/default,
# read out of git), trains STEPS steps of 8 contexts with the parrot release run's seed and data order and only
# one change, --copy-mix echo:1,speaker:2 (that run: echo:1,speaker:2,earlier:1), evaluates at the start and
# EVALS times more exactly as that run did, keeps the evaluation the rule picks (the highest mean density
# AUC over echo, speaker and repeat among evaluations whose `dev` Spearman is at least 52.36), fits the Gaussian on
# all 76,053 training pairs with the float16 weights, and measures that checkpoint once into
# results/experiments/last-turn-only-copies/test. Alone on the CPU:
#   STEPS=2400 setsid nohup bash results/experiments/last-turn-only-copies/run.sh > runs/logs/last-turn-copies.log 2>&1 < /dev/null & disown
set -euo pipefail
: "${STEPS:?steps of 8 contexts}"
out=runs/last-turn-copies
bash results/checkout_bundle.sh 35dcd63 "$out/start"
if [ ! -f "$out/checkpoint/density_config.json" ]; then
  python -m train train --corpus dailydialog --data-dir ../shared/data/dailydialog --dailydialog-train official --init-from "$out/start" \
    --epochs 1 --max-steps-per-epoch "$STEPS" --warmup-steps 30 --lr 2e-5 --batch-size 8 --resample-negatives \
    --valid-limit 500 --valid-negatives 15 --validation-kinds random,echo,speaker,repeat,earlier,span \
    --valid-fit-pairs 3000 --dev-judgments ../shared/data --eval-at-start --evals-per-epoch "${EVALS:-4}" \
    --select-on auc_density/echo+auc_density/speaker+auc_density/repeat --select-floor zhao_dev_spearman=52.36 \
    --mixed-precision no --save-every 50 --max-minutes "${MINUTES:-75}" \
    --negatives 4 --contrastive-weight 0 --no-dropout --density-weight 1 --density-margin 3 --anchor-weight 1 \
    --bank-size 2048 --bank-shrinkage 0.1 --density-copies 4 --copy-mix echo:1,speaker:2 \
    --name density-minilm-dailydialog --weights-dtype float16 --out "$out" \
    >> "$out/train.out" 2>> "$out/train.err"
fi
cp "$out/log.jsonl" results/experiments/last-turn-only-copies/log.jsonl
if [ ! -f "$out/checkpoint/density_config.json" ]; then
  echo "no checkpoint: stopped before the end of its schedule (rerun to resume), or no evaluation met the floor"; exit 1
fi
python -m benchmarks.human_correlation --checkpoint "$out/checkpoint" \
  --untuned-checkpoint benchmarks/untuned-minilm --protocols full paper dev --out results/experiments/last-turn-only-copies/test
