"""Caches the features that explore.py reads (runs/copy-direction/features.npz; 2 minutes alone on the CPU):

    PYTHONPATH=. python results/copy-direction/explore_features.py

with the first release's files in /tmp/release (git show 35dcd63:density_metric/default/<file>).
"""

import numpy as np
from grid import COPY_KINDS, DATA, VALID_KINDS

from density_metric.scoring import DensityScorer
from train.corpora import load_dailydialog, response_pairs_with_dialogues
from train.data import SelectionData
from train.negatives import validation_candidates
from train.run import load_dev_judgments

valid = SelectionData.from_pairs(*response_pairs_with_dialogues(load_dailydialog(DATA, "validation"))).select(
    range(500)
)
train = SelectionData.from_pairs(*response_pairs_with_dialogues(load_dailydialog(DATA, "train")))
train = train.select(np.sort(np.random.default_rng(0).choice(len(train), size=3000, replace=False)))
dev = load_dev_judgments("../shared/data")
valid_negatives = validation_candidates(valid, VALID_KINDS, seed=42)
copies = validation_candidates(train, COPY_KINDS + ["repeat", "span"], seed=0, fallback=False)
out = {}
for name, path in [("release", "/tmp/release"), ("bundled", "density_metric/default")]:
    scorer = DensityScorer(path, device="cpu", dtype="float32", progress=False)
    out[f"{name}/valid/gold"] = scorer.features(valid.contexts, valid.responses)
    for kind in VALID_KINDS:
        out[f"{name}/valid/{kind}"] = scorer.features(valid.contexts, valid_negatives[kind])
    out[f"{name}/dev"] = scorer.features(dev.contexts, dev.responses)
    out[f"{name}/train/gold"] = scorer.features(train.contexts, train.responses)
    for kind, texts in copies.items():
        rows = [i for i, text in enumerate(texts) if text]
        out[f"{name}/train/{kind}"] = scorer.features([train.contexts[i] for i in rows], [texts[i] for i in rows])
    out[f"{name}/mean"], out[f"{name}/precision"] = scorer.stats.mean, scorer.stats.precision
np.savez("runs/copy-direction/features.npz", **out)
