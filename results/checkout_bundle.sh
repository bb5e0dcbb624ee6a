#!/usr/bin/env bash
# The bundled model as one commit holds it (density_metric/default, float16 weights as committed), read out of git
# into OUT, so that a chained run starts from committed weights and a fresh clone reproduces it. Files already in
# OUT are kept. Shared by the chained runs (last-turn-copies, last-turn-chain, overlap-chain) and by the pilots and
# runs that started from a model bundled then. Prints OUT, so that start=$(bash results/checkout_bundle.sh COMMIT).
# Usage: bash results/checkout_bundle.sh COMMIT [OUT]   (OUT defaults to runs/bundles/COMMIT)
set -euo pipefail
commit=$1 out=${2:-runs/bundles/$1}
mkdir -p "$out"
for file in README.md config.json density_config.json density_gaussian.safetensors density_head.safetensors \
  model.safetensors tokenizer.json tokenizer_config.json; do
  [ -f "$out/$file" ] || git show "$commit:density_metric/default/$file" > "$out/$file"
done
echo "$out"
