"""System-level meta-evaluation: does the metric order dialogue systems as people do?

    nice python -m benchmarks.system_level --out results/bundled-default/system-level

For every human-judgment set whose rows come from at least 3 systems (the ``system`` field),
each metric's per-row scores (DEnsity and the baselines of ``benchmarks.human_correlation``,
computed by its machinery) and the human ratings are averaged per system; then, between the
metric's and the humans' system means:

- Kendall tau (tau-b) and Pearson r;
- pairwise accuracy (Kocmi et al., 2021): the share of system pairs that the metric orders as
  people do (a pair people or the metric tie counts as ordered alike only if both tie);

each with a 95 % percentile bootstrap interval over the *contexts*: contexts are resampled with
replacement, every system keeps its rows for each context drawn, and the system means are
recomputed. Systems that answered the same contexts are thus resampled together (Deutsch et al.,
2021, resample the inputs of a system-level correlation), so a context that is hard for every
system moves them all alike instead of adding noise to their differences; on sets where no two
systems share a context (FED) it is a bootstrap of the rows. A draw in which a system has no row
is left out. With 3-5 systems these statistics take only a few values and their intervals are
wide; read them as such.
"""

from __future__ import annotations

import argparse
import datetime
import json
import logging
import sys
import time

import numpy as np

from density_metric import DensityScorer
from density_metric.correlation import kendall_tau, pair_signs, pearson
from density_metric.io.outputs import write_json, write_text
from density_train.data.judgments import JudgmentSet, apply_protocol, has_protocol

from .baselines import available_columns
from .command_line import check_checkpoint, check_counts, check_sets
from .human_correlation import ModelColumns, add_scoring_arguments, check_scoring_arguments, evaluate_turn_set

MIN_SYSTEMS = 3
STATISTICS = ("kendall_tau", "pearson", "pairwise_accuracy")

logger = logging.getLogger("benchmarks.system_level")


def system_means(values: np.ndarray, systems: np.ndarray) -> tuple[list[str], np.ndarray]:
    """The distinct systems (sorted) and the mean of ``values`` over each one's rows."""
    names, codes = np.unique(np.asarray(systems, dtype=str), return_inverse=True)
    means = np.bincount(codes, weights=np.asarray(values, dtype=float)) / np.bincount(codes)
    return names.tolist(), means


def pairwise_accuracy(metric: np.ndarray, human: np.ndarray) -> np.ndarray:
    """Share of system pairs whose order (sign of the difference of means) the metric and people share."""
    return np.mean(pair_signs(metric) == pair_signs(human), axis=-1)


def bootstrap_means(
    metric: np.ndarray, human: np.ndarray, systems: np.ndarray, contexts: np.ndarray, resamples: int, seed: int
) -> tuple[np.ndarray, np.ndarray]:
    """System means of ``resamples`` bootstrap resamples of the contexts (``contexts``: one key a row; rows
    with the same key answer the same context): (resamples, systems) for the metric and for the humans,
    systems in :func:`system_means`' order; NaN where a draw holds no row of the system."""
    _, system_codes = np.unique(np.asarray(systems, dtype=str), return_inverse=True)
    _, context_codes = np.unique(np.asarray(contexts, dtype=str), return_inverse=True)
    n_contexts, n_systems = context_codes.max() + 1, system_codes.max() + 1
    cell = context_codes * n_systems + system_codes  # each row's (context, system) cell
    size = n_contexts * n_systems

    def per_cell(weights):
        return np.bincount(cell, weights=weights, minlength=size).reshape(n_contexts, n_systems)

    counts = per_cell(None)
    metric_sums, human_sums = per_cell(np.asarray(metric, float)), per_cell(np.asarray(human, float))
    draws = np.random.default_rng(seed).integers(0, n_contexts, size=(resamples, n_contexts))
    offsets = draws + n_contexts * np.arange(resamples)[:, None]
    times = np.bincount(offsets.ravel(), minlength=resamples * n_contexts).reshape(resamples, n_contexts)
    with np.errstate(invalid="ignore", divide="ignore"):
        rows = times @ counts
        return (times @ metric_sums) / rows, (times @ human_sums) / rows


def system_level(
    metric: np.ndarray,
    human: np.ndarray,
    systems: np.ndarray,
    contexts: np.ndarray,
    resamples: int = 1000,
    seed: int = 0,
) -> dict:
    """Kendall tau, Pearson r and pairwise accuracy of the system means, each with a 95 % bootstrap
    interval (``[low, high]``) over the contexts resampled (:func:`bootstrap_means`; NaN draws left out)."""
    _, metric_means = system_means(metric, systems)
    _, human_means = system_means(human, systems)
    boot_metric, boot_human = bootstrap_means(metric, human, systems, contexts, resamples, seed)
    whole = ~(np.isnan(boot_metric).any(1) | np.isnan(boot_human).any(1))  # draws with a row of every system
    boot_metric, boot_human = boot_metric[whole], boot_human[whole]
    out = {}
    for name, statistic in zip(STATISTICS, (kendall_tau, pearson, pairwise_accuracy)):
        draws = statistic(boot_metric, boot_human)
        draws = draws[~np.isnan(draws)]
        interval = np.percentile(draws, [2.5, 97.5]).tolist() if len(draws) else [float("nan")] * 2
        out[name] = {"value": float(statistic(metric_means, human_means)), "ci95": interval}
    return out


def evaluate_set(judgments: JudgmentSet, values: dict[str, np.ndarray], protocol: str, reported, **kwargs) -> dict:
    """System-level statistics of every reported metric column on the rows ``protocol`` keeps."""
    index, human = apply_protocol(judgments, protocol)
    systems = np.array([str(judgments.rows[i].get("system")) for i in index])
    contexts = np.array([json.dumps(judgments.rows[i]["context"]) for i in index])
    names, human_means = system_means(human, systems)
    counts = {name: int(np.sum(systems == name)) for name in names}
    out = {"n_rows": int(len(index)), "systems": counts, "human_means": dict(zip(names, human_means.tolist()))}
    out["metrics"] = {}
    if len(names) < MIN_SYSTEMS:  # e.g. `paper` dropped the ground-truth "system"
        out["skipped"] = f"{len(names)} system(s) under {protocol}"
        return out
    for column, scores in values.items():
        if column not in reported:
            continue
        result = system_level(scores[index], human, systems, contexts, **kwargs)
        result["system_means"] = dict(zip(names, system_means(scores[index], systems)[1].tolist()))
        out["metrics"][column] = result
    return out


def n_systems(judgments: JudgmentSet) -> int:
    return len({str(row.get("system")) for row in judgments.rows})


def markdown(report: dict) -> str:
    lines = [
        f"# System-level agreement of `{report['checkpoint']}` and the baselines with human judgments",
        "",
        f"- date: {report['date']}; command: `{report['command']}`",
        f"- signature: `{report['signature']}`",
        f"- {report['resamples']} bootstrap resamples (contexts drawn, each with every system's rows), seed {report['seed']}",
        "",
        "Per set, the metric's and the humans' mean per system; Kendall tau-b and Pearson r between",
        "them and pairwise accuracy (Kocmi et al., 2021: share of system pairs ordered as people order",
        "them), with 95 % bootstrap intervals. `full`: every row, mean rating; `paper`: ground-truth rows",
        "dropped, and for the Zhao sets their last 80 % of rows with the MAD-filtered rating. With",
        "3 systems tau takes only the values -1, -1/3, 1/3, 1 and pairwise accuracy 0, 1/3, 2/3, 1: these",
        "sets say little about a metric, and their intervals are wide. Resampling adds noise to the",
        "system means, which mixes up close systems, so the intervals of tau and pairwise accuracy often",
        "sit below the point value (percentile intervals, not centred on it). Contexts are resampled, not",
        "rows, so systems that answered the same context move together. For the sets without",
        "ground-truth rows or a split (all but the Zhao sets) `paper` keeps every row, as `full` does.",
        "",
    ]
    for protocol in report["protocols"]:
        lines += [
            f"## Protocol: {protocol}",
            "",
            "| set | systems | rows | metric | Kendall tau [95 % CI] | Pearson r [95 % CI] | pairwise acc. [95 % CI] |",
            "| --- | --- | --- | --- | --- | --- | --- |",
        ]
        for name, result in report["sets"].items():
            if protocol not in result:
                continue
            entry = result[protocol]
            if "skipped" in entry:
                lines.append(
                    f"| {name} | {len(entry['systems'])} | {entry['n_rows']} | skipped: {entry['skipped']} | | | |"
                )
            for metric, stats in entry["metrics"].items():
                cells = [
                    f"{stats[s]['value']:.2f} [{stats[s]['ci95'][0]:.2f}, {stats[s]['ci95'][1]:.2f}]"
                    for s in STATISTICS
                ]
                lines.append(
                    f"| {name} | {len(entry['systems'])} | {entry['n_rows']} | {metric} | " + " | ".join(cells) + " |"
                )
        lines.append("")
    lines += ["## Systems and rows per system (first protocol)", ""]
    for name, result in report["sets"].items():
        counts = next(iter(result.values()))["systems"]
        lines.append(f"- {name}: " + ", ".join(f"{system} ({n})" for system, n in counts.items()))
    return "\n".join(lines) + "\n"


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.system_level")
    add_scoring_arguments(parser)
    parser.add_argument("--protocols", nargs="+", choices=("full", "paper"), default=["full", "paper"])
    parser.add_argument("--resamples", type=int, default=1000, help="bootstrap resamples")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s: %(message)s")
    logging.getLogger("absl").setLevel(logging.WARNING)
    started = time.perf_counter()
    check_scoring_arguments(parser, args)
    check_counts(parser, args, "--resamples")
    sets = check_sets(parser, args.data_dir, args.sets)
    check_checkpoint(parser, args.checkpoint, args.revision)
    args.out.mkdir(parents=True, exist_ok=True)

    scorer = DensityScorer(args.checkpoint, args.revision, dtype=args.dtype, batch_size=args.batch_size)
    columns = [ModelColumns(scorer, "")] + ([] if args.no_baselines else available_columns(args.baselines_dir))
    report = {
        "checkpoint": scorer.checkpoint.source,
        "revision": scorer.checkpoint.revision,
        "signature": scorer.signature,
        "date": datetime.date.today().isoformat(),
        "command": "python -m benchmarks.system_level " + " ".join(argv or sys.argv[1:]),
        "protocols": list(dict.fromkeys(args.protocols)),
        "resamples": args.resamples,
        "seed": args.seed,
        "min_systems": MIN_SYSTEMS,
        "sets": {},
        "skipped": {},
    }
    stats_options = {"resamples": args.resamples, "seed": args.seed}
    for judgments in sets:
        if n_systems(judgments) < MIN_SYSTEMS:
            report["skipped"][judgments.name] = f"{n_systems(judgments)} system(s)"
            continue
        logger.info("scoring %s (%d rows, %d systems)", judgments.name, len(judgments.rows), n_systems(judgments))
        protocols = [p for p in report["protocols"] if has_protocol(judgments, p)]
        if judgments.level == "dialogue":  # FED dialogue level: DEnsity's dialogue score only
            dialogues = [row["dialogue"] for row in judgments.rows]
            values = {
                f"DEnsity dialogue ({aggregate})": np.array(
                    [d["score"] for d in scorer.score_dialogues(dialogues, aggregate=aggregate)]
                )
                for aggregate in ("mean", "rms")
            }
            reported = {protocol: set(values) for protocol in protocols}
        else:
            turn = evaluate_turn_set(judgments, columns, with_facts=not args.no_facts, protocols=protocols)
            values = {name: np.asarray(column) for name, column in turn["_values"].items()}
            reported = {protocol: set(turn[protocol]) for protocol in protocols}  # not a supervised one's own rows
        report["sets"][judgments.name] = {
            protocol: evaluate_set(judgments, values, protocol, reported[protocol], **stats_options)
            for protocol in protocols
        }
    report["seconds"] = round(time.perf_counter() - started, 1)
    write_json(args.out / "system_level.json", report)
    write_text(args.out / "system_level.md", markdown(report))
    logger.info("wrote %s in %.0f s", args.out / "system_level.md", report["seconds"])


if __name__ == "__main__":
    main()
