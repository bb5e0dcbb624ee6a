#!/usr/bin/env bash
# The bundled model's measurements (docs/release.md, step 6), in order, once the selected checkpoint is bundled in
# density_metric/default. Alone on the CPU:
#   setsid nohup bash results/ship/ship.sh > runs/logs/ship.log 2>&1 < /dev/null & disown
# Each step prints its start time; a failed step stops the script (rerun it from that step with
# FROM=N). The README, the cards and docs/app.png are updated by hand from what this writes.
# The learning curve is drawn from RUN's log.jsonl (default results/releases/2026-11-25-first-release at 16 contexts
# a step; the copy-margin release: RUN=results/releases/2026-11-25-copy-margin CONTEXTS_PER_STEP=8).
set -euo pipefail
FROM=${FROM:-1}
RUN=${RUN:-results/releases/2026-11-25-first-release}
CONTEXTS_PER_STEP=${CONTEXTS_PER_STEP:-16}
n=0
step() {
  n=$((n + 1))
  if ((n < FROM)); then return; fi
  echo "== step $n, $(date -u +%H:%M:%S): $*"
  "$@"
}
json() {  # a benchmark that prints its JSON report: step json OUT.json python -m ...
  local out=$1
  shift
  "$@" > "$out.tmp" && mv "$out.tmp" "$out"
}
step python -m benchmarks.baselines train --system zhao
step python -m benchmarks.human_correlation --checkpoint default \
  --untuned-checkpoint benchmarks/untuned-minilm --protocols full paper dev --out results/bundled-default
step python -m benchmarks.corpus_probes --checkpoint default --out results/bundled-default/corpus-probes
step python -m train grounding-validation --checkpoint density_metric/default \
  --data ../shared/data/convai2/valid_unused_by_benchmarks.txt --out results/bundled-default/grounding-signal/bundled.json
step python -m benchmarks.few_shot --checkpoint default --out results/bundled-default/few-shot
step python -m benchmarks.speed --pairs 1024 --json benchmarks/speed_cpu_release.json
step python -m benchmarks.batch_invariance --pairs 1000 --json benchmarks/batch_invariance_cpu.json
step json benchmarks/covariance_release.json python -m benchmarks.covariance --train-pairs 20000 --checkpoint default
step python -m benchmarks.learning_curve "$RUN/log.jsonl" --contexts-per-step "$CONTEXTS_PER_STEP" \
  --out "$RUN/learning_curve.png"
echo "== done, $(date -u +%H:%M:%S)"
