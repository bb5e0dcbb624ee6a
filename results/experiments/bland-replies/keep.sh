#!/usr/bin/env bash
# Issue 69's keep rule (PLAN.md, fixed before the runs) on the sharper looks of the two arms' averages
# (judged/A-average and judged/B-average, written by average.sh): one line a condition, and exit status 0 only if B's
# average is kept. Usage: bash results/experiments/bland-replies/keep.sh
set -euo pipefail
source results/experiments/fine-tune-soups/common.sh  # last_eval
judged=results/experiments/bland-replies/judged
values="row['auc_density/bland'], row['zhao_dev_spearman'], (row['auc_density/echo'] + row['auc_density/speaker']) / 2, row['auc_density/random']"
read -r bland_a dev_a e_a random_a < <(last_eval "$judged/A-average/log.jsonl" "$values")
read -r bland_b dev_b e_b random_b < <(last_eval "$judged/B-average/log.jsonl" "$values")
python - "$bland_a" "$dev_a" "$e_a" "$random_a" "$bland_b" "$dev_b" "$e_b" "$random_b" <<'PY'
import sys

bland_a, dev_a, e_a, random_a, bland_b, dev_b, e_b, random_b = map(float, sys.argv[1:])
rules = [
    (f"1. auc_density/bland: B {bland_b:.4f} >= A {bland_a:.4f} + 0.05", bland_b >= bland_a + 0.05),
    (f"2. dev Spearman: B {dev_b:.2f} >= A {dev_a:.2f} - 0.5 and >= 55.47", dev_b >= dev_a - 0.5 and dev_b >= 55.47),
    (f"3. e: B {e_b:.4f} >= A {e_a:.4f} - 0.005; random: B {random_b:.4f} >= 0.951", e_b >= e_a - 0.005 and random_b >= 0.951),
]
for line, holds in rules:
    print(("holds: " if holds else "fails: ") + line)
kept = all(holds for _, holds in rules)
print("B's average is kept" if kept else "B's average is not kept: nothing fitted on all golds nor measured on test")
sys.exit(0 if kept else 1)
PY
