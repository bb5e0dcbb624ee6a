#!/usr/bin/env bash
# Remake tests/data/bundled_release_scores.safetensors for a newly bundled release: the code of commit 35dcd63 (before
# the hardening round of issue 30) scores the same 1,000 DailyDialog test pairs with the checkpoint now in
# density_metric/default, in float32 on the CPU, so test_integration.py's
# test_the_bundled_release_scores_as_before_the_hardening_round goes on checking that later code scores as that code
# did. Usage, after the copy into density_metric/default: bash results/ship/pin_scores.sh "the checkpoint of RUN"
set -euo pipefail
label=${1:?what the checkpoint is, for the metadata of the file}
old=$(mktemp -d)
trap 'git worktree remove --force "$old"' EXIT
git worktree add --detach -f "$old" 35dcd63 > /dev/null
cp density_metric/default/* "$old/density_metric/default/"
revision=$(python -c "from density_metric import load_checkpoint; print(load_checkpoint('density_metric/default').revision)")
here=$PWD
cd "$old"
PYTHONPATH=$old python - "$here" "$label ($revision)" <<'PY'
import random
import sys
from pathlib import Path

import density_metric
import numpy as np
from safetensors.numpy import save_file

from density_train.data.corpora import load_dailydialog, response_pairs

here, label = Path(sys.argv[1]), sys.argv[2]
assert Path(density_metric.__file__).is_relative_to(Path.cwd()), density_metric.__file__  # the old code, not main's
contexts, responses = response_pairs(load_dailydialog(here.parent / "shared/data/dailydialog", "test"))
rows = np.array(random.Random(0).sample(range(len(responses)), 1000))
scores = density_metric.DensityScorer(device="cpu", dtype="float32").score(
    [contexts[i] for i in rows], [responses[i] for i in rows]
).scores
source = (
    "DensityScorer(device='cpu', dtype='float32').score at commit 35dcd63 (before issue 30) with "
    f"{label}, DailyDialog test pairs of density_train.data.corpora.response_pairs, rows = random.Random(0).sample(range(n), 1000)"
)
out = here / "tests/data/bundled_release_scores.safetensors"
save_file({"rows": rows, "scores": np.asarray(scores, dtype=np.float64)}, str(out), metadata={"source": source})
print("wrote", out, scores[:3])
PY
cd "$here"
