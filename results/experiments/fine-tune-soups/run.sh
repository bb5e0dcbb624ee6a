#!/usr/bin/env bash
# Issue 31, the overlap recipe in 400-step links (plan, link rule and ship rule: PLAN.md beside this file). Link 1 is
# the anchor pilot's arm o6 (trained here if runs/ lost it); links 2-4 train o6's flags from the link before on new
# data orders, each judged in the pilot's sharper look; the first link that fails the rule ends the chain. Then the
# last kept link's Gaussian is fitted on all training pairs with float16 weights and measured on test once. Alone on
# the CPU:  setsid nohup bash results/experiments/fine-tune-soups/run.sh > runs/logs/link-chain.log 2>&1 < /dev/null & disown
set -euo pipefail
source results/experiments/fine-tune-soups/common.sh  # judged, fit_and_test
here=results/experiments/fine-tune-soups
out=runs/link-chain
deadline=${DEADLINE:-09:00}
mkdir -p "$out"
bash results/experiments/anchor-and-overlap-rows/run.sh o6 > /dev/null
prev=runs/pilot-anchor/o6/checkpoint
mkdir -p "$here/judged/start" "$here/judged/link1"
cp results/experiments/anchor-and-overlap-rows/reeval/start-again/log.jsonl "$here/judged/start/log.jsonl"
cp results/experiments/anchor-and-overlap-rows/reeval/o6/log.jsonl "$here/judged/link1/log.jsonl"
read -r _ prev_e _ < <(judged "$here/judged/link1/log.jsonl")
kept=1
for k in 2 3 4; do
  if [[ $(date -u +%H:%M) > $deadline ]]; then echo "link $k not started: past $deadline"; break; fi
  seed=$((42 + k)) link=$out/link$k
  mkdir -p "$link" "$here/link$k" "$here/judged/link$k"
  echo "== link $k from $prev, seed $seed, $(date -u +%H:%M:%S)"
  if [ ! -f "$link/checkpoint/density_config.json" ]; then
    INIT_FROM=$prev STEPS=400 MINUTES=30
    source results/experiments/anchor-and-overlap-rows/recipe.sh
    python -m train train "${COMMON[@]}" --anchor-weight 1 --overlap-rows 6 --seed "$seed" --negatives-seed "$seed" \
      --out "$link" >> "$link/train.out" 2>> "$link/train.err"
  fi
  cp "$link/log.jsonl" "$here/link$k/log.jsonl"
  if [ ! -s "$here/judged/link$k/log.jsonl" ]; then
    SEED=43 bash results/experiments/judge_at_start.sh "$link/checkpoint" "$out/judge$k"
    cp "$out/judge$k/eval/log.jsonl" "$here/judged/link$k/log.jsonl"
  fi
  read -r dev e random < <(judged "$here/judged/link$k/log.jsonl")
  echo "link $k: dev $dev, e $e (link $((k - 1)): $prev_e), random $random"
  if python -c "import sys; d, e, p, r = map(float, sys.argv[1:]); sys.exit(not (d >= 55.44 and e >= p + 0.01 and r >= 0.951))" \
    "$dev" "$e" "$prev_e" "$random"; then
    kept=$k prev=$link/checkpoint prev_e=$e
  else
    echo "link $k fails the rule: the chain ends"; break
  fi
done
python -m benchmarks.pilot_table "$here/judged" --arms start $(cd "$here/judged" && ls -d link*) \
  --title "Link chain (issue 31): each link judged with a Gaussian of 20,000 training golds (seeds 43)"
echo "== candidate: link $kept ($prev), fit on all training pairs, $(date -u +%H:%M:%S)"
echo "$kept" > "$here/kept"
fit_and_test "$prev" "$out/candidate" "$here/test"
