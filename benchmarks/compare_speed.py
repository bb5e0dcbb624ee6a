"""Speed of ``density_metric.compare`` against a plain per-resample loop, in one process.

    python -m benchmarks.compare_speed --rows 10000 --systems 3 --out benchmarks/compare_speed_cpu.json

Both sides get the same random per-row scores and the same draws (sacrebleu's: one
(resamples, n) index matrix, one (trials, n) swap matrix, seed 12345). The loop computes each
resample's and each trial's means one at a time, the way sacrebleu's ``significance.py`` loops
over resamples; ``compare`` does every system and pair at once (one matrix product per block).
Each side runs ``--repeats`` times and its best run counts.

The loop counts a null statistic as ``compare`` does: when it is at least ``|delta| - tolerance``,
the pair's tolerance ``3 max_i (rtol + n eps) (|a_i| + |b_i|)`` (``density_metric.comparison.significance``'s
docstring), computed here row by row. With that rule the p-values must be identical and the
intervals equal to float rounding: the benchmark fails otherwise, and reports both largest
differences. It also reports how far the tolerance moves a p-value, against the same loop with
sacrebleu's plain ``>= |delta|`` (``max_p_value_difference_plain_ge``).
"""

from __future__ import annotations

import argparse
import itertools
import json
import platform
import time
from pathlib import Path

import numpy as np

from density_metric import compare
from density_metric.comparison.significance import DEFAULT_SEED, SCORE_RTOL
from density_metric.io.outputs import write_json

from .command_line import check_counts, check_output


def loop_compare(
    scores: np.ndarray, resamples: int, trials: int, seed: int, rtol: float | None = SCORE_RTOL
) -> dict[str, list[float]]:
    """p-values (both tests) and 95 % intervals, one resample and one trial at a time; scores: (n, s).

    ``rtol``: the scores' relative tolerance, as ``compare``'s; None counts with a plain ``>= |delta|``.
    """
    n, n_systems = scores.shape
    indices = np.random.default_rng(seed).choice(n, size=(resamples, n), replace=True)
    boot = np.array([[scores[row, j].mean() for j in range(n_systems)] for row in indices])
    swaps = np.random.default_rng(seed).integers(2, size=(trials, n), dtype=bool)
    lower = resamples // 40
    out: dict[str, list[float]] = {"p_bootstrap": [], "p_randomization": [], "ci": []}
    for a, b in itertools.combinations(range(n_systems), 2):
        threshold = abs(scores[:, a].mean() - scores[:, b].mean())
        if rtol is not None:  # a statistic less than the tolerance below |delta| ties it
            row_noise = [(rtol + n * np.finfo(np.float64).eps) * (abs(x) + abs(y)) for x, y in scores[:, [a, b]]]
            threshold -= 3 * max(row_noise)
        spread = np.abs(boot[:, a] - boot[:, b])
        out["p_bootstrap"].append((np.sum(spread - spread.mean() >= threshold) + 1) / (resamples + 1))
        count = 0
        for swap in swaps:
            x = np.where(swap, scores[:, b], scores[:, a])
            y = np.where(swap, scores[:, a], scores[:, b])
            count += abs(x.mean() - y.mean()) >= threshold
        out["p_randomization"].append((count + 1) / (trials + 1))
        ordered = np.sort(boot[:, a] - boot[:, b])
        out["ci"] += [ordered[lower], ordered[resamples - lower - 1]]
    return out


def p_value_difference(pairs: list[dict], reference: dict[str, list[float]]) -> float:
    """The largest absolute difference of ``compare``'s p-values (both tests) from the loop's."""
    return float(
        max(
            np.max(np.abs(np.array([p[key] for p in pairs]) - np.array(reference[key])))
            for key in ("p_bootstrap", "p_randomization")
        )
    )


def best_time(function, repeats: int):
    best, value = float("inf"), None
    for _ in range(repeats):
        start = time.perf_counter()
        value = function()
        best = min(best, time.perf_counter() - start)
    return best, value


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=10000)
    parser.add_argument("--systems", type=int, default=3)
    parser.add_argument("--resamples", type=int, default=1000)
    parser.add_argument("--trials", type=int, default=10000)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args(argv)
    check_counts(parser, args, "--rows", "--resamples", "--trials", "--repeats")
    check_counts(parser, args, "--systems", least=2)  # compare() takes pairs of systems
    check_output(parser, "--out", args.out)

    rng = np.random.default_rng(0)
    base = rng.normal(size=args.rows)
    scores = np.stack([base + 0.02 * j + rng.normal(scale=0.5, size=args.rows) for j in range(args.systems)], axis=1)
    options = dict(resamples=args.resamples, trials=args.trials, seed=DEFAULT_SEED)

    bootstrap_only, _ = best_time(lambda: compare(list(scores.T), resamples=args.resamples, trials=1), args.repeats)
    vectorised, result = best_time(lambda: compare(list(scores.T), **options), args.repeats)
    loop, reference = best_time(lambda: loop_compare(scores, **options), 1)  # slow: once
    plain = loop_compare(scores, **options, rtol=None)
    difference = p_value_difference(result.pairs, reference)
    ci_difference = float(np.max(np.abs(np.ravel([p["ci"] for p in result.pairs]) - np.array(reference["ci"]))))
    report = {
        "machine": f"{platform.processor() or platform.machine()}, numpy {np.__version__}",
        "rows": args.rows,
        "systems": args.systems,
        "pairs": len(result.pairs),
        "resamples": args.resamples,
        "trials": args.trials,
        "seconds_compare": round(vectorised, 3),
        "seconds_compare_bootstrap_only": round(bootstrap_only, 3),
        "seconds_loop": round(loop, 3),
        "speedup": round(loop / vectorised, 1),
        "max_p_value_difference": difference,
        "max_interval_difference": ci_difference,
        "max_p_value_difference_plain_ge": p_value_difference(result.pairs, plain),
    }
    print(json.dumps(report, indent=2))
    if difference != 0 or ci_difference > 1e-12:
        raise SystemExit(f"compare and the loop disagree: p-values by {difference}, intervals by {ci_difference}")
    if args.out:
        write_json(args.out, report)
    return report


if __name__ == "__main__":
    main()
