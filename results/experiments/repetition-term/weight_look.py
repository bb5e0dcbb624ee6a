"""The repetition look's addendum (PLAN.md, fixed before any weight was tried): s_w(r) = -sqrt(d(g)^2 + w^2 max(z, 0)^2),
with d(g) the plain density's distance and z the reply's rep-2 standardised by the fit golds' mean and standard
deviation; w selected on the look's seed-43 draws, then measured on seed-42 draws (other fit golds, other negatives).
Validation only. Usage, from the repository root, alone on the CPU (computes the seed-42 features once, about 7
minutes): PYTHONPATH=. python results/experiments/repetition-term/weight_look.py CHECKPOINT"""

import importlib
import sys

import numpy as np

from density_metric.correlation import auc, spearman
from density_metric.repetition import RepetitionTerm

# the folders are named with hyphens, which an import statement cannot spell
_repetition_look = importlib.import_module("results.experiments.repetition-term.look")
KINDS, OUT, SEED, gaussian_of, measured = (
    _repetition_look.KINDS,
    _repetition_look.OUT,
    _repetition_look.SEED,
    _repetition_look.gaussian_of,
    _repetition_look.measured,
)

WEIGHTS = (0, 1, 2, 3, 4, 6, 8)  # 0: the control, the plain density
OTHERS = [kind for kind in KINDS if kind != "repeat"]


def table(features: dict, stats: dict, human: np.ndarray, weights=WEIGHTS) -> dict[float, dict[str, float]]:
    """Per weight: the density AUC of the gold against each kind, and `dev` Spearman x100."""
    gaussian = gaussian_of(features["fit"])
    out = {}
    for w in weights:
        term = RepetitionTerm.fit(stats["fit"][:, 1], w) if w else None  # uncapped, as the addendum fixed it

        def score(name, term=term):
            distances = gaussian.distances(features[name])
            return -(distances if term is None else term.distances(distances, stats[name][:, 1]))

        gold = score("gold")
        row = {kind: auc(gold, score(kind)) for kind in KINDS}
        row["dev"] = 100 * spearman(score("dev"), human)
        out[w] = row
    return out


def show(title: str, rows: dict) -> None:
    print(f"\n{title}\n\n| w | " + " | ".join(KINDS) + " | `dev` Spearman |\n" + "| --- " * (len(KINDS) + 2) + "|")
    for w, row in rows.items():
        print(f"| {w} | " + " | ".join(f"{row[k]:.4f}" for k in KINDS) + f" | {row['dev']:.2f} |")


def main() -> None:
    checkpoint = sys.argv[1]
    select = table(*measured(checkpoint, SEED, OUT / "features.npz"))
    show(f"{checkpoint}, seed-43 draws (selection)", select)
    control = select[0]
    allowed = [
        w
        for w in WEIGHTS[1:]
        if all(select[w][k] >= control[k] - 0.01 for k in OTHERS) and select[w]["dev"] >= control["dev"] - 0.5
    ]
    if not allowed:
        print("\nno weight keeps the other kinds and `dev`: nothing selected")
        return
    chosen = max(allowed)
    confirm = table(*measured(checkpoint, 42, OUT / "features-s42.npz"))
    show(f"{checkpoint}, seed-42 draws (confirmation; selected w = {chosen})", confirm)
    row, base = confirm[chosen], confirm[0]
    worth = (
        row["repeat"] >= base["repeat"] + 0.10
        and all(row[k] >= base[k] - 0.01 for k in OTHERS)
        and row["dev"] >= base["dev"] - 0.5
    )
    print(
        f"\nw = {chosen}: repeat {row['repeat']:.4f} against {base['repeat']:.4f} on the seed-42 draws: "
        + ("worth a plan of its own" if worth else "not worth a plan of its own")
    )


if __name__ == "__main__":
    main()
