#!/usr/bin/env bash
# Issue 31, a chained run with golds that reuse the last turn's words in every batch (plan, selection and ship rule:
# PLAN.md beside this file). Starts from the bundled last-turn-copies release as committed (commit dda65be's
# density_metric/default, read out of git), trains the anchor pilot's recipe with ARM's flags (results/experiments/
# anchor-and-overlap-rows/run.sh) for STEPS steps on the pilot's data order (--seed 43 --negatives-seed 43), evaluates EVALS times
# exactly as the pilot's sharper look judged the start (a Gaussian of 20,000 training golds; seeds 43), keeps the
# evaluation PLAN.md's rule picks, fits the Gaussian on all 76,053 training pairs with the float16 weights, and
# measures that checkpoint once into results/experiments/overlap-rows-longer/test. Alone on the CPU:
#   STEPS=1200 setsid nohup bash results/experiments/overlap-rows-longer/run.sh > runs/logs/overlap-chain.log 2>&1 < /dev/null & disown
set -euo pipefail
: "${STEPS:?steps of 8 contexts}"
out=runs/overlap-chain
bash results/checkout_bundle.sh dda65be "$out/start"
if [ ! -f "$out/checkpoint/density_config.json" ]; then
  python -m train train --corpus dailydialog --data-dir ../shared/data/dailydialog --dailydialog-train official --init-from "$out/start" \
    --epochs 1 --max-steps-per-epoch "$STEPS" --warmup-steps 30 --lr 2e-5 --batch-size 8 --resample-negatives \
    --seed 43 --negatives-seed 43 \
    --valid-limit 500 --valid-negatives 15 --validation-kinds random,echo,speaker,repeat,earlier,span \
    --valid-fit-pairs 20000 --dev-judgments ../shared/data --evals-per-epoch "${EVALS:-3}" \
    --select-on auc_density/echo+auc_density/speaker+auc_density/repeat --select-floor "zhao_dev_spearman=$FLOOR" \
    --mixed-precision no --save-every 50 --max-minutes "${MINUTES:-80}" \
    --negatives 4 --contrastive-weight 0 --no-dropout --density-weight 1 --density-margin 3 \
    --bank-size 2048 --bank-shrinkage 0.1 --density-copies 4 --copy-mix echo:1,speaker:2 $ARM \
    --name density-minilm-dailydialog --weights-dtype float16 --out "$out" \
    >> "$out/train.out" 2>> "$out/train.err"
fi
cp "$out/log.jsonl" results/experiments/overlap-rows-longer/log.jsonl
if [ ! -f "$out/checkpoint/density_config.json" ]; then
  echo "no checkpoint: stopped before the end of its schedule (rerun to resume), or no evaluation met the floor"; exit 1
fi
python -m benchmarks.human_correlation --checkpoint "$out/checkpoint" \
  --untuned-checkpoint benchmarks/untuned-minilm --protocols full paper dev --out results/experiments/overlap-rows-longer/test
