#!/usr/bin/env bash
# What a newly bundled checkpoint changes after ship.sh (docs/release.md, step 7), in order, alone on the CPU: the
# pinned scores of the integration test (pin_scores.sh), the README's compare example, the system-level table, the grouping benchmark
# and the app screenshot (app_screenshot.py, in Debian's Chromium). The README and the cards are then edited by hand
# from what this prints and writes. Usage: bash results/ship/after_ship.sh "the checkpoint of RUN"
set -euo pipefail
label=${1:?what the checkpoint is, for the metadata of the pinned scores}
echo "== pinned $(date -u +%H:%M:%S)"
bash results/ship/pin_scores.sh "$label"
echo "== compare $(date -u +%H:%M:%S)"
HF_HUB_OFFLINE=1 python -m density_metric compare examples/attentive.jsonl examples/generic.jsonl
echo "== system level $(date -u +%H:%M:%S)"
python -m benchmarks.system_level --out results/bundled-default/system-level
echo "== grouping $(date -u +%H:%M:%S)"
python -m benchmarks.grouping --contexts 1000 --data-dir ../shared/data --json benchmarks/grouping_cpu.json
echo "== app $(date -u +%H:%M:%S)"
python results/ship/app_screenshot.py docs/app.png
echo "== done $(date -u +%H:%M:%S)"
