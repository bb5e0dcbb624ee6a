#!/usr/bin/env bash
# The WiSE-FT pilot of issue 31 (plan, selection and ship rule: results/pilots/wise/PLAN.md): weight-space averages
# of the bundled release and the last-turn chain's kept model, each judged by a training run's own evaluation at
# step 0 (one step is then taken and the run stops; that step is never used). Alone on the CPU; rerunning skips an
# arm already judged. Usage: bash results/pilots/wise_pilot.sh [W ...]   (default: 000 025 050 075 100)
set -euo pipefail
END=${END:-runs/last-turn-chain/checkpoint}
COMMON=(--corpus dailydialog --data-dir ../shared/data/dailydialog
  --epochs 1 --max-steps-per-epoch 100 --batch-size 8 --seed 42 --negatives-seed 42
  --valid-limit 500 --valid-negatives 15 --validation-kinds random,echo,speaker,repeat,earlier,span
  --valid-fit-pairs 20000 --dev-judgments ../shared/data --eval-at-start --evals-per-epoch 1
  --select-on auc_density/echo+auc_density/speaker+auc_density/repeat
  --mixed-precision no --negatives 4 --contrastive-weight 0 --no-dropout --density-weight 0 --anchor-weight 0
  --max-minutes 0.001)
for w in ${@:-000 025 050 075 100}; do
  out=runs/wise/$w
  mkdir -p "$out" "results/pilots/wise/$w"
  if [ ! -s "results/pilots/wise/$w/log.jsonl" ]; then
    rm -rf "$out/eval"
    python -m train interpolate density_metric/default "$END" --weight "$((10#$w))e-2" --out "$out/start"
    python -m train train "${COMMON[@]}" --init-from "$out/start" --out "$out/eval" \
      >> "$out/train.out" 2>> "$out/train.err" || { echo "$w failed: see $out/train.err"; exit 1; }
    cp "$out/eval/log.jsonl" "results/pilots/wise/$w/log.jsonl"
  fi
done
python -m benchmarks.pilot_table results/pilots/wise --arms ${@:-000 025 050 075 100} \
  --title "WiSE-FT pilot (issue 31): theta(w) = (1 - w) bundled + w last-turn chain, at step 0"
