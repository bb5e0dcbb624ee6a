#!/usr/bin/env bash
# Addendum 3 of PLAN.md (exploratory): arm c's flags for STEPS (default 400) steps, as arm c400, then its plain-Gaussian
# look (regauss.sh). Usage: STEPS=400 bash results/experiments/grounded-contexts/longer.sh
set -euo pipefail
here=results/experiments/grounded-contexts
INIT_FROM=$(bash results/checkout_bundle.sh b7850c5)
STEPS=${STEPS:-400}
MINUTES=${MINUTES:-30}
source results/experiments/anchor-and-overlap-rows/recipe.sh
grounding="--grounding rate=0.5,used=2,distractors=2 --grounding-exclude ../shared/data"
signal="--grounding-valid ../shared/data/convai2/valid_unused_by_benchmarks.txt --grounding-valid-pairs 1200"
mix="--corpus dailydialog:1,self_dialogue:0.5,chitchat:0.5 --self-dialogue ../shared/data/self_dialogue --valid-corpus dailydialog"
name=c$STEPS out=runs/pilot-grounded/c$STEPS
mkdir -p "$out" "$here/$name"
if [ ! -f "$out/checkpoint/density_config.json" ]; then
  # shellcheck disable=SC2086
  python -m train train "${COMMON[@]}" --anchor-weight 1 --overlap-rows 6 --seed 57 --negatives-seed 57 --dailydialog-train clean $signal \
    $grounding $mix --out "$out" >> "$out/train.out" 2>> "$out/train.err" || { echo "$name failed: see $out/train.err"; exit 1; }
fi
cp "$out/log.jsonl" "$here/$name/log.jsonl"
bash "$here/regauss.sh" "$name"
