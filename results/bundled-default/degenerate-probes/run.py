"""Do degenerate replies win? The probes ``empty``, ``punctuation`` and ``unreadable`` (benchmarks/probes.py) on the
500 DailyDialog test cases (seed 0) of the README's robustness table, for the bundled default and the first release
(commit 12f0fbc, sha256:be6da0ce8edb9778): DEnsity as scored now (empty and unreadable replies at the floor,
density_metric/row_flags.py), DEnsity before the floor (the plain Mahalanobis distance, what the code before issue 56
scored), f(c, r), and MaUde (MiniLM, benchmarks/baselines). The share of cases where the gold reply outscores the
variant. A measurement of models already chosen; nothing is selected from it. Usage, from the repository root, alone
on the CPU (about 5 minutes):
    bash results/checkout_bundle.sh 12f0fbc && PYTHONPATH=. python results/bundled-default/degenerate-probes/run.py > results/bundled-default/degenerate-probes/probes.md
"""

import numpy as np
from density_train.data.corpora import load_dailydialog

from benchmarks.baselines import load_columns
from benchmarks.probes import make_probes
from density_metric import DensityScorer

CHECKPOINTS = {"bundled default": "density_metric/default", "first release": "runs/bundles/12f0fbc"}
PROBES = ("empty", "punctuation", "unreadable")
N, SEED = 500, 0


def columns(scorer: DensityScorer, contexts, responses) -> dict[str, np.ndarray]:
    """Higher is better: DEnsity now, DEnsity before the floor, and f(c, r)."""
    features = scorer.features(contexts, responses)
    return {
        "DEnsity": -scorer.distances_of(features, responses),
        "DEnsity before the floor": -scorer.stats.distances(features),
        "f(c,r)": scorer.classifier_from_features(features),
    }


def main() -> None:
    cases = make_probes(list(load_dailydialog("../shared/data/dailydialog", "test")["turns"]), N, SEED)
    contexts = [case["context"] for case in cases]
    rows = {probe: [] for probe in PROBES}
    header = []
    for label, path in CHECKPOINTS.items():
        scorer = DensityScorer(path, device="cpu", dtype="float32")
        gold = columns(scorer, contexts, [case["gold"] for case in cases])
        header += [f"{label}: {name}" for name in gold]
        for probe in PROBES:
            variant = columns(scorer, contexts, [case[probe] for case in cases])
            rows[probe] += [f"{100 * np.mean(gold[name] > variant[name]):.1f} %" for name in gold]
    maude = load_columns("maude")
    gold = maude(contexts, [case["gold"] for case in cases])
    header += list(gold)
    for probe in PROBES:
        variant = maude(contexts, [case[probe] for case in cases])
        rows[probe] += [f"{100 * np.mean(gold[name] > variant[name]):.1f} %" for name in gold]
    print(f"DailyDialog test, {len(cases)} cases, seed {SEED}: the share of cases where the gold reply outscores the")
    print("variant\n")
    print("| probe | " + " | ".join(header) + " |")
    print("| --- |" + " --- |" * len(header))
    for probe, cells in rows.items():
        print(f"| {probe} | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main()
