"""Do the parrot fixes carry to a second corpus? The robustness probes (benchmarks/probes.py, unchanged) on 500
ConvAI2 validation cases (ParlAI self_original; the dialogue turns, without the persona lines, so that the contexts
look like the DailyDialog probes'), seed 0, for the first release (commit 12f0fbc, sha256:be6da0ce8edb9778) and the
bundled default, or the checkpoints given as LABEL=PATH arguments: DEnsity and f(c, r) of each. A measurement of
models already chosen; nothing is selected from it. Usage, from the repository root, alone on the CPU (about 4
minutes):
    bash results/checkout_bundle.sh 12f0fbc && PYTHONPATH=. python results/bundled-default/probes-convai2/run.py > results/bundled-default/probes-convai2/probes.md
"""

import sys

from density_train.data.corpora import load_convai2

from benchmarks.checkpoints import named_checkpoints
from benchmarks.human_correlation import ModelColumns, run_probes
from density_metric import DensityScorer

CHECKPOINTS = {"first release": "runs/bundles/12f0fbc", "bundled default": "density_metric/default"}
N, SEED = 500, 0


def main(args: list[str]) -> None:
    checkpoints = named_checkpoints(args) or CHECKPOINTS
    dialogues = list(load_convai2("../shared/data/convai2/valid_self_original_no_cands.txt")["turns"])
    columns = [
        ModelColumns(DensityScorer(path, device="cpu", dtype="float32"), label) for label, path in checkpoints.items()
    ]
    report = run_probes(dialogues, columns, N, SEED)
    metrics = [name for name in next(iter(report["accuracy"].values())) if "Euclidean" not in name]
    print(f"ConvAI2 validation, {report['n']} cases of {len(dialogues):,} dialogues, seed {SEED}: the share of cases")
    print("where the gold reply outscores the variant\n")
    print("| probe | " + " | ".join(metrics) + " |\n| --- |" + " --- |" * len(metrics))
    for probe, accuracy in report["accuracy"].items():
        cases = report["n_per_probe"][probe]
        label = probe if cases == report["n"] else f"{probe} ({cases} cases)"
        print(f"| {label} | " + " | ".join(f"{100 * accuracy[m]:.1f} %" for m in metrics) + " |")


if __name__ == "__main__":
    main(sys.argv[1:])
