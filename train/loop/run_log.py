"""A training run's ``log.jsonl``, as :mod:`density_train.loop.trainer` appends it, read back in one place.

One JSON object per line: ``{"type": "train", "step": ...}`` for an optimizer step (loss, ce,
contrastive, lr, elapsed) and ``{"type": "eval", "step": ...}`` for an evaluation. A resumed run
takes again the steps after its last saved state, so it first cuts the log back to that state
(:func:`truncate_log`); a log written before that cut could hold a step twice, and
:func:`evaluations` keeps the last one. Read by the trainer (to name the best evaluation and the
run's cost in the card), the learning curve and the pilot tables.
"""

from __future__ import annotations

import json
from pathlib import Path

from ..data.rows import jsonl_values, text_lines

TYPES = ("train", "eval")


def read_log(path: str | Path) -> list[dict]:
    """Every record of the log at ``path``, in file order, checked: a line that is not a JSON
    object with a ``type`` in :data:`TYPES` and an integer ``step`` is an error naming the line (read by
    :func:`density_train.data.rows.jsonl_values`, which also names a file that is not UTF-8)."""
    records = []
    for number, record in jsonl_values(path):
        if not isinstance(record, dict) or record.get("type") not in TYPES or type(record.get("step")) is not int:
            raise ValueError(f"{path}, line {number}: a record needs a type in {TYPES} and an integer step")
        records.append(record)
    return records


def truncate_log(path: str | Path, step: int) -> None:
    """Keep the records of the log at ``path`` up to optimizer step ``step`` (the saved state a run
    resumes from) and drop the later ones, which the resumed run logs again. Each kept line is
    kept as read (:func:`density_train.data.rows.text_lines`); a missing log stays missing."""
    path = Path(path)
    if not path.is_file():
        return
    read_log(path)  # a damaged line is an error naming it, not a silent cut
    lines = [line for _, line in text_lines(path)]  # the lines read_log read
    kept = [line for line in lines if line.strip() and json.loads(line)["step"] <= step]
    if len(kept) < len(lines):
        path.write_text("".join(kept), encoding="utf-8")


def evaluations(records: list[dict]) -> list[dict]:
    """The evaluation records in step order, one per step (the last logged, for a redone step)."""
    by_step = {record["step"]: record for record in records if record["type"] == "eval"}
    return [by_step[step] for step in sorted(by_step)]


def compute_summary(records: list[dict]) -> dict:
    """What the run cost, from its records: optimizer steps, chunks, wall time and evaluation time.

    A chunk is one process of the run: a train record whose ``elapsed`` (seconds since its process
    began) is below the previous one starts a new chunk. A chunk's wall time is its last train
    record's ``elapsed`` plus the evaluations it logged after that record (``elapsed`` already
    counts the ones before it). Redone steps and evaluations of a resumed run count (``evaluations``
    counts runs, not distinct steps): they ran. An evaluation before the first step (``--eval-at-start``)
    counts too; its time is inside the first chunk's ``elapsed``.
    Loading before a chunk's first step and saving after its last are not counted.
    """
    chunks: list[list[float]] = []  # per chunk: [its last train record's elapsed, evaluations after it]
    eval_seconds, runs = 0.0, 0
    for record in records:
        if record["type"] == "train":
            if not chunks or record["elapsed"] < chunks[-1][0]:
                chunks.append([0.0, 0.0])
            chunks[-1] = [record["elapsed"], 0.0]
        else:
            eval_seconds += record["seconds"]
            runs += 1
            if chunks:  # before the first step (--eval-at-start), the first chunk's elapsed counts it
                chunks[-1][1] += record["seconds"]
    steps = [record["step"] for record in records if record["type"] == "train"]
    return {
        "steps": max(steps, default=0),
        "chunks": len(chunks),
        "wall_seconds": sum(elapsed + tail for elapsed, tail in chunks) if chunks else eval_seconds,
        "eval_seconds": eval_seconds,
        "evaluations": runs,
    }
