#!/usr/bin/env bash
# Issue 69, addendum of 2026-12-02 (PLAN.md): arms A (control) and B (bland) of the plan on data order 51 only,
# from the bundled model as committed, each run's own evaluation (500 validation pairs, Gaussian of 3,000 training
# golds, DailyDialog-Zhao dev) with the bland validation kind in both arms. No weights are kept: the runs' logs,
# bland lists and evaluations are what is committed. Usage: bash results/experiments/bland-replies/pilot51.sh [A|B ...]
set -euo pipefail
INIT_FROM=density_metric/default MINUTES=${MINUTES:-30}
source results/experiments/anchor-and-overlap-rows/recipe.sh  # COMMON: the shipped fine-tune recipe (STEPS=400)
declare -A ARM=([A]="--copy-mix echo:1,speaker:2" [B]="--copy-mix echo:1,speaker:2,bland:1 --density-copies 5")
arms=("$@")
[ ${#arms[@]} -gt 0 ] || arms=(A B)
mkdir -p runs/bland-69
for arm in "${arms[@]}"; do
  out=runs/bland-69/${arm}51
  # shellcheck disable=SC2086
  python -m train train "${COMMON[@]}" --anchor-weight 1 --overlap-rows 6 --seed 51 --negatives-seed 51 \
    --validation-kinds random,echo,speaker,repeat,earlier,span,bland ${ARM[$arm]} --out "$out" \
    > "$out.out" 2> "$out.err" || { echo "$arm failed: see $out.err"; exit 1; }
done
