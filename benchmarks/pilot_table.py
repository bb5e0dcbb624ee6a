"""One table for a pilot: each arm's cost, validation signals, DailyDialog-Zhao ``dev`` and probes.

    python -m benchmarks.pilot_table results/experiments/negative-mix --arms random mix mix-no-probe-kinds

Each arm is a folder ``ROOT/ARM`` holding the run's ``log.jsonl`` (copied from the run folder)
and the ``human_correlation.json`` that ``python -m benchmarks.human_correlation --protocols dev``
wrote for the arm's fitted checkpoint. Writes ``ROOT/table.md`` (arms as columns) unless
``--out`` says otherwise, and prints it. Reads no test rows: only what those two files hold.
"""

from __future__ import annotations

import argparse
import json
import statistics
from pathlib import Path

from density_train.loop.run_log import evaluations, read_log

from .command_line import check_files, check_output

# Validation kinds that no probe copies (the tie-break of results/experiments/PROTOCOL.md).
NON_PROBE_KINDS = ("random", "same-dialogue", "drop", "shuffle", "retrieved")
# Copies of the context and of the gold's words: the rule of results/experiments/copy-margin/PLAN.md.
PARROT_KINDS = ("echo", "speaker", "repeat")


def processes(steps: list[dict]) -> list[list[dict]]:
    """The step records split by the process that logged them: ``elapsed`` counts from each
    process's start, so it drops where a resumed run begins."""
    runs = [[steps[0]]]
    for before, after in zip(steps, steps[1:]):
        if after["elapsed"] < before["elapsed"]:
            runs.append([])
        runs[-1].append(after)
    return runs


def training_seconds(steps: list[dict]) -> float:
    """Seconds of training in all, over the processes of a resumed run. A process that resumes from
    a saved state at step ``k`` redoes the steps after ``k`` that the stopped one had already
    logged, so the stopped one counts up to step ``k`` only (its last value when it logged no step
    ``k``). NaN for logs without ``elapsed``."""
    if any("elapsed" not in r for r in steps):
        return float("nan")
    runs = processes(steps)
    total = 0.0
    for run, resumed in zip(runs, runs[1:]):
        saved = resumed[0]["step"] - 1
        total += next((r["elapsed"] for r in run if r["step"] == saved), run[-1]["elapsed"])
    return total + runs[-1][-1]["elapsed"]


def median_step_seconds(steps: list[dict]) -> float:
    """The median of the seconds between consecutive logged steps of one process: unlike the mean,
    it does not move when other work shares the CPU for a while. NaN without ``elapsed``."""
    if any("elapsed" not in r for r in steps):
        return float("nan")
    gaps = [
        after["elapsed"] - before["elapsed"]
        for run in processes(steps)
        for before, after in zip(run, run[1:])
        if after["step"] == before["step"] + 1
    ]
    return statistics.median(gaps) if gaps else float("nan")


def read_arm(folder: Path) -> dict:
    """The numbers of one arm: cost, last evaluation, and the checkpoint's dev correlation and probes."""
    records = read_log(folder / "log.jsonl")
    steps = [r for r in records if r["type"] == "train"]
    evals = evaluations(records)
    if not steps or not evals:
        raise ValueError(f"{folder / 'log.jsonl'}: needs train and eval records, has {len(steps)} and {len(evals)}")
    last = evals[-1]
    # elapsed counts the evaluations logged before the last step (an --eval-at-start one included); not training
    seconds = training_seconds(steps) - sum(r.get("seconds", 0.0) for r in evals if r["step"] < steps[-1]["step"])
    arm = {
        "steps": steps[-1]["step"],
        "train minutes": seconds / 60,
        "seconds per step": seconds / steps[-1]["step"],
        "median seconds per step": median_step_seconds(steps),
        "eval minutes": last.get("seconds", float("nan")) / 60,
        "final loss (mean of last 20 steps)": sum(r["loss"] for r in steps[-20:]) / len(steps[-20:]),
    }
    arm.update({k: v for k, v in last.items() if k not in ("type", "epoch", "step", "seconds")})
    kinds = [k for k in NON_PROBE_KINDS if f"auc_density/{k}" in last]
    if kinds:
        arm["mean auc_density, non-probe kinds"] = sum(last[f"auc_density/{k}"] for k in kinds) / len(kinds)
    if all(f"auc_density/{k}" in last for k in PARROT_KINDS):
        arm["mean auc_density, echo/speaker/repeat"] = sum(last[f"auc_density/{k}"] for k in PARROT_KINDS) / 3
    report_path = folder / "human_correlation.json"
    if report_path.is_file():
        report = json.loads(report_path.read_text(encoding="utf-8"))
        dev = report["sets"].get("dailydialog_zhao", {}).get("dev", {})
        for metric, name in (("DEnsity", "checkpoint"), ("f(c,r) classifier", "checkpoint f(c,r)")):
            if metric in dev:
                arm[f"zhao_dev_pearson ({name})"] = dev[metric]["pearson"]
                arm[f"zhao_dev_spearman ({name})"] = dev[metric]["spearman"]
        for probe, accuracy in report["probes"]["accuracy"].items():
            for metric, value in accuracy.items():
                arm[f"probe {probe}: {metric}"] = value
    return arm


def markdown(arms: dict[str, dict], title: str) -> str:
    names = list(arms)
    rows = list(dict.fromkeys(key for arm in arms.values() for key in arm))
    lines = [f"# {title}", "", "| | " + " | ".join(names) + " |", "| --- |" + " --- |" * len(names)]
    for row in rows:
        cells = []
        for name in names:
            value = arms[name].get(row)
            cells.append("–" if value is None else f"{value:.4g}" if isinstance(value, float) else str(value))
        lines.append(f"| {row} | " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.pilot_table", description=__doc__.split("\n\n")[0])
    parser.add_argument("root", type=Path, help="folder with one subfolder per arm")
    parser.add_argument("--arms", nargs="+", required=True)
    parser.add_argument("--title", default="Pilot")
    parser.add_argument("--out", type=Path, default=None, help="default: ROOT/table.md")
    args = parser.parse_args(argv)
    check_output(parser, "--out", args.out)
    check_files(parser, "ROOT", args.root, [f"{arm}/log.jsonl" for arm in args.arms])
    try:
        arms = {arm: read_arm(args.root / arm) for arm in args.arms}
    except ValueError as err:  # a damaged log, or one without train and eval records
        parser.error(str(err))
    text = markdown(arms, args.title)
    (args.out or args.root / "table.md").write_text(text, encoding="utf-8")
    print(text)


if __name__ == "__main__":
    main()
