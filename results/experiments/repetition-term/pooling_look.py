"""PLAN.md's fourth addendum (fixed before this ran): does the reply block's first token, read from the shipped
weights, carry repetition where the block's mean does not? Density AUCs per kind and `dev` Pearson / Spearman on the
seed-44 draws for the mean (the control, cached), the first token, and their concatenation. Validation only.
Usage, alone on the CPU (about 5 minutes): PYTHONPATH=. python results/experiments/repetition-term/pooling_look.py"""

import importlib

import numpy as np
from scipy.stats import pearsonr

from density_metric.correlation import auc, spearman

# the folders are named with hyphens, which an import statement cannot spell
_repetition_look = importlib.import_module("results.experiments.repetition-term.look")
KINDS, OUT, gaussian_of, measured = (
    _repetition_look.KINDS,
    _repetition_look.OUT,
    _repetition_look.gaussian_of,
    _repetition_look.measured,
)

CHECKPOINT, SEED = "density_metric/default", 44
OTHERS = {"random": 0.02, "echo": 0.02, "speaker": 0.02, "earlier": 0.02, "span": 0.03}


def row(features: dict, human: np.ndarray) -> dict:
    gaussian = gaussian_of(features["fit"])
    score = {name: -gaussian.distances(value) for name, value in features.items()}
    out = {kind: auc(score["gold"], score[kind]) for kind in KINDS}
    out["dev P"], out["dev S"] = 100 * pearsonr(score["dev"], human)[0], 100 * spearman(score["dev"], human)
    return out


def main() -> None:
    mean, _, human = measured(CHECKPOINT, SEED, OUT / "shipped-features-s44.npz")
    first, _, _ = measured(CHECKPOINT, SEED, OUT / "shipped-first-token-s44.npz", pooling="feature-token")
    rows = {
        "mean over the block (shipped, control)": row(mean, human),
        "the block's first token": row(first, human),
        "[mean; first token]": row({name: np.hstack([mean[name], first[name]]) for name in mean}, human),
    }
    columns = [*KINDS, "dev P", "dev S"]
    print(
        f"{CHECKPOINT}, seed-{SEED} draws\n\n| g | "
        + " | ".join(columns)
        + " |\n"
        + "| --- " * (len(columns) + 1)
        + "|"
    )
    for label, values in rows.items():
        print(
            f"| {label} | "
            + " | ".join(f"{values[c]:.4f}" if c in KINDS else f"{values[c]:.2f}" for c in columns)
            + " |"
        )
    base = rows["mean over the block (shipped, control)"]
    for label, values in list(rows.items())[1:]:
        worth = (
            values["repeat"] >= base["repeat"] + 0.10
            and all(values[k] >= base[k] - bound for k, bound in OTHERS.items())
            and all(values[k] >= base[k] - 2.0 for k in ("dev P", "dev S"))
        )
        print(f"\n{label}: " + ("worth a training plan" if worth else "not worth a training plan"))


if __name__ == "__main__":
    main()
