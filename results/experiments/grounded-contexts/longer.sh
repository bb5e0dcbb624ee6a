#!/usr/bin/env bash
# Addendum 3 of PLAN.md (exploratory): arm c of run.sh for STEPS (default 400) steps, as arm c$STEPS, then its
# plain-Gaussian look (regauss.sh). Usage: STEPS=400 bash results/experiments/grounded-contexts/longer.sh
set -euo pipefail
here=results/experiments/grounded-contexts
export STEPS=${STEPS:-400}
MINUTES=${MINUTES:-30} SUFFIX=$STEPS bash "$here/run.sh" c
bash "$here/regauss.sh" "c$STEPS"
