"""How much of an in-run `dev` Spearman is the draw of the 3,000 training golds its Gaussian is fitted to?

One model's features (the bundled release, float32): the training pairs of the in-run draws of SEEDS
(``np.random.default_rng(seed).choice(n, 3000, replace=False)``, as ``train/loop/trainer.py`` draws them with ``--seed``)
and POOL more random training pairs; then `dev` (DailyDialog-Zhao's first 20 %, n = 160) Spearman under the
Gaussian of each in-run draw, of 3,000 golds drawn DRAWS times from the union, of the whole union, and the bundled
Gaussian (all 76,053 pairs).
Usage: PYTHONPATH=. python results/experiments/dev-spearman-noise/dev_noise.py [CHECKPOINT]   (default: the bundled release)
"""

import json
import sys

import numpy as np
from density_train.commands.train import load_dev_judgments
from density_train.data.corpora import load_dailydialog, response_pairs

from density_metric import DensityScorer
from density_metric.correlation import spearman
from density_metric.gaussian import GaussianAccumulator, GaussianStats

POOL, DRAWS, FIT, SEEDS = 9000, 30, 3000, range(40, 50)

checkpoint = sys.argv[1] if len(sys.argv) > 1 else "default"
scorer = DensityScorer(checkpoint, device="cpu", dtype="float32")
contexts, responses = response_pairs(load_dailydialog("../shared/data/dailydialog", "train"))
n = len(responses)
in_run = {seed: np.random.default_rng(seed).choice(n, size=FIT, replace=False) for seed in SEEDS}
extra = np.random.default_rng(0).choice(n, size=POOL, replace=False)
rows = np.unique(np.concatenate([*in_run.values(), extra]))
features = scorer.features([contexts[i] for i in rows], [responses[i] for i in rows])
where = {row: k for k, row in enumerate(rows)}
dev = load_dev_judgments("../shared/data")
dev_features = scorer.features(dev.contexts, dev.responses)


def dev_spearman(stats) -> float:
    return 100 * spearman(-stats.distances(dev_features), dev.human)


def fitted(subset) -> GaussianStats:
    accumulator = GaussianAccumulator(features.shape[1])
    accumulator.update(features[subset])
    return GaussianStats.fit(accumulator)


rng = np.random.default_rng(1)
draws = [dev_spearman(fitted(rng.choice(len(rows), size=FIT, replace=False))) for _ in range(DRAWS)]
report = {
    "checkpoint": checkpoint,
    "revision": scorer.checkpoint.revision,
    "dev_rows": len(dev.human),
    "in_run_draws": {str(seed): dev_spearman(fitted([where[r] for r in in_run[seed]])) for seed in SEEDS},
    f"random_draws_of_{FIT}": {
        "n": DRAWS,
        "mean": float(np.mean(draws)),
        "sd": float(np.std(draws, ddof=1)),
        "min": float(np.min(draws)),
        "max": float(np.max(draws)),
    },
    f"all_{len(rows)}_pairs": dev_spearman(fitted(np.arange(len(rows)))),
    "bundled_gaussian_all_76053": 100 * spearman(-scorer.stats.distances(dev_features), dev.human),
}
print(json.dumps(report, indent=2))
