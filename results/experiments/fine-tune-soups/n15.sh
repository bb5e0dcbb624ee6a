#!/usr/bin/env bash
# Issue 31, PLAN.md's addendum of 2026-11-26 21:51: the recipe with 15 random negatives a context (arms n15s55 and
# n15s56), their soup judged on the seed-43 and seed-42 draws, and, if the keep rule holds before 23:40 UTC, the fit
# on all training pairs and one test measurement. Alone on the CPU:
#   setsid nohup bash results/experiments/fine-tune-soups/n15.sh > runs/logs/soup-n15.log 2>&1 < /dev/null & disown
set -euo pipefail
source results/experiments/fine-tune-soups/common.sh  # last_eval, judged, fit_and_test
here=results/experiments/fine-tune-soups out=runs/link-chain/soup-n15
MINUTES=40 JUDGE_ONLY=1 bash "$here/soup.sh" soup-n15 n15s55 n15s56
if [ ! -s "$here/seed42-soup-n15/log.jsonl" ]; then
  SEED=42 bash results/experiments/judge_at_start.sh "$out/start" runs/judge-soup-n15-s42
  mkdir -p "$here/seed42-soup-n15"
  cp runs/judge-soup-n15-s42/eval/log.jsonl "$here/seed42-soup-n15/log.jsonl"
fi
read -r dev e random < <(judged "$here/judged/soup-n15/log.jsonl")
r43=$(last_eval "$here/judged/soup-n15/log.jsonl" "row['recall_at_1']")
r42=$(last_eval "$here/seed42-soup-n15/log.jsonl" "row['recall_at_1']")
echo "soup-n15: dev $dev, e $e, random $random, Recall@1 $r43 (seed 43), $r42 (seed 42)"
if ! python -c "import sys; d, e, r, r1 = map(float, sys.argv[1:]); sys.exit(not (d >= 55.47 and e >= 0.9188 and r >= 0.951 and r1 >= 0.786))" \
  "$dev" "$e" "$random" "$r43"; then
  echo "soup-n15 is not kept: nothing fitted or measured on test"; exit 0
fi
if [ "$(date -u +%H%M)" -ge 2340 ] && [ -z "${NEXT_SESSION:-}" ]; then
  echo "soup-n15 is kept, but it is past 23:40 UTC: the fit and the test are the next session's (NEXT_SESSION=1)"; exit 0
fi
echo "== soup-n15 is kept: fit on all training pairs, $(date -u +%H:%M:%S)"
fit_and_test "$out/start" "$out/candidate" "$here/test-soup-n15"
