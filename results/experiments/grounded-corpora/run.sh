#!/usr/bin/env bash
# The grounded-corpora pilot of issue 55 (plan and rule: PLAN.md beside this file): arms from the bundled soup
# (density_metric/default, commit b7850c5) with the link chain's o6 recipe (the density term against copies), equal
# STEPS, seed 57, each on DailyDialog's clean split plus, for b-d, the PersonaChat training subset and Topical-Chat
# (train/data/grounded_corpora.py). Every evaluation logs DailyDialog validation (Recall@1, per-kind AUCs), `dev`, the
# ConvAI2 grounding signal and the two corpora's held-out grounding signals, each also under a Gaussian of plain
# DailyDialog golds (plain/...). Usage: STEPS=N MINUTES=M bash results/experiments/grounded-corpora/run.sh ARM [OUT]
# DATA (default ../shared/data) is the shared data folder, INIT_FROM (default density_metric/default) the start, and
# EXTRA more flags (a repeated flag's last value wins), PYTHON the interpreter (default python). Rerunning the same command resumes the arm.
set -euo pipefail
arm=$1 out=${2:-runs/grounded-corpora/$1}
DATA=${DATA:-../shared/data}
INIT_FROM=${INIT_FROM:-density_metric/default}
MINUTES=${MINUTES:-40}
source results/experiments/anchor-and-overlap-rows/recipe.sh  # COMMON: every flag the arms share
corpora="--data-dir $DATA/dailydialog --personachat $DATA/personachat_train_subset --topical-chat $DATA/topical_chat_valid"
signals="--grounding-valid $DATA/convai2/valid_unused_by_benchmarks.txt --grounding-valid-pairs 1200
  --grounded-valid personachat,topical_chat --plain-fit-corpus dailydialog --dev-judgments $DATA"
select="--eval-at-start --evals-per-epoch 2
  --select-on grounding/persona_spearman+grounding_personachat/persona_spearman+grounding_topical_chat/persona_spearman
  --select-floor zhao_dev_spearman=start-1"
declare -A ARM=(
  [a]="--corpus dailydialog"
  [b]="--corpus dailydialog:2,personachat:1,topical_chat:1 --valid-corpus dailydialog"
  [c]="--corpus dailydialog:1,personachat:1,topical_chat:1 --valid-corpus dailydialog"
  [d]="--corpus dailydialog:1,personachat:1,topical_chat:1 --valid-corpus dailydialog --overlap-rows 2"
  [e]="--corpus dailydialog:1,personachat:1,topical_chat:1 --valid-corpus dailydialog --overlap-rows 2 --keep-lines"
  [f]="--corpus dailydialog:1,personachat:1,topical_chat:1 --valid-corpus dailydialog --overlap-rows 2 --keep-lines
    --overlap-source lines")
[ -n "${ARM[$arm]:-}" ] || { echo "unknown arm $arm (a b c d e f)"; exit 2; }
mkdir -p "$out"
# shellcheck disable=SC2086
"${PYTHON:-python}" -m train train "${COMMON[@]}" --anchor-weight 1 --overlap-rows 6 --seed 57 --negatives-seed 57 \
  --dailydialog-train clean $corpora $signals $select ${ARM[$arm]} ${EXTRA:-} --out "$out" \
  >> "$out/train.out" 2>> "$out/train.err" || { echo "$arm failed: see $out/train.err"; tail -5 "$out/train.err"; exit 1; }
