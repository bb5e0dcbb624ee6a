#!/usr/bin/env bash
# Issue 31: the uniform soup of the anchor pilot's arms o6 and o6s44 (the same recipe from the same start on two data
# orders), judged in the sharper look; if PLAN.md's addendum keeps it, its Gaussian is fitted on all training pairs
# with float16 weights and it is measured on test once. Alone on the CPU:
#   setsid nohup bash results/link-chain/soup.sh > runs/logs/soup.log 2>&1 < /dev/null & disown
set -euo pipefail
source results/link-chain/common.sh  # judged, fit_and_test
here=results/link-chain
out=runs/link-chain/soup
bash results/pilots/anchor_pilot.sh o6 o6s44 > /dev/null
mkdir -p "$out" "$here/judged/soup"
if [ ! -s "$here/judged/soup/log.jsonl" ]; then
  python -m train interpolate runs/pilot-anchor/o6/checkpoint runs/pilot-anchor/o6s44/checkpoint --weight 0.5 \
    --out "$out/start"
  SEED=43 bash results/pilots/judge_at_start.sh "$out/start" "$out"
  cp "$out/eval/log.jsonl" "$here/judged/soup/log.jsonl"
fi
python -m benchmarks.pilot_table "$here/judged" --arms start $(cd "$here/judged" && ls -d link*) soup \
  --title "Link chain (issue 31): each link judged with a Gaussian of 20,000 training golds (seeds 43)"
read -r dev e random < <(judged "$here/judged/soup/log.jsonl")
echo "soup: dev $dev, e $e, random $random"
if ! python -c "import sys; d, e, r = map(float, sys.argv[1:]); sys.exit(not (d >= 55.44 and e >= 0.8903 and r >= 0.951))" \
  "$dev" "$e" "$random"; then
  echo "the soup is not kept: nothing fitted or measured on test"; exit 0
fi
echo "== the soup is kept: fit on all training pairs, $(date -u +%H:%M:%S)"
fit_and_test "$out/start" "$out/candidate" "$here/test-soup"
