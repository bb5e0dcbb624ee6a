"""How far apart are two checkpoints on DailyDialog-Zhao's test rows? A paired bootstrap over the rows.

    PYTHONPATH=. python results/experiments/fine-tune-soups/zhao_paired.py last-turn-copies=runs/last-turn-chain/start o6=runs/link-chain/candidate \
        soup=runs/link-chain/soup/candidate soup4=density_metric/default > results/experiments/fine-tune-soups/zhao_paired.md

(runs/last-turn-chain/start holds the same bytes as commit 3b29ef3's density_metric/default, the last-turn-copies
release that was bundled until the soup of four replaced it; results/checkout_bundle.sh writes it out of git.)

Scores the `paper` protocol's 640 test rows (with a first argument --protocol=dev: the 160 validation rows) as
benchmarks.human_correlation does (persona/fact lines first, float32 on the CPU) with each checkpoint; the
correlations reproduce that report's. Then it resamples the rows 10,000 times (seed 0), the same rows for every
checkpoint (density_metric.comparison.significance's bootstrap and percentile interval): the 95 % interval of each
checkpoint's Pearson and Spearman minus the first one's. It decides nothing: it sizes the noise of a floor.
"""

import sys

import numpy as np
from density_train.data.judgments import apply_protocol, context_of, load_sets
from scipy.stats import pearsonr, spearmanr

from benchmarks.checkpoints import named_checkpoints
from benchmarks.paired_bootstrap import resampled_correlations
from density_metric import DensityScorer
from density_metric.comparison.significance import bootstrap_indices, percentile_ci

RESAMPLES = 10_000


def main(args: list[str]) -> None:
    protocol = args.pop(0).removeprefix("--protocol=") if args[0].startswith("--protocol=") else "paper"
    named = named_checkpoints(args)
    (judgments,) = load_sets("../shared/data", ["dailydialog_zhao"])
    index, human = apply_protocol(judgments, protocol)
    rows = [judgments.rows[i] for i in index]
    contexts, responses = [context_of(row, True) for row in rows], [row["response"] for row in rows]
    scores = {
        name: DensityScorer(path, device="cpu", dtype="float32", progress=False).score(contexts, responses).scores
        for name, path in named.items()
    }
    draws = bootstrap_indices(len(rows), RESAMPLES, seed=0)
    first = next(iter(named))
    print(
        f"DailyDialog-Zhao, `{protocol}` protocol, n = {len(rows)}; {RESAMPLES:,} paired resamples of the rows (seed 0)\n"
    )
    print(f"| checkpoint | Pearson | Spearman | Pearson - {first}, 95 % interval | Spearman - {first}, 95 % interval |")
    print("| --- | --- | --- | --- | --- |")
    base = None
    for name, values in scores.items():
        values = np.asarray(values, dtype=np.float64)
        point = 100 * pearsonr(values, human)[0], 100 * spearmanr(values, human)[0]
        boot = resampled_correlations(values, human, draws)
        if base is None:
            base, cells = (point, boot), ["–", "–"]
        else:
            cells = [
                "{:+.2f} [{:+.2f}, {:+.2f}]".format(
                    point[k] - base[0][k], *percentile_ci((boot[k] - base[1][k])[:, None])[0]
                )
                for k in (0, 1)
            ]
        print(f"| {name} (`{named[name]}`) | {point[0]:.2f} | {point[1]:.2f} | {cells[0]} | {cells[1]} |")


if __name__ == "__main__":
    main(sys.argv[1:])
