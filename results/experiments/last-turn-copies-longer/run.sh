#!/usr/bin/env bash
# Issue 31, a chained run (plan and ship rule: PLAN.md beside this file). Starts from the bundled last-turn-copies
# release (commit 3b29ef3's density_metric/default, read out of git: float16 weights, as committed), trains the same
# recipe STEPS more steps on the parrot chain's data order (--seed 43 --negatives-seed 43), evaluates the start
# (step 0) and EVALS times more exactly as the parrot chain did, keeps the evaluation the rule picks (the
# highest mean density AUC over echo, speaker and repeat among evaluations whose `dev` Spearman is at least 52.36),
# fits the Gaussian on all 76,053 training pairs with the float16 weights, and measures that checkpoint once into
# results/experiments/last-turn-copies-longer/test. Alone on the CPU:
#   STEPS=1200 setsid nohup bash results/experiments/last-turn-copies-longer/run.sh > runs/logs/last-turn-chain.log 2>&1 < /dev/null & disown
set -euo pipefail
: "${STEPS:?steps of 8 contexts}"
out=runs/last-turn-chain
bash results/checkout_bundle.sh 3b29ef3 "$out/start"
if [ ! -f "$out/checkpoint/density_config.json" ]; then
  python -m train train --corpus dailydialog --data-dir ../shared/data/dailydialog --dailydialog-train official --init-from "$out/start" \
    --epochs 1 --max-steps-per-epoch "$STEPS" --warmup-steps 30 --lr 2e-5 --batch-size 8 --resample-negatives \
    --seed 43 --negatives-seed 43 \
    --valid-limit 500 --valid-negatives 15 --validation-kinds random,echo,speaker,repeat,earlier,span \
    --valid-fit-pairs 3000 --dev-judgments ../shared/data --eval-at-start --evals-per-epoch "${EVALS:-3}" \
    --select-on auc_density/echo+auc_density/speaker+auc_density/repeat --select-floor zhao_dev_spearman=52.36 \
    --mixed-precision no --save-every 50 --max-minutes "${MINUTES:-45}" \
    --negatives 4 --contrastive-weight 0 --no-dropout --density-weight 1 --density-margin 3 --anchor-weight 1 \
    --bank-size 2048 --bank-shrinkage 0.1 --density-copies 4 --copy-mix echo:1,speaker:2 \
    --name density-minilm-dailydialog --weights-dtype float16 --out "$out" \
    >> "$out/train.out" 2>> "$out/train.err"
fi
cp "$out/log.jsonl" results/experiments/last-turn-copies-longer/log.jsonl
if [ ! -f "$out/checkpoint/density_config.json" ]; then
  echo "no checkpoint: stopped before the end of its schedule (rerun to resume), or no evaluation met the floor"; exit 1
fi
python -m benchmarks.human_correlation --checkpoint "$out/checkpoint" \
  --untuned-checkpoint benchmarks/untuned-minilm --protocols full paper dev --out results/experiments/last-turn-copies-longer/test
