# The anchor pilot's recipe: the flags every arm shares (sourced by run.sh and
# ../fine-tune-soups/run.sh). STEPS (default 400) sets the schedule, INIT_FROM the start (default the last-turn-copies
# release, which commit 3b29ef3 bundled and every arm started from, read out of git into runs/bundles/3b29ef3),
# MINUTES (default 20) the time limit; an arm's own flags follow COMMON, and a repeated flag's last value wins.
# shellcheck shell=bash disable=SC2034
STEPS=${STEPS:-400}
INIT_FROM=${INIT_FROM:-$(bash results/checkout_bundle.sh 3b29ef3)}
COMMON=(--corpus dailydialog --data-dir ../shared/data/dailydialog --dailydialog-train official --init-from "$INIT_FROM"
  --epochs 1 --max-steps-per-epoch "$STEPS" --warmup-steps 30 --lr 2e-5 --batch-size 8 --resample-negatives
  --seed 43 --negatives-seed 43
  --valid-limit 500 --valid-negatives 15 --validation-kinds random,echo,speaker,repeat,earlier,span
  --valid-fit-pairs 3000 --dev-judgments ../shared/data --select-on zhao_dev_spearman --evals-per-epoch 1
  --mixed-precision no --save-every 50 --fit-pairs 2000 --max-minutes "${MINUTES:-20}"
  --negatives 4 --contrastive-weight 0 --no-dropout --density-weight 1 --density-margin 3
  --bank-size 2048 --bank-shrinkage 0.1 --density-copies 4 --copy-mix echo:1,speaker:2)
