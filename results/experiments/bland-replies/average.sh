#!/usr/bin/env bash
# Issue 69's keep rule (PLAN.md): the uniform average of an arm's fine-tunes on the data orders in ORDERS (default
# 51 52 53 54; trained by run.sh into runs/bland-69), a running mean (the k-th order enters with weight 1/k), then
# the sharper look: SEED=43 judge_at_start.sh with the bland validation kind added. Its log goes to
# judged/ARM-average/log.jsonl beside this file; the averaged weights stay in runs/bland-69/ARM-average (never
# committed). Usage: bash results/experiments/bland-replies/average.sh ARM
set -euo pipefail
source results/experiments/fine-tune-soups/common.sh  # running_mean
arm=${1:?usage: average.sh ARM}
here=results/experiments/bland-replies out=runs/bland-69/$arm-average
read -r -a orders <<< "${ORDERS:-51 52 53 54}"
running_mean "$out" $(printf "runs/bland-69/$arm%s/checkpoint " "${orders[@]}")
echo "== $arm-average judged, $(date -u +%H:%M:%S)"
SEED=43 KINDS=random,echo,speaker,repeat,earlier,span,bland bash results/experiments/judge_at_start.sh "$out/start" "$out"
mkdir -p "$here/judged/$arm-average"
cp "$out/eval/log.jsonl" "$here/judged/$arm-average/log.jsonl"
echo "== done, $(date -u +%H:%M:%S)"
