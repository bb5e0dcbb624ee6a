"""Caches the features that explore.py reads (runs/copy-direction/features.npz; 2 minutes alone on the CPU):

    PYTHONPATH=. python results/experiments/gaussian-copy-direction/explore_features.py

with the first release's files in /tmp/release (git show 35dcd63:density_metric/default/<file>) and the parrot
release's, the bundled default when this ran, in /tmp/parrot-release (git show 6cf7ce3:density_metric/default/<file>).
"""

import numpy as np
from density_train.commands.train import load_dev_judgments
from density_train.negatives.mix import validation_candidates
from grid import COPY_KINDS, VALID_KINDS, training_sample, validation_pairs

from density_metric.scoring import DensityScorer

valid, train = validation_pairs(), training_sample()
dev = load_dev_judgments("../shared/data")
valid_negatives = validation_candidates(valid, VALID_KINDS, seed=42)
copies = validation_candidates(train, COPY_KINDS + ["repeat", "span"], seed=0, fallback=False)
out = {}
for name, path in [("release", "/tmp/release"), ("bundled", "/tmp/parrot-release")]:
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
