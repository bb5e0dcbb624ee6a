#!/usr/bin/env bash
# Issue 69 (PLAN.md and its addenda): arms A (control), B (bland), C (B's kind at a larger dose), D and An (B and A
# without the anchor), Bh and Ah (B and A at anchor 0.3) of the plan on the data orders in ORDERS
# (default 51 52 53 54), from the bundled model as committed, each run's own evaluation (500 validation pairs,
# Gaussian of 3,000 training golds, DailyDialog-Zhao dev) with the bland validation kind in both arms. No weights are
# kept: each run's log, bland list, report and card are copied to logs/ARM+ORDER beside this file as it ends (order
# 51's first runs are in pilot51/: ORDERS=51 bash run.sh A B). An order not started before DEADLINE (HH:MM UTC, if
# set) is skipped. A run whose logs/ARM+ORDER is committed already has its copy in logs/ARM+ORDER-TAG (TAG must then
# be set, or the order fails before it trains). EXTRA (flags) follows the arm's flags, and a repeated flag's last
# value wins. Alone on the CPU: setsid nohup bash results/experiments/bland-replies/run.sh A > runs/bland-69.log 2>&1 &
set -euo pipefail
INIT_FROM=density_metric/default MINUTES=${MINUTES:-30}
source results/experiments/anchor-and-overlap-rows/recipe.sh  # COMMON: the shipped fine-tune recipe (STEPS=400)
control="--copy-mix echo:1,speaker:2" bland="--copy-mix echo:1,speaker:2,bland:1 --density-copies 5"
declare -A ARM=([A]="$control" [B]="$bland"
  [C]="--copy-mix echo:1,speaker:2,bland:2 --density-copies 6 --negative-mix random:3,bland:1"  # PLAN.md, 2026-12-03
  [D]="$bland --anchor-weight 0" [An]="$control --anchor-weight 0"
  [Bh]="$bland --anchor-weight 0.3" [Ah]="$control --anchor-weight 0.3")
here=results/experiments/bland-replies
arms=("$@")
[ ${#arms[@]} -gt 0 ] || arms=(A B)
mkdir -p runs/bland-69
for arm in "${arms[@]}"; do
  for order in ${ORDERS:-51 52 53 54}; do
    out=runs/bland-69/$arm$order
    if [ -f "$out/checkpoint/density_config.json" ]; then echo "$arm$order: trained already"; continue; fi
    if [ -n "${DEADLINE:-}" ] && [[ $(date -u +%H:%M) > $DEADLINE ]]; then echo "$arm$order not started: past $DEADLINE"; exit 1; fi
    logs=$here/logs/$arm$order
    if [ -e "$logs" ]; then logs=$logs-${TAG:?"logs/$arm$order is committed already: set TAG (its copy goes to logs/$arm$order-TAG)"}; fi
    echo "== $arm$order, $(date -u +%H:%M:%S)"
    # shellcheck disable=SC2086
    python -m train train "${COMMON[@]}" --anchor-weight 1 --overlap-rows 6 --seed "$order" --negatives-seed "$order" \
      --validation-kinds random,echo,speaker,repeat,earlier,span,bland ${ARM[$arm]} ${EXTRA:-} --out "$out" \
      > "$out.out" 2> "$out.err" || { echo "$arm$order failed: see $out.err"; exit 1; }
    mkdir -p "$logs"
    cp "$out/log.jsonl" "$out/bland_list.md" "$logs/"
    cp "$out/checkpoint/README.md" "$logs/card.md"
    cp "$out.out" "$logs/report.json"
  done
done
echo "== done, $(date -u +%H:%M:%S)"
