"""What benchmarks/device_train.py lifts into its report from the files its stages write: the training run's log,
the meta-evaluation's and the corpus probes' JSON (their whole outputs come back in training.tar.gz)."""

from __future__ import annotations

import json
import statistics
from pathlib import Path

# The probes a shipped model keeps (docs/release.md; results/experiments/gpu-schedule/PLAN.md): the share of
# DailyDialog test cases where the gold outscores an echo of the last turn, and the last turn followed by the gold.
PROBE_FLOORS = {"echo": 0.95, "speaker_confused": 0.92}
MODEL = "DEnsity"  # the checkpoint's own density column in the reports
EVAL_KEYS = ("epoch", "recall_at_1", "mrr", "zhao_dev_spearman", "seconds")


def training_summary(log: Path, contexts_per_step: int) -> dict:
    """Steps, contexts/s (over the training time, evaluations left out), the median step and each evaluation's
    numbers, from the run's log.jsonl."""
    from density_train.loop.run_log import compute_summary, evaluations, read_log

    records = read_log(log)
    cost = compute_summary(records)
    elapsed = [record["elapsed"] for record in records if record["type"] == "train"]
    summary = {"steps_taken": cost["steps"], "contexts_seen": cost["steps"] * contexts_per_step, **cost}
    training_seconds = cost["wall_seconds"] - cost["eval_seconds"]
    if cost["steps"] and training_seconds > 0:
        summary["contexts_per_s"] = round(summary["contexts_seen"] / training_seconds, 1)
    if len(elapsed) > 2:
        summary["median_seconds_per_step"] = round(statistics.median(b - a for a, b in zip(elapsed, elapsed[1:])), 4)
    summary["evaluations"] = [
        {"step": record["step"], **{key: record[key] for key in EVAL_KEYS if key in record}}
        for record in evaluations(records)
    ]
    return summary


def evaluation_summary(path: Path) -> dict:
    """Each set's DEnsity Pearson and Spearman per protocol (FED dialogue: its mean-turn row), the DailyDialog
    probes' shares, whether the probes hold their floors (:data:`PROBE_FLOORS`), and validation gold > random."""
    report = json.loads(Path(path).read_text(encoding="utf-8"))
    sets = {}
    for name, protocols in report["sets"].items():
        sets[name] = {}
        for protocol, columns in protocols.items():
            column = columns.get(MODEL) or columns.get(f"{MODEL} dialogue (mean)")
            if column:
                sets[name][protocol] = {key: round(column[key], 2) for key in ("pearson", "spearman")}
                sets[name][protocol]["n"] = column["n"]
    probes = {name: shares[MODEL] for name, shares in report["probes"]["accuracy"].items() if MODEL in shares}
    floors = {name: {"share": probes.get(name), "floor": floor} for name, floor in PROBE_FLOORS.items()}
    return {
        "signature": report["signature"],
        "sets": sets,
        "probes": probes,
        "probe_floors": floors,
        "probes_hold": all(
            value["share"] is not None and value["share"] >= value["floor"] for value in floors.values()
        ),
        "gold_vs_random_validation": report["gold_vs_random_validation"]["share_gold_higher"],
        "seconds": report["seconds"],
    }


def probe_summary(path: Path) -> dict:
    """Each corpus's probe shares of the DEnsity column."""
    report = json.loads(Path(path).read_text(encoding="utf-8"))
    return {
        "corpora": {
            corpus: {name: shares[MODEL] for name, shares in result["accuracy"].items() if MODEL in shares}
            for corpus, result in report["corpora"].items()
        },
        "seconds": report["seconds"],
    }
