"""Issue 31, a validation-only look (plan and reading rule: PLAN.md beside this file): does a distance that reads only
the principal or only the minor directions of the golds' Gaussian separate copies better than the full density?

Usage, from the repository root, alone on the CPU: PYTHONPATH=. python results/experiments/gaussian-subspace/look.py SEED
[--encode-only]. Features of the shipped model are cached in runs/subspace-look/features-s{SEED}.npz (about 6
minutes to encode); --encode-only stops there and prints no variant. Nothing is fitted on all pairs or measured on test.
"""

import importlib
import sys
from pathlib import Path

import numpy as np
from scipy.stats import pearsonr

from density_metric.correlation import auc, spearman

# the folders are named with hyphens, which an import statement cannot spell
_repetition_look = importlib.import_module("results.experiments.repetition-term.look")
KINDS, measured = _repetition_look.KINDS, _repetition_look.measured

CHECKPOINT = "density_metric/default"
KS = (32, 64, 128, 192, 256, 320, 352)
RTOL = 1e-10  # the shipped pseudo-inverse's relative cutoff (density_metric.gaussian.PINV_RTOL)
OTHERS = {"random": 0.005, "earlier": 0.01, "span": 0.01}


def spectrum(fit: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(mean, variances descending, eigenvectors as columns) of the fit golds' covariance, null directions dropped."""
    fit = np.asarray(fit, dtype=np.float64)
    mean = fit.mean(0)
    centred = fit - mean
    variances, vectors = np.linalg.eigh(centred.T @ centred / len(fit))
    order = np.argsort(variances)[::-1]
    variances, vectors = variances[order], vectors[:, order]
    keep = variances > RTOL * variances[0]
    return mean, variances[keep], vectors[:, keep]


def variants(rank: int) -> dict[str, slice]:
    out = {"full (control)": slice(0, rank)}
    out.update({f"principal-{k}": slice(0, k) for k in KS})
    out.update({f"minor-{k}": slice(rank - k, rank) for k in KS})
    return out


def judged(score: dict, human: np.ndarray) -> dict:
    """One variant's row: density AUC per kind (``score``: the variant's score per part), `dev` Pearson and
    Spearman x100, and e3, the mean AUC over echo, speaker and repeat."""
    row = {kind: auc(score["gold"], score[kind]) for kind in KINDS}
    row["dev P"] = 100 * pearsonr(score["dev"], human)[0]
    row["dev S"] = 100 * spearman(score["dev"], human)
    row["e3"] = np.mean([row[k] for k in ("echo", "speaker", "repeat")])
    return row


def print_table(header: str, rows: dict, control: dict) -> None:
    """The rows as a markdown table, each marked eligible by the plan's rule against ``control`` (which sets
    row["eligible"])."""
    columns = [*KINDS, "dev P", "dev S", "e3"]
    print(f"| {header} | " + " | ".join(columns) + " | eligible |")
    print("| --- " * (len(columns) + 2) + "|")
    for label, row in rows.items():
        row["eligible"] = all(row[k] >= control[k] - tol for k, tol in OTHERS.items()) and all(
            row[k] >= control[k] - 0.5 for k in ("dev P", "dev S")
        )
        cells = [f"{row[c]:.2f}" if c.startswith("dev") else f"{row[c]:.4f}" for c in columns]
        print(f"| {label} | " + " | ".join(cells) + f" | {'yes' if row['eligible'] else 'no'} |")


def main() -> None:
    seed = int(sys.argv[1])
    features, _, human = measured(CHECKPOINT, seed, Path(f"runs/subspace-look/features-s{seed}.npz"))
    if "--encode-only" in sys.argv:
        return
    mean, variances, vectors = spectrum(features["fit"])
    print(f"{CHECKPOINT}, seed-{seed} draws: 20,000 training golds, 500 validation pairs, dev n = {len(human)}")
    print(
        f"rank {len(variances)}; variances: largest {variances[0]:.3g}, 10th {variances[9]:.3g}, "
        f"median {np.median(variances):.3g}, smallest three {', '.join(f'{v:.3g}' for v in variances[-3:])}"
    )
    z = {
        name: (np.asarray(value, np.float64) - mean) @ vectors / np.sqrt(variances) for name, value in features.items()
    }
    rows = {}
    for label, part in variants(len(variances)).items():
        rows[label] = judged({name: -np.sqrt(np.sum(value[:, part] ** 2, axis=1)) for name, value in z.items()}, human)
    control = rows["full (control)"]
    print_table("distance over", rows, control)
    best = max(
        (label for label in rows if label != "full (control)" and rows[label]["eligible"]),
        key=lambda label: rows[label]["e3"],
        default=None,
    )
    if best is None or rows[best]["e3"] < control["e3"] + 0.01:
        print(
            f"selected: none (best eligible: {best}, e3 {rows[best]['e3']:.4f} against {control['e3']:.4f})"
            if best
            else "selected: none (no eligible variant)"
        )
    else:
        print(f"selected: {best} (e3 {rows[best]['e3']:.4f} against the control's {control['e3']:.4f})")


if __name__ == "__main__":
    main()
