"""The repetition term's confirmation on the shipped model (PLAN.md, second addendum, fixed before this ran): the
plain density (w = 0) against s_w with the fixed w = 6, on fresh seed-44 draws (20,000 training golds, the 500
validation golds' negatives of each kind) and `dev` (n = 160); validation only.
Usage, from the repository root, alone on the CPU (about 8 minutes):
PYTHONPATH=. python results/experiments/repetition-term/confirm.py [CHECKPOINT]"""

import importlib
import sys

# the folders are named with hyphens, which an import statement cannot spell
_repetition_look = importlib.import_module("results.experiments.repetition-term.look")
OUT, measured = _repetition_look.OUT, _repetition_look.measured
_repetition_weight_look = importlib.import_module("results.experiments.repetition-term.weight_look")
OTHERS, show, table = _repetition_weight_look.OTHERS, _repetition_weight_look.show, _repetition_weight_look.table

W, SEED = 6, 44
BOUNDS = {"span": 0.015}  # the stated cost; every other kind but repeat: 0.01


def main() -> None:
    checkpoint = sys.argv[1] if len(sys.argv) > 1 else "density_metric/default"
    rows = table(*measured(checkpoint, SEED, OUT / "shipped-features-s44.npz"), weights=(0, W))
    show(f"{checkpoint}, seed-{SEED} draws (confirmation of the fixed w = {W})", rows)
    row, base = rows[W], rows[0]
    failed = [f"repeat {row['repeat'] - base['repeat']:+.4f} < +0.10"] if row["repeat"] < base["repeat"] + 0.10 else []
    failed += [
        f"{kind} {row[kind] - base[kind]:+.4f} < -{BOUNDS.get(kind, 0.01)}"
        for kind in OTHERS
        if row[kind] < base[kind] - BOUNDS.get(kind, 0.01)
    ]
    if row["dev"] < base["dev"] - 0.5:
        failed.append(f"dev {row['dev'] - base['dev']:+.2f} < -0.5")
    print(f"\nw = {W}: " + ("passes" if not failed else "fails: " + "; ".join(failed)))


if __name__ == "__main__":
    main()
