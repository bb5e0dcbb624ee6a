"""How far out the look's statistics put a repeat, beside the spread of the control's distances (after look.py, whose
features it reads from runs/repetition-look/features.npz). Usage, from the repository root:
PYTHONPATH=. python results/experiments/repetition-term/spread.py runs/bundles/bf039cc"""

import importlib
import sys

import numpy as np

# the folders are named with hyphens, which an import statement cannot spell
_repetition_look = importlib.import_module("results.experiments.repetition-term.look")
OUT, SEED, gaussian_of, measured = (
    _repetition_look.OUT,
    _repetition_look.SEED,
    _repetition_look.gaussian_of,
    _repetition_look.measured,
)

features, stats, _ = measured(sys.argv[1], SEED, OUT / "features.npz")
for j, name in enumerate(("repeated piece", "rep-2")):
    mean, sd = stats["fit"][:, j].mean(), stats["fit"][:, j].std()
    print(
        f"{name}: fit golds mean {mean:.4f} sd {sd:.4f}; median z of validation repeats "
        f"{np.median((stats['repeat'][:, j] - mean) / sd):.1f}, of validation golds "
        f"{np.median((stats['gold'][:, j] - mean) / sd):.2f}"
    )
gaussian = gaussian_of(features["fit"])
d_gold, d_repeat = gaussian.distances(features["gold"]), gaussian.distances(features["repeat"])
print(
    f"control d: validation golds median {np.median(d_gold):.1f} (quartiles {np.quantile(d_gold, 0.25):.1f}, "
    f"{np.quantile(d_gold, 0.75):.1f}); validation repeats median {np.median(d_repeat):.1f}"
)
