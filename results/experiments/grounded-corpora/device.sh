#!/usr/bin/env bash
# The whole GPU lease of issue 55 in one command (PLAN.md): the speed and batch-invariance benchmarks on the GPU,
# the four pilot arms at once, the rule (select_arm.py), the winner trained on for the minutes left, and the chosen
# checkpoint packed into $OUT (float16 weights in parts under 16 MiB, with sha256). Run from a snapshot folder that
# holds this commit's code (train/, density_metric/ with default/, benchmarks/, results/experiments/...) and
# ../shared/data; DEADLINE (default 420) is the seconds the whole script may take (keep it 2-3 minutes inside the
# command's limit). Commit 84b6e1e ran it on an H200 lease: see PLAN.md's addendum for what went wrong.
set -uo pipefail
T0=$(date +%s)
DEADLINE=${DEADLINE:-420}
OUT=${OUT:-/tmp/out}
R=runs/grounded-corpora
here=results/experiments/grounded-corpora
log() { echo "[$(($(date +%s) - T0)) s] $*"; }
left() { echo $((DEADLINE - ($(date +%s) - T0))); }
# python3 itself: a `python` linked to a venv's python3 outside the venv loses the venv (and numpy), as the
# first lease found. DEADLINE must stay well inside the command's limit: the second lease's command outran its 590 s
# and nothing under $OUT came back, so each arm also runs under `timeout`.
export PYTHON=python3 PYTHONPATH=${PYTHONPATH:+$PYTHONPATH:}$PWD PYTHONUNBUFFERED=1 HF_HUB_OFFLINE=1 TOKENIZERS_PARALLELISM=true OMP_NUM_THREADS=3
mkdir -p "$OUT" "$R"

log "versions"
python3 -c 'import torch, transformers, datasets, accelerate, numpy; print(torch.__version__, torch.cuda.get_device_name() if torch.cuda.is_available() else "no CUDA", transformers.__version__, datasets.__version__, accelerate.__version__, numpy.__version__)' ||
  { log "imports failed"; exit 1; }
python3 -c "import datasets; datasets.Dataset.from_list([{'turns': ['a', 'b']}])" || { log "datasets cannot build a table"; exit 1; }

log "benchmarks (the GPU alone)"
[ -n "${SKIP_BENCH:-}" ] || timeout 100 python3 -m benchmarks.speed --pairs 512 --naive-pairs 128 --repeats 2 --json "$R/speed_cuda.json" > "$R/speed.out" 2>&1 ||
  log "speed benchmark failed or timed out: $(tail -2 "$R/speed.out")"
[ -n "${SKIP_BENCH:-}" ] || timeout 120 python3 -m benchmarks.batch_invariance --pairs 1000 --json "$R/batch_invariance_cuda.json" > "$R/batch_invariance.out" 2>&1 ||
  log "batch-invariance benchmark failed or timed out: $(tail -2 "$R/batch_invariance.out")"

log "pilot: arms a b c d at once, STEPS=${STEPS:=1500}"
if [ -z "${SKIP_PILOT:-}" ]; then  # SKIP_PILOT=1: the arms' folders are there already (a rerun of what follows)
  for arm in a b c d; do
    STEPS=$STEPS MINUTES=${PILOT_MINUTES:-4} EXTRA="--weights-dtype float16 ${PILOT_EXTRA:-}" \
      timeout $((${PILOT_MINUTES:-4} * 60 + 90)) bash "$here/run.sh" "$arm" "$R/$arm" &
  done
  wait
fi
log "pilot done"
for arm in a b c d; do tail -2 "$R/$arm/train.out"; done
python3 "$here/select_arm.py" "$R" --arms a b c d --json "$R/select.json" | tee "$R/select.md"
winner=$(python3 -c "import json; print(json.load(open('$R/select.json'))['winner'])") || winner=a
chosen=""
if [ "$winner" != a ]; then
  if [ ! -f "$R/$winner/checkpoint/density_config.json" ]; then  # stopped by its guard: finish its schedule
    log "resume $winner to the end of its schedule"
    STEPS=$STEPS MINUTES=$(($(left) / 60 - 1)) EXTRA="--weights-dtype float16 ${PILOT_EXTRA:-}" bash "$here/run.sh" "$winner" "$R/$winner"
  fi
  [ -f "$R/$winner/checkpoint/density_config.json" ] && chosen=$R/$winner/checkpoint
  # The winner trains on for the minutes left: steps from its median pilot step time (it shared the GPU then).
  steps=$(python3 - "$R/$winner/log.jsonl" "$(left)" <<'EOF'
import json, statistics, sys
steps = [r for r in map(json.loads, open(sys.argv[1])) if r["type"] == "train"]
gaps = [b["elapsed"] - a["elapsed"] for a, b in zip(steps, steps[1:]) if b["elapsed"] > a["elapsed"]]
budget = int(sys.argv[2]) - 150  # its start, two evaluations, the fit and the packing
print(max(0, min(3000, int(budget / statistics.median(gaps))) // 100 * 100) if gaps else 0)
EOF
)
  steps=${MORE_STEPS:-$steps}
  log "continue $winner for $steps steps"
  if [ -n "$chosen" ] && [ "$steps" -gt 0 ] && [ "$steps" -ge "${MIN_MORE:-300}" ]; then
    INIT_FROM=$chosen STEPS=$steps MINUTES=$(($(left) / 60 - 1)) \
      EXTRA="--weights-dtype float16 --evals-per-epoch 2 ${PILOT_EXTRA:-}" bash "$here/run.sh" "$winner" "$R/${winner}-more"
    if [ -f "$R/${winner}-more/checkpoint/density_config.json" ]; then
      python3 "$here/select_arm.py" "$R" --continued "$winner" | tee "$R/continued.md"
      grep -q "^keep: continued" "$R/continued.md" && chosen=$R/${winner}-more/checkpoint
    fi
  fi
fi

if [ -z "$chosen" ] && [ "$winner" != a ] && [ -f "$R/$winner/best/model.safetensors" ]; then
  chosen=$R/$winner/best  # no finished schedule: its best/, weights without a Gaussian (fitted at home: train fit)
fi
if [ -n "$chosen" ]; then  # float16 for the way back (a no-op for the runs' float16 checkpoints)
  python3 -c 'import sys, safetensors.torch as st; p = sys.argv[1]; t = st.load_file(p); st.save_file({k: v.half() if v.is_floating_point() else v for k, v in t.items()}, p, metadata={"format": "pt"})' \
    "$chosen/model.safetensors" || chosen=""
fi
log "pack ($chosen)"
tar czf "$OUT/logs.tar.gz" --exclude='*/state' --exclude='*/best' --exclude='*/checkpoint' "$R"
if [ -n "$chosen" ]; then
  echo "chosen: $chosen"
  (cd "$chosen" && sha256sum model.safetensors) > "$OUT/SHA256SUMS"
  split -b 15000000 -d "$chosen/model.safetensors" "$OUT/model.part-"
  tar czf "$OUT/checkpoint-rest.tar.gz" --exclude=model.safetensors -C "$chosen" .
fi
ls -la "$OUT"
log "done"
