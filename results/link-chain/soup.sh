#!/usr/bin/env bash
# Issue 31: the uniform soup of the anchor pilot's arms o6 and o6s44 (the same recipe from the same start on two data
# orders), judged in the sharper look; if PLAN.md's addendum keeps it, its Gaussian is fitted on all training pairs
# with float16 weights and it is measured on test once. Alone on the CPU:
#   setsid nohup bash results/link-chain/soup.sh > runs/logs/soup.log 2>&1 < /dev/null & disown
set -euo pipefail
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
if ! python -c "import json, sys
row = [r for r in map(json.loads, open(sys.argv[1])) if r.get('type') == 'eval'][-1]
e = (row['auc_density/echo'] + row['auc_density/speaker']) / 2
print(f\"soup: dev {row['zhao_dev_spearman']:.2f}, e {e:.4f}, random {row['auc_density/random']:.4f}\")
sys.exit(not (row['zhao_dev_spearman'] >= 55.44 and e >= 0.8903 and row['auc_density/random'] >= 0.951))" \
  "$here/judged/soup/log.jsonl"; then
  echo "the soup is not kept: nothing fitted or measured on test"; exit 0
fi
echo "== the soup is kept: fit on all training pairs, $(date -u +%H:%M:%S)"
python -m train fit --corpus dailydialog --data-dir ../shared/data/dailydialog --encoder "$out/start" \
  --weights-dtype float16 --name density-minilm-dailydialog --out "$out/candidate"
echo "== test, $(date -u +%H:%M:%S)"
python -m benchmarks.human_correlation --checkpoint "$out/candidate" \
  --untuned-checkpoint benchmarks/untuned-minilm --protocols full paper dev --out "$here/test-soup"
echo "== done, $(date -u +%H:%M:%S)"
