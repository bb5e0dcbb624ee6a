#!/usr/bin/env bash
# The negative-mix pilot of issue 12 (protocol: results/experiments/PROTOCOL.md): the three arms one
# after the other, each trained, fitted and probed. Rerunning it resumes an arm that stopped
# (--max-minutes) from its saved state: the same steps, so the same model.
# Usage: bash results/experiments/negative-mix/run.sh [ARM ...]   (default: the first round's three, in order;
# the second round: mix-b mix-no-probe-kinds-b; the third: mix-c random-c mix-no-probe-kinds-c;
# the fourth: mix-d mix-no-probe-kinds-d)
set -euo pipefail
STEPS=390   # 40 minutes at 6.0-6.2 s per 16-context step (measured on the whole corpus this session)
PROPOSED="random:8,same-dialogue:2,echo:1,speaker:1,repeat:1,drop:1,retrieved:1"
NO_PROBE_KINDS="random:8,same-dialogue:2,drop:1,retrieved:1"   # the proposed mix without echo, speaker, repeat
# Arms: the first round's three, then each later round's fix applied to them (PROTOCOL.md).
declare -A MIX=(
  [random]="random:1" [mix]="$PROPOSED" [mix-no-probe-kinds]="$NO_PROBE_KINDS"
  [mix-b]="$PROPOSED" [mix-no-probe-kinds-b]="$NO_PROBE_KINDS"
  [random-c]="random:1" [mix-c]="$PROPOSED" [mix-no-probe-kinds-c]="$NO_PROBE_KINDS"
  [mix-d]="$PROPOSED" [mix-no-probe-kinds-d]="$NO_PROBE_KINDS"
)
# Arms 1 and 2 ran with the defaults (--mixed-precision auto, which is float32 on this CPU without
# AVX512-BF16; state saved every 200 steps). Every later arm may have to finish in another
# session, perhaps on a CPU where auto would mean bf16: it pins float32 and saves its state every
# 50 steps.
PINNED="--mixed-precision no --save-every 50"
EXCLUDE="--contrastive-exclude speaker,repeat,drop,shuffle"  # second round: near-copies out of the contrastive term
ALL_ROWS="--contrastive-average all-rows"                   # third round: the authors' averaging
CURRICULUM="--hard-negatives-after 130"                     # fourth round: 130 random steps, then the mix
declare -A EXTRA=(
  [random]="" [mix]="" [mix-no-probe-kinds]="$PINNED"
  [mix-b]="$PINNED $EXCLUDE" [mix-no-probe-kinds-b]="$PINNED $EXCLUDE"
  [random-c]="$PINNED $ALL_ROWS" [mix-c]="$PINNED $ALL_ROWS" [mix-no-probe-kinds-c]="$PINNED $ALL_ROWS"
  [mix-d]="$PINNED $CURRICULUM" [mix-no-probe-kinds-d]="$PINNED $CURRICULUM"
)
for name in ${@:-random mix mix-no-probe-kinds}; do
  out=runs/pilot-mix/$name
  mkdir -p "$out"
  if [ ! -f "$out/checkpoint/density_config.json" ]; then
    # shellcheck disable=SC2086
    python -m train train --corpus dailydialog --data-dir ../shared/data/dailydialog --dailydialog-train official \
      --backbone minilm --layout shared-context --max-length 128 --max-response-length 32 \
      --negatives 15 --negative-mix "${MIX[$name]}" --resample-negatives \
      --batch-size 4 --grad-accum 4 --epochs 1 --max-steps-per-epoch $STEPS --warmup-steps $((STEPS / 10)) \
      --valid-limit 1000 --validation-kinds all --valid-fit-pairs 4000 --dev-judgments ../shared/data \
      --retrieval-index runs/cache/retrieval-dailydialog.safetensors --select-on zhao_dev_spearman \
      --fit-pairs 16000 --max-minutes 48 ${EXTRA[$name]} --out "$out" >> "$out/train.out" 2>> "$out/train.err"
  fi
  if [ ! -f "$out/checkpoint/density_config.json" ]; then
    echo "$name stopped before the end of its schedule: rerun this script to resume it"; exit 1
  fi
  untuned=()
  if [ "$name" = random ]; then untuned=(--untuned-checkpoint benchmarks/untuned-minilm); fi
  mkdir -p "results/experiments/negative-mix/$name"
  cp "$out/log.jsonl" "results/experiments/negative-mix/$name/log.jsonl"
  if [ ! -f "results/experiments/negative-mix/$name/human_correlation.json" ]; then
    python -m benchmarks.human_correlation --checkpoint "$out/checkpoint" "${untuned[@]}" --no-baselines \
      --sets dailydialog_zhao --protocols dev --probes 500 --out "results/experiments/negative-mix/$name" \
      > "$out/probes.out" 2> "$out/probes.err"
  fi
done
