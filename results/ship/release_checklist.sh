#!/usr/bin/env bash
# Every place in the working tree (tracked files and untracked ones git does not ignore) that quotes a bundled
# model's signature or headline numbers, so that shipping a new default misses none (docs/release.md, step 6).
# The model is the one whose meta-evaluation COMMIT holds in results/bundled-default/human_correlation.json (default:
# the working tree's, i.e. the model bundled now). Run it with the old model's commit after a new one is bundled:
# every line under "edit by hand" still quotes the old model.
# Usage: bash results/ship/release_checklist.sh [COMMIT]
set -euo pipefail
report=results/bundled-default/human_correlation.json
if [ -n "${1:-}" ]; then
  json=$(git show "$1:$report") || { echo "error: $1 has no $report" >&2; exit 2; }
else
  json=$(cat "$report")
fi
# As extended regular expressions: the signature's hex; the paper-protocol pairs "Pearson / Spearman" (x100, with two
# decimals or one) of DailyDialog-Zhao, ConvAI2-USR and FED turn level; the shares of the echo and previous turn + gold
# probes ("96.0 %"). The other numbers of a table or sentence sit beside these.
pattern=$(python - "$json" <<'PY'
import json
import sys

report = json.loads(sys.argv[1])
sets = report["sets"]
pairs = [sets[name]["paper"]["DEnsity"] for name in ("dailydialog_zhao", "convai2_usr", "fed_turn")]
parts = [report["revision"].removeprefix("sha256:")]
parts += [f"{p['pearson']:.{d}f} ?/ ?{p['spearman']:.{d}f}" for p in pairs for d in (2, 1)]
probes = report["probes"]["accuracy"]
parts += [f"{100 * probes[kind]['DEnsity']:.1f} ?%" for kind in ("echo", "speaker_confused")]
parts = [part.replace(".", r"\.") for part in parts]
print("|".join(parts))
PY
)
echo "== the model: $(python -c 'import json, sys; print(json.loads(sys.argv[1])["signature"])' "$json")"
echo "== looking for: $pattern"
# History that stays as written, and files that results/ship/ship.sh and after_ship.sh write again for a new model.
history='^(CHANGELOG\.md|results/experiments/|results/releases/)'
rewritten='^(results/bundled-default/(human_correlation|few-shot/few_shot|system-level/)|benchmarks/.*\.json$|benchmarks/baselines/weights/|tests/data/bundled_release_scores\.safetensors$)'
files=$(git grep -l --untracked -E "$pattern" -- . ':!results/ship/release_checklist.sh' || true)
echo "== edit by hand (file:line):"
for file in $(grep -v -E "$history|$rewritten" <<< "$files" || true); do
  grep -n -I -E "$pattern" "$file" | cut -c1-200 | sed "s|^|$file:|"
done
echo "== written again by results/ship/ship.sh and after_ship.sh (check that each was):"
grep -E "$rewritten" <<< "$files" | sed 's/^/  /' || true
echo "== history, left as written: $(grep -c -E "$history" <<< "$files" || true) files"
