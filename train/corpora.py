"""Dialogue corpora as ``datasets.Dataset`` with one column ``turns`` (list of str, oldest first)."""

from __future__ import annotations

from pathlib import Path

import datasets

SPLITS = ("train", "validation", "test")


def load_dailydialog(data_dir: str | Path, split: str) -> datasets.Dataset:
    """DailyDialog from its original ``dialogues_{split}.txt`` (turns end with ``__eou__``)."""
    if split not in SPLITS:
        raise ValueError(f"split must be one of {SPLITS}, got {split!r}")
    path = Path(data_dir) / f"dialogues_{split}.txt"
    dialogues = []
    with open(path, encoding="utf-8") as handle:
        for line in handle:
            turns = [turn.strip() for turn in line.split("__eou__")]
            dialogues.append([turn for turn in turns if turn])
    return datasets.Dataset.from_dict({"turns": dialogues})


def response_pairs(dialogues) -> tuple[list[list[str]], list[str]]:
    """Every turn from the second on, as a response to its prefix: (contexts, responses)."""
    contexts, responses = [], []
    for turns in dialogues:
        for i in range(1, len(turns)):
            contexts.append(turns[:i])
            responses.append(turns[i])
    return contexts, responses
