"""A training run's ``log.jsonl``, as :mod:`train.loop` appends it, read back in one place.

One JSON object per line: ``{"type": "train", "step": ...}`` for an optimizer step (loss, ce,
contrastive, lr, elapsed) and ``{"type": "eval", "step": ...}`` for an evaluation. A resumed run
appends again the steps (and an evaluation) it redoes after its last saved state, so a step can
appear more than once; :func:`evaluations` keeps the last one. Read by the trainer (to name the
best evaluation in the card), the learning curve and the pilot tables.
"""

from __future__ import annotations

import json
from pathlib import Path

TYPES = ("train", "eval")


def read_log(path: str | Path) -> list[dict]:
    """Every record of the log at ``path``, in file order, checked: a line that is not a JSON
    object with a ``type`` in :data:`TYPES` and an integer ``step`` is an error naming the line."""
    records = []
    for number, line in enumerate(Path(path).read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except json.JSONDecodeError as error:
            raise ValueError(f"{path}, line {number}: not JSON ({error.msg})") from None
        if not isinstance(record, dict) or record.get("type") not in TYPES or type(record.get("step")) is not int:
            raise ValueError(f"{path}, line {number}: a record needs a type in {TYPES} and an integer step")
        records.append(record)
    return records


def evaluations(records: list[dict]) -> list[dict]:
    """The evaluation records in step order, one per step (the last logged, for a redone step)."""
    by_step = {record["step"]: record for record in records if record["type"] == "eval"}
    return [by_step[step] for step in sorted(by_step)]
