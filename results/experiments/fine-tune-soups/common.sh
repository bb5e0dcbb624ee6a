# Shared by run.sh, soup.sh and n15.sh (sourced): reading a sharper look's log, and the fit and single test
# measurement of a kept candidate.
# shellcheck shell=bash

# last_eval LOG VALUES: VALUES (Python expressions over `row`, comma-separated) of the last evaluation in LOG, on
# one line
last_eval() {
  python -c "import json, sys
row = [r for r in map(json.loads, open(sys.argv[1])) if r.get('type') == 'eval'][-1]
print($2)" "$1"
}

# judged LOG: the last evaluation's `dev` Spearman, e (mean density AUC over echo and speaker) and density AUC
# against random, on one line
judged() {
  last_eval "$1" "row['zhao_dev_spearman'], (row['auc_density/echo'] + row['auc_density/speaker']) / 2, row['auc_density/random']"
}

# fit_and_test ENCODER OUT TEST: the Gaussian on all training pairs with float16 weights into OUT, then the
# meta-evaluation of OUT into TEST, once
fit_and_test() {
  python -m train fit --corpus dailydialog --data-dir ../shared/data/dailydialog --dailydialog-train official --encoder "$1" \
    --weights-dtype float16 --name density-minilm-dailydialog --out "$2"
  echo "== test, $(date -u +%H:%M:%S)"
  python -m benchmarks.human_correlation --checkpoint "$2" \
    --untuned-checkpoint benchmarks/untuned-minilm --protocols full paper dev --out "$3"
  echo "== done, $(date -u +%H:%M:%S)"
}

# running_mean OUT CHECKPOINT CHECKPOINT [...]: the uniform average of the checkpoints into OUT/start (an encoder
# folder, no Gaussian: judge or fit it next), as a running mean: the k-th enters with weight 1/k
# (`python -m train interpolate`); OUT's intermediate means are removed
running_mean() {
  local out=$1 mean=$2 k=1 checkpoint
  shift 2
  mkdir -p "$out"
  for checkpoint in "$@"; do
    k=$((k + 1))
    rm -rf "$out/mean$k"
    python -m train interpolate "$mean" "$checkpoint" --weight "$(python -c "print(1 / $k)")" --out "$out/mean$k"
    mean=$out/mean$k
  done
  rm -rf "$out/start"
  mv "$mean" "$out/start"
  rm -rf "$out"/mean*
}
