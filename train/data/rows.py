"""What every corpus loader returns, and the seeded split of the corpora that publish none.

A corpus is a ``datasets.Dataset`` (:func:`corpus_dataset`) with the columns

- ``turns``: list of str, oldest first;
- ``prefix``: list of str put before every context (persona or knowledge lines), often empty;
- ``responses``: indices of the turns that become training responses.

The plain corpora (:mod:`density_train.data.corpora`) and the grounded ones (:mod:`density_train.data.grounded_corpora`) both build on this
module, and :mod:`density_train.data.corpora` reads the grounded ones for ``--corpus``: this module imports neither.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:  # imported where a corpus is built: the JSONL reader below serves readers that build none
    import datasets

SEEDED_SPLITS = ("train", "validation")  # of the corpora split by validation_split
# The seeded validation split of the corpora that publish none: 5 % of the dialogues, drawn with this seed.
SPLIT_SEED = 0
VALIDATION_SHARE = 0.05
PERSONA_PREFIX = "your persona:"  # how ConvAI2 marks a persona line (and train/data/grounding.py a grounding line)


def corpus_dataset(rows: list[dict]) -> datasets.Dataset:
    """``rows`` (``turns``, ``prefix``, ``responses`` each) as a corpus with the module docstring's columns."""
    import datasets

    features = datasets.Features(
        {
            "turns": datasets.Sequence(datasets.Value("string")),
            "prefix": datasets.Sequence(datasets.Value("string")),
            "responses": datasets.Sequence(datasets.Value("int32")),
        }
    )
    return datasets.Dataset.from_list(rows, features=features)


def validation_split(count: int, seed: int = SPLIT_SEED, share: float = VALIDATION_SHARE) -> np.ndarray:
    """Indices (sorted) of the ``round(share * count)`` dialogues, at least one, that form the validation
    split of a corpus of ``count`` dialogues: the first of a seeded permutation. The rest is training."""
    size = min(max(round(share * count), 1), count - 1) if count > 1 else 0
    return np.sort(np.random.default_rng(seed).permutation(count)[:size])


def text_lines(path: str | Path) -> Iterator[tuple[int, str]]:
    """(line number, line) of every line of a text file, read as UTF-8 (a byte order mark skipped, as the scorer's
    readers do); a ValueError names the file that is not UTF-8 text."""
    try:
        with open(path, encoding="utf-8-sig") as handle:
            yield from enumerate(handle, start=1)
    except UnicodeDecodeError as err:  # while the file is read: only the generator's own reading lands here
        raise ValueError(f"{path}: not UTF-8 text ({err.reason})") from None


def jsonl_values(path: str | Path) -> Iterator[tuple[int, object]]:
    """(line number, value) of every non-blank line of a JSONL file (:func:`text_lines`); a ValueError names the file
    and the line that is not JSON, or the file that is not UTF-8 text."""
    for number, line in text_lines(path):
        if not line.strip():
            continue
        try:
            value = json.loads(line)
        except json.JSONDecodeError as err:
            raise ValueError(f"{path}, line {number}: invalid JSON ({err.msg})") from None
        yield number, value
