#!/usr/bin/env bash
# One chunk of the release run (issue 14; recipe and selection rule: results/releases/2026-11-25-first-release/PLAN.md).
# Rerunning the same command resumes the run from runs/release/state (saved every 50 steps and at
# --max-minutes). The schedule is EPOCHS x STEPS_PER_EPOCH optimizer steps of 16 contexts: fixed
# before step 1,000 (the end of the warm-up), from the first chunk's seconds per step; the learning
# rate before step 1,000 depends on the warm-up only. Launch it detached, for example
#   EPOCHS=2 STEPS_PER_EPOCH=4500 EVALS_PER_EPOCH=3 setsid nohup bash results/releases/2026-11-25-first-release/release.sh \
#     > runs/logs/release-chunk-N.log 2>&1 < /dev/null & disown
# and keep other CPU work off the machine while it trains (two processes on two cores run each
# three times slower). When the last chunk finishes the schedule, the same command fits the
# Gaussian on all training pairs with best/ in float16 and writes runs/release/checkpoint (not
# time-limited: leave it about 45 minutes). --name and --weights-dtype act on that fit only;
# they were added at step ~1,600 and change nothing in training or its resumption.
set -euo pipefail
: "${EPOCHS:?}" "${STEPS_PER_EPOCH:?}" "${EVALS_PER_EPOCH:?}"
MINUTES=${MINUTES:-140}
mkdir -p runs/release
python -m train train --corpus dailydialog --data-dir ../shared/data/dailydialog --dailydialog-train official \
  --backbone minilm --layout shared-context --attention-dropout 0 --pooling mean \
  --max-length 256 --max-response-length 64 --negatives 15 --negative-mix random:1 --resample-negatives \
  --batch-size 4 --grad-accum 4 --lr 5e-5 --weight-decay 0 --max-grad-norm 1.0 --warmup-steps 1000 \
  --tau 0.1 --contrastive-weight 1.0 --contrastive-average gold-anchors --seed 42 \
  --epochs "$EPOCHS" --max-steps-per-epoch "$STEPS_PER_EPOCH" --evals-per-epoch "$EVALS_PER_EPOCH" \
  --valid-limit 1000 --validation-kinds all --valid-fit-pairs 4000 --dev-judgments ../shared/data \
  --retrieval-index runs/cache/retrieval-dailydialog.safetensors --select-on zhao_dev_spearman \
  --mixed-precision auto --save-every 50 --max-minutes "$MINUTES" --out runs/release \
  --name density-minilm-dailydialog --weights-dtype float16 \
  >> runs/release/train.out 2>> runs/release/train.err
