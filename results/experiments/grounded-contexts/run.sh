#!/usr/bin/env bash
# The grounded-contexts pilot of issue 50 (plan and rule: results/experiments/grounded-contexts/PLAN.md): arms
# from the bundled second-round soup (commit b7850c5; arm d from the first release, 12f0fbc) with the link chain's o6
# recipe, equal STEPS, seed 57, one after the other, alone on the CPU; every evaluation logs the ConvAI2 grounding signal (grounding/*); then the pilot table.
# Every arm trains on DailyDialog's clean split (COMMON's 'official' is overridden).
# Rerunning resumes or skips an arm. Usage: STEPS=N bash results/experiments/grounded-contexts/run.sh [ARM ...]
# SUFFIX (default none) is appended to each arm's folder names, for a run of an arm at another STEPS (longer.sh).
set -euo pipefail
here=results/experiments/grounded-contexts
INIT_FROM=$(bash results/checkout_bundle.sh b7850c5)
FIRST_RELEASE=$(bash results/checkout_bundle.sh 12f0fbc)
MINUTES=${MINUTES:-40}
source results/experiments/anchor-and-overlap-rows/recipe.sh  # COMMON: every flag the arms share
grounding="--grounding rate=0.5,used=2,distractors=2 --grounding-exclude ../shared/data"
# Every arm logs the ConvAI2 grounding signal in each evaluation, with that evaluation's Gaussian.
signal="--grounding-valid ../shared/data/convai2/valid_unused_by_benchmarks.txt --grounding-valid-pairs 1200"
# Three corpora; validation on a's DailyDialog pairs (PLAN.md, addendum 2).
mix="--corpus dailydialog:1,self_dialogue:0.5,chitchat:0.5 --self-dialogue ../shared/data/self_dialogue --valid-corpus dailydialog"
declare -A ARM=(
  [a]="--eval-at-start"
  [b]="$grounding"
  [c]="$grounding $mix"
  [d]="$grounding $mix --eval-at-start --init-from $FIRST_RELEASE"
  [e]="$grounding --copy-mix echo:1,speaker:2,grounding:1")
for arm in ${@:-a b c d e}; do
  name=$arm${SUFFIX:-}
  out=runs/pilot-grounded/$name
  mkdir -p "$out" "$here/$name"
  if [ ! -f "$out/checkpoint/density_config.json" ]; then
    # shellcheck disable=SC2086
    python -m train train "${COMMON[@]}" --anchor-weight 1 --overlap-rows 6 --seed 57 --negatives-seed 57 --dailydialog-train clean $signal \
      ${ARM[$arm]} --out "$out" >> "$out/train.out" 2>> "$out/train.err" || { echo "$name failed: see $out/train.err"; exit 1; }
  fi
  cp "$out/log.jsonl" "$here/$name/log.jsonl"
done
python -m benchmarks.pilot_table "$here" --arms a b c d e --title "Grounded contexts (issue 50): the last evaluation of each arm"
