#!/usr/bin/env bash
# The anchor pilot of issue 31 (plan and reading rule: results/experiments/anchor-and-overlap-rows/PLAN.md): three arms fine-tuned from
# the bundled last-turn-copies release at equal steps, one after the other, alone on the CPU, with the last-turn
# chain's recipe, seeds and data order; only the anchor differs (c: weight 1, the chain's; a3: 3; a10: 10; n, added
# later: weight 1 holding the random negatives too, --anchor-negatives; o, added later: weight 1 with 4 of each
# batch's 8 contexts drawn from golds that reuse the last turn's words, --overlap-rows 4; o3: o with weight 3;
# o6 and o6a2: 6 of the 8 contexts from such golds, anchor weight 1 and 2; o6s44, o6s45, o6s46: o6 on other data
# orders; o7: 7; r2s47-r2s50: o6 from the shipped four-order soup, commit bf039cc, on data orders 47-50; r3s51-r3s54:
# o6 from the shipped second-round soup, commit b7850c5, on data orders 51-54; n15s55, n15s56: r3's start
# with the paper's 15 random negatives a context, data orders 55 and 56).
# Rerunning resumes or skips an arm. Usage: bash results/experiments/anchor-and-overlap-rows/run.sh [ARM ...]   (default: c a3 a10)
set -euo pipefail
source results/experiments/anchor-and-overlap-rows/recipe.sh  # COMMON: every flag the arms share
r2start=$(bash results/checkout_bundle.sh bf039cc)  # the shipped four-order soup: the r2 arms' start
r3start=$(bash results/checkout_bundle.sh b7850c5)  # the shipped second-round soup: the r3 arms' start
declare -A ARM=([c]="--anchor-weight 1" [a3]="--anchor-weight 3" [a10]="--anchor-weight 10"
  [n]="--anchor-weight 1 --anchor-negatives" [o]="--anchor-weight 1 --overlap-rows 4"
  [o3]="--anchor-weight 3 --overlap-rows 4" [o6]="--anchor-weight 1 --overlap-rows 6"
  [o6a2]="--anchor-weight 2 --overlap-rows 6" [o6s44]="--anchor-weight 1 --overlap-rows 6 --seed 44 --negatives-seed 44" [o7]="--anchor-weight 1 --overlap-rows 7"
  [o6s45]="--anchor-weight 1 --overlap-rows 6 --seed 45 --negatives-seed 45"
  [o6s46]="--anchor-weight 1 --overlap-rows 6 --seed 46 --negatives-seed 46"
  [r2s47]="--init-from $r2start --anchor-weight 1 --overlap-rows 6 --seed 47 --negatives-seed 47"
  [r2s48]="--init-from $r2start --anchor-weight 1 --overlap-rows 6 --seed 48 --negatives-seed 48"
  [r2s49]="--init-from $r2start --anchor-weight 1 --overlap-rows 6 --seed 49 --negatives-seed 49"
  [r2s50]="--init-from $r2start --anchor-weight 1 --overlap-rows 6 --seed 50 --negatives-seed 50"
  [r3s51]="--init-from $r3start --anchor-weight 1 --overlap-rows 6 --seed 51 --negatives-seed 51"
  [r3s52]="--init-from $r3start --anchor-weight 1 --overlap-rows 6 --seed 52 --negatives-seed 52"
  [r3s53]="--init-from $r3start --anchor-weight 1 --overlap-rows 6 --seed 53 --negatives-seed 53"
  [r3s54]="--init-from $r3start --anchor-weight 1 --overlap-rows 6 --seed 54 --negatives-seed 54"
  [n15s55]="--init-from $r3start --anchor-weight 1 --overlap-rows 6 --negatives 15 --seed 55 --negatives-seed 55"
  [n15s56]="--init-from $r3start --anchor-weight 1 --overlap-rows 6 --negatives 15 --seed 56 --negatives-seed 56")
for name in ${@:-c a3 a10}; do
  out=runs/pilot-anchor/$name
  mkdir -p "$out" "results/experiments/anchor-and-overlap-rows/$name"
  if [ ! -f "$out/checkpoint/density_config.json" ]; then
    # shellcheck disable=SC2086
    python -m train train "${COMMON[@]}" ${ARM[$name]} --out "$out" \
      >> "$out/train.out" 2>> "$out/train.err" || { echo "$name failed: see $out/train.err"; exit 1; }
  fi
  cp "$out/log.jsonl" "results/experiments/anchor-and-overlap-rows/$name/log.jsonl"
done
python -m benchmarks.pilot_table results/experiments/anchor-and-overlap-rows --arms c a3 a10 n o o3 o6 o6a2 o6s44 o6s45 o6s46 o7 r2s47 r2s48 r2s49 r2s50 r3s51 r3s52 r3s53 r3s54 n15s55 n15s56 \
  --title "Anchor pilot (issue 31): the evaluation at step 400 of each arm"
