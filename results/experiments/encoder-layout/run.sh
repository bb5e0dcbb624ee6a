#!/usr/bin/env bash
# The layout pilot of issue 13 (protocol: results/experiments/PROTOCOL.md): the paper layout, the
# shared-context layout and the shared-context layout with attention dropout 0, at 256 tokens,
# with the negative mix the mix pilot chose, each for the same wall-clock budget.
#
# The budget is fixed as steps: STEPS_<ARM> = 40 minutes / that arm's seconds per step, measured
# in the same session first with
#   python -m benchmarks.train_speed --steps 4 --rounds 1 --train-pairs 76000 \
#       --arms "paper, feature-only last layer, length buckets" "shared-context" "shared-context, attention dropout 0"
# (defaults: --max-length 256 --max-response-length 64, micro-batches of 4). With steps fixed, an
# arm that is stopped (--max-minutes) and resumed, even on another machine, trains the same
# model: float32 is pinned and the state is saved every 50 steps.
# Usage: MIX=... STEPS_PAPER=... STEPS_SHARED=... STEPS_SHARED_DROPOUT0=... bash results/experiments/encoder-layout/run.sh [ARM ...]
# (ARM: paper, shared, shared-dropout0 (the default three), shared-mean)
set -euo pipefail
: "${MIX:?set MIX to the mix the mix pilot chose}"
# shared-mean (mean pooling over each block, issue 13's other feature) runs for the shared arm's steps:
# pooling adds no encoder work but the full last layer, so equal steps are equal cost (PROTOCOL.md).
declare -A STEPS=(
  [paper]="${STEPS_PAPER:?}" [shared]="${STEPS_SHARED:?}" [shared-dropout0]="${STEPS_SHARED_DROPOUT0:?}"
  [shared-mean]="${STEPS_SHARED:?}"
)
declare -A LAYOUT=(
  [paper]="--layout paper --length-buckets 50"
  [shared]="--layout shared-context"
  [shared-dropout0]="--layout shared-context --attention-dropout 0"
  [shared-mean]="--layout shared-context --pooling mean"
)
for name in ${@:-paper shared shared-dropout0}; do
  out=runs/pilot-layout/$name
  steps=${STEPS[$name]}
  mkdir -p "$out"
  if [ ! -f "$out/checkpoint/density_config.json" ]; then
    # shellcheck disable=SC2086
    python -m train train --corpus dailydialog --data-dir ../shared/data/dailydialog --dailydialog-train official \
      --backbone minilm ${LAYOUT[$name]} --max-length 256 --max-response-length 64 \
      --negatives 15 --negative-mix "$MIX" --resample-negatives \
      --batch-size 4 --grad-accum 4 --epochs 1 --max-steps-per-epoch "$steps" --warmup-steps $((steps / 10)) \
      --valid-limit 1000 --validation-kinds all --valid-fit-pairs 4000 --dev-judgments ../shared/data \
      --retrieval-index runs/cache/retrieval-dailydialog.safetensors --select-on zhao_dev_spearman \
      --fit-pairs 16000 --max-minutes 140 --mixed-precision no --save-every 50 --out "$out" \
      >> "$out/train.out" 2>> "$out/train.err"
  fi
  if [ ! -f "$out/checkpoint/density_config.json" ]; then
    echo "$name stopped before the end of its schedule: rerun this script to resume it"; exit 1
  fi
  result=results/experiments/encoder-layout/$name
  mkdir -p "$result"
  cp "$out/log.jsonl" "$result/log.jsonl"
  if [ ! -f "$result/human_correlation.json" ]; then
    python -m benchmarks.human_correlation --checkpoint "$out/checkpoint" --no-baselines \
      --sets dailydialog_zhao --protocols dev --probes 500 --out "$result" > "$out/probes.out" 2> "$out/probes.err"
  fi
  if [ ! -f "$result/speed.json" ]; then
    python -m benchmarks.speed --checkpoint "$out/checkpoint" --pairs 512 --naive-pairs 128 --rank 10 \
      --json "$result/speed.json" > "$out/speed.out" 2>&1
  fi
done
