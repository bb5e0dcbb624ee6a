#!/usr/bin/env bash
# The negative-mix pilot of issue 12 (protocol: results/pilots/PROTOCOL.md), run as one chain:
# the three arms one after the other, each trained, fitted and probed with nothing else running.
# Usage: bash results/pilots/mix_pilot.sh [ARM ...]   (default: all three, in order)
set -euo pipefail
STEPS=390   # 40 minutes at 6.0-6.2 s per 16-context step (measured on the whole corpus this session)
declare -A MIX=(
  [random]="random:1"
  [mix]="random:8,same-dialogue:2,echo:1,speaker:1,repeat:1,drop:1,retrieved:1"
  [mix-no-probe-kinds]="random:8,same-dialogue:2,drop:1,retrieved:1"
)
for arm in "${@:-random mix mix-no-probe-kinds}"; do
  for name in $arm; do
    out=runs/pilot-mix/$name
    mkdir -p "$out"
    /usr/bin/time -v python -m train train --corpus dailydialog --data-dir ../shared/data/dailydialog \
      --backbone minilm --layout shared-context --max-length 128 --max-response-length 32 \
      --negatives 15 --negative-mix "${MIX[$name]}" --resample-negatives \
      --batch-size 4 --grad-accum 4 --epochs 1 --max-steps-per-epoch $STEPS --warmup-steps $((STEPS / 10)) \
      --valid-limit 1000 --validation-kinds all --valid-fit-pairs 4000 --dev-judgments ../shared/data \
      --retrieval-index runs/cache/retrieval-dailydialog.safetensors --select-on zhao_dev_spearman \
      --fit-pairs 16000 --max-minutes 48 --out "$out" > "$out/train.out" 2> "$out/train.err"
    untuned=()
    if [ "$name" = random ]; then untuned=(--untuned-checkpoint benchmarks/untuned-minilm); fi
    python -m benchmarks.human_correlation --checkpoint "$out/checkpoint" "${untuned[@]}" \
      --sets dailydialog_zhao --protocols dev --probes 500 --out "results/pilots/mix/$name" \
      > "$out/probes.out" 2> "$out/probes.err"
  done
done
