#!/usr/bin/env bash
# Issue 31, step 6: the parrot pilot's winning recipe (results/experiments/copy-margin: arm b) from the committed
# release, in one self-contained run (plan and ship rule: PLAN.md beside this file). Trains STEPS steps
# of 8 contexts, evaluates EVALS times (default 4, evenly spaced) exactly as the pilot did (500 validation
# pairs, a Gaussian of 3,000 training golds, DailyDialog-Zhao `dev`), keeps the evaluation with the best
# `dev` Spearman, fits the Gaussian on all 76,053 training pairs with the
# float16 weights and writes runs/parrot-release/checkpoint, then measures that checkpoint once
# (the full meta-evaluation with the probes) into results/releases/2026-11-25-copy-margin/test. Alone on the CPU:
#   STEPS=2400 setsid nohup bash results/releases/2026-11-25-copy-margin/run.sh > runs/logs/parrot-release.log 2>&1 < /dev/null & disown
# Size STEPS from a timing of the first 20 steps so that the training ends inside MINUTES (default 110):
# a run stopped by --max-minutes saves its state but writes no checkpoint. Rerunning resumes it.
set -euo pipefail
: "${STEPS:?steps of 8 contexts: time 20 steps first}"
out=runs/parrot-release
mkdir -p "$out"
start=$(bash results/checkout_bundle.sh 35dcd63)  # the committed release of the time: the first release, read out of git
if [ ! -f "$out/checkpoint/density_config.json" ]; then
  python -m train train --corpus dailydialog --data-dir ../shared/data/dailydialog --dailydialog-train official --init-from "$start" \
    --epochs 1 --max-steps-per-epoch "$STEPS" --warmup-steps 30 --lr 2e-5 --batch-size 8 --resample-negatives \
    --valid-limit 500 --valid-negatives 15 --validation-kinds random,echo,speaker,repeat,earlier,span \
    --valid-fit-pairs 3000 --dev-judgments ../shared/data --select-on zhao_dev_spearman --evals-per-epoch "${EVALS:-4}" \
    --mixed-precision no --save-every 50 --max-minutes "${MINUTES:-110}" \
    --negatives 4 --contrastive-weight 0 --no-dropout --density-weight 1 --density-margin 3 --anchor-weight 1 \
    --bank-size 2048 --bank-shrinkage 0.1 --density-copies 4 --copy-mix echo:1,speaker:2,earlier:1 \
    --name density-minilm-dailydialog --weights-dtype float16 --out "$out" \
    >> "$out/train.out" 2>> "$out/train.err"
fi
cp "$out/log.jsonl" results/releases/2026-11-25-copy-margin/log.jsonl
if [ ! -f "$out/checkpoint/density_config.json" ]; then
  echo "stopped before the end of its schedule: rerun this script to resume it"; exit 1
fi
python -m benchmarks.human_correlation --checkpoint "$out/checkpoint" \
  --untuned-checkpoint benchmarks/untuned-minilm --protocols full paper dev --out results/releases/2026-11-25-copy-margin/test
