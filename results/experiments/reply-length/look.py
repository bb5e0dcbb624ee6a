"""Issue 31, a validation-only look (plan and reading rule: PLAN.md beside this file): the shipped density with its
distance scaled by the golds' own length law, s(r) = -d / sqrt(c(L)), against the plain density.

Usage, from the repository root, alone on the CPU: PYTHONPATH=. python results/experiments/reply-length/look.py SEED. Reads the
features the subspace look cached (runs/subspace-look/features-s{SEED}.npz; `results/experiments/gaussian-subspace/look.py SEED
--encode-only` makes them). Nothing is fitted on all pairs or measured on test.
"""

import importlib
import sys
from pathlib import Path

import numpy as np

from density_metric import DensityScorer

# the folders are named with hyphens, which an import statement cannot spell
_repetition_look = importlib.import_module("results.experiments.repetition-term.look")
look_parts, measured = _repetition_look.look_parts, _repetition_look.measured
_subspace_look = importlib.import_module("results.experiments.gaussian-subspace.look")
CHECKPOINT, judged, print_table, spectrum = (
    _subspace_look.CHECKPOINT,
    _subspace_look.judged,
    _subspace_look.print_table,
    _subspace_look.spectrum,
)

EDGES = np.array([1, 2, 3, 4, 6, 8, 11, 15, 20, 27, 36, 48, 65])
CAP = 64  # the pair format's max_response_length: g sees at most this many pieces


def power_law(lengths: np.ndarray, squared: np.ndarray):
    """c(L) = exp(a + b log L), (a, b) the least-squares line of log d^2 on log L."""
    b, a = np.polyfit(np.log(lengths), np.log(squared), 1)
    return lambda L: np.exp(a + b * np.log(L)), f"a = {a:.3f}, b = {b:.3f}"


def binned(lengths: np.ndarray, squared: np.ndarray):
    """c(L) = the median d^2 of the length bin, linear in log L between bin centres, constant outside them."""
    bins = np.digitize(lengths, EDGES) - 1
    present = [k for k in range(len(EDGES) - 1) if np.any(bins == k)]
    centres = np.log([np.median(lengths[bins == k]) for k in present])
    medians = np.array([np.median(squared[bins == k]) for k in present])
    return lambda L: np.interp(np.log(L), centres, medians), "medians " + ", ".join(f"{m:.0f}" for m in medians)


def main() -> None:
    seed = int(sys.argv[1])
    features, _, human = measured(CHECKPOINT, seed, Path(f"runs/subspace-look/features-s{seed}.npz"))
    parts, _ = look_parts(seed)
    tokenizer = DensityScorer(CHECKPOINT, device="cpu", dtype="float32").encoder.tokenizer
    lengths = {
        name: np.clip([len(ids) for ids in tokenizer(list(pair[1]), add_special_tokens=False)["input_ids"]], 1, CAP)
        for name, pair in parts.items()
    }
    mean, variances, vectors = spectrum(features["fit"])
    squared = {
        name: np.sum(((np.asarray(value, np.float64) - mean) @ vectors) ** 2 / variances, axis=1)
        for name, value in features.items()
    }
    print(f"{CHECKPOINT}, seed-{seed} draws: 20,000 training golds, 500 validation pairs, dev n = {len(human)}")
    print("median word pieces: " + ", ".join(f"{name} {np.median(lengths[name]):.0f}" for name in lengths))
    laws = {"control: d": None}
    for label, make in (("power", power_law), ("binned", binned)):
        law, described = make(lengths["fit"], squared["fit"])
        laws[label] = law
        print(f"{label}: {described}")
    rows = {}
    for label, law in laws.items():
        rows[label] = judged(
            {name: -np.sqrt(value if law is None else value / law(lengths[name])) for name, value in squared.items()},
            human,
        )
    control = rows["control: d"]
    print_table("distance", rows, control)
    passing = [label for label in ("power", "binned") if rows[label]["eligible"]]
    passing = [label for label in passing if rows[label]["e3"] >= control["e3"] + 0.01]
    if not passing:
        print("selected: none")
        return
    best = max(passing, key=lambda label: rows[label]["e3"])
    if "power" in passing and rows[best]["e3"] - rows["power"]["e3"] <= 0.005:
        best = "power"
    print(f"selected: {best} (e3 {rows[best]['e3']:.4f} against the control's {control['e3']:.4f})")


if __name__ == "__main__":
    main()
