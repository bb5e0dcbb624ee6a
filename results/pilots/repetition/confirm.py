"""The repetition term's confirmation on the shipped model (PLAN.md, second addendum, fixed before this ran): the
plain density (w = 0) against s_w with the fixed w = 6, on fresh seed-44 draws (20,000 training golds, the 500
validation golds' negatives of each kind) and `dev` (n = 160); validation only.
Usage, from the repository root, alone on the CPU (about 8 minutes):
PYTHONPATH=. python results/pilots/repetition/confirm.py [CHECKPOINT]"""

import sys

from results.pilots.repetition.look import OUT, measured
from results.pilots.repetition.weight_look import OTHERS, show, table

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
