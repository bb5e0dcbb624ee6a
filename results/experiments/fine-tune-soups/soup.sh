#!/usr/bin/env bash
# Issue 31: a uniform soup of anchor-pilot arms (the same recipe from the same start on several data orders), judged
# in the sharper look; if PLAN.md's addenda keep it, its Gaussian is fitted on all training pairs with float16 weights
# and it is measured on test once. The soup is a running mean: the k-th arm enters with weight 1/k. Alone on the CPU:
#   setsid nohup bash results/experiments/fine-tune-soups/soup.sh NAME ARM ARM [ARM ...] > runs/logs/NAME.log 2>&1 < /dev/null & disown
# (soup: o6 o6s44; soup4: o6 o6s44 o6s45 o6s46). KEEP="DEV E RANDOM" sets the keep rule's three floors (default the
# first soup's: 55.44 0.8903 0.951); JUDGE_ONLY=1 stops after the sharper look (soup-r2: r2s47 r2s48;
# soup-r2x4, the second round: KEEP="55.81 0.9110 0.951", r2s47 r2s48 r2s49 r2s50; the third round,
# KEEP="55.47 0.9188 0.951", two orders on a slower CPU: soup-r3x2 r3s51 r3s52; completed with four, the same KEEP:
# soup-r3x4 r3s51 r3s52 r3s53 r3s54; fifteen random negatives, n15.sh: soup-n15 n15s55 n15s56).
set -euo pipefail
source results/experiments/fine-tune-soups/common.sh  # judged, running_mean, fit_and_test
name=${1:?usage: soup.sh NAME ARM ARM [ARM ...]}
shift
[ $# -ge 2 ] || { echo "a soup needs at least two arms"; exit 1; }
here=results/experiments/fine-tune-soups
out=runs/link-chain/$name
bash results/experiments/anchor-and-overlap-rows/run.sh "$@" > /dev/null
mkdir -p "$out" "$here/judged/$name"
if [ ! -s "$here/judged/$name/log.jsonl" ]; then
  running_mean "$out" $(printf "runs/pilot-anchor/%s/checkpoint " "$@")
  SEED=43 bash results/experiments/judge_at_start.sh "$out/start" "$out"
  cp "$out/eval/log.jsonl" "$here/judged/$name/log.jsonl"
fi
python -m benchmarks.pilot_table "$here/judged" --arms start $(cd "$here/judged" && ls -d link* soup*) \
  --title "Link chain (issue 31): each link judged with a Gaussian of 20,000 training golds (seeds 43)"
read -r dev e random < <(judged "$here/judged/$name/log.jsonl")
echo "$name: dev $dev, e $e, random $random"
if [ -n "${JUDGE_ONLY:-}" ]; then echo "judged only: nothing fitted or measured on test"; exit 0; fi
read -r min_dev min_e min_random <<< "${KEEP:-55.44 0.8903 0.951}"
if ! python -c "import sys; d, e, r, a, b, c = map(float, sys.argv[1:]); sys.exit(not (d >= a and e >= b and r >= c))" \
  "$dev" "$e" "$random" "$min_dev" "$min_e" "$min_random"; then
  echo "$name is not kept: nothing fitted or measured on test"; exit 0
fi
echo "== $name is kept: fit on all training pairs, $(date -u +%H:%M:%S)"
fit_and_test "$out/start" "$out/candidate" "$here/test-$name"
