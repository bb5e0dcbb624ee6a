#!/usr/bin/env bash
# Issue 62, one arm of the contrastive ablation (plan: PLAN.md beside this file, written before any run).
# ARM=cl (--contrastive-weight 1.0) or ARM=nocl (0); everything else is the first release's recipe
# (results/releases/2026-11-25-first-release/release.sh) from the untuned backbone, 1,500 steps of 16 contexts,
# one evaluation at the last step (logged for the curves; the checkpoint is the last step, nothing is selected),
# then the Gaussian on all 76,053 training golds and the meta-evaluation. Alone on the CPU:
#   ARM=cl setsid nohup bash results/experiments/contrastive-ablation/run.sh > runs/logs/ablation-cl.log 2>&1 < /dev/null & disown
# Rerunning the same command resumes from runs/ablation-$ARM/state (saved every 50 steps and at --max-minutes).
# bf16 autocast, as arm CL trained (its --mixed-precision auto was bf16 on an AVX512-BF16 CPU): run an arm only
# where `lscpu | grep -o avx512_bf16` finds it (PLAN.md, addendum of 08:35). About 90 minutes an arm there:
# 1,500 steps at 2.1-2.4 s, the last evaluation 2 minutes, the fit 24 (76,053 pairs at 54/s), this 3.
set -euo pipefail
: "${ARM:?cl or nocl}"
case "$ARM" in cl) weight=1.0 ;; nocl) weight=0 ;; *) echo "ARM must be cl or nocl" >&2; exit 2 ;; esac
STEPS=${STEPS:-1500}
out=runs/ablation-$ARM
dest=results/experiments/contrastive-ablation/$ARM
mkdir -p "$out" "$dest"
if [ ! -f "$out/checkpoint/density_config.json" ]; then
  python -m train train --corpus dailydialog --data-dir ../shared/data/dailydialog --dailydialog-train official \
    --backbone minilm --layout shared-context --attention-dropout 0 --pooling mean \
    --max-length 256 --max-response-length 64 --negatives 15 --negative-mix random:1 --resample-negatives \
    --batch-size 4 --grad-accum 4 --lr 5e-5 --weight-decay 0 --max-grad-norm 1.0 --warmup-steps 1000 \
    --tau 0.1 --contrastive-weight "$weight" --contrastive-average gold-anchors --seed 42 --negatives-seed 42 \
    --epochs 1 --max-steps-per-epoch "$STEPS" --evals-per-epoch 1 \
    --valid-limit 1000 --validation-kinds random --valid-fit-pairs 4000 --dev-judgments ../shared/data \
    --select-on recall_at_1 --mixed-precision bf16 --save-every 50 --max-minutes "${MINUTES:-140}" --out "$out" \
    --name "density-minilm-ablation-$ARM" --weights-dtype float16 \
    >> "$out/train.out" 2>> "$out/train.err"
fi
cp "$out/log.jsonl" "$dest/log.jsonl"
if [ ! -f "$out/checkpoint/density_config.json" ]; then
  echo "no checkpoint: stopped before the end of its schedule (rerun to resume)"; exit 1
fi
cp "$out/train.out" "$dest/train.out"  # the fit's report: pairs, seconds, held-out median distance
python -m benchmarks.human_correlation --checkpoint "$out/checkpoint" --no-baselines \
  --protocols full paper dev --out "$dest"
