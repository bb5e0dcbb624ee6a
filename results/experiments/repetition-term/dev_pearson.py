"""After the w = 6 test look failed on DailyDialog-Zhao Pearson: `dev` Pearson and Spearman of the plain density and of
s_w (w = 6) on the confirmation's seed-44 draws (cached features), and how far the term pushes the `dev` rows that
repeat themselves. Validation only. Usage: PYTHONPATH=. python results/experiments/repetition-term/dev_pearson.py"""

import importlib

import numpy as np
from scipy.stats import pearsonr, spearmanr

from density_metric.repetition import RepetitionTerm

# the folders are named with hyphens, which an import statement cannot spell
_repetition_look = importlib.import_module("results.experiments.repetition-term.look")
OUT, gaussian_of, measured = _repetition_look.OUT, _repetition_look.gaussian_of, _repetition_look.measured

features, stats, human = measured("density_metric/default", 44, OUT / "shipped-features-s44.npz")
gaussian = gaussian_of(features["fit"])
term = RepetitionTerm.fit(stats["fit"][:, 1], 6.0)  # uncapped, as the failed candidate
d = gaussian.distances(features["dev"])
z = np.maximum((stats["dev"][:, 1] - term.mean) / term.sd, 0)
print(f"dev rows with z > 0: {(z > 0).sum()} of {len(z)}; largest w z at w = 6: {6 * z.max():.1f}")
print(f"dev distances d: median {np.median(d):.1f}, largest {d.max():.1f}")
for w, s in ((0, -d), (6, -term.distances(d, stats["dev"][:, 1]))):
    print(f"w = {w}: dev Pearson {100 * pearsonr(s, human)[0]:.2f}, Spearman {100 * spearmanr(s, human)[0]:.2f}")
