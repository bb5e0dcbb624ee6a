"""Scores as they leave the library: :class:`DensityResult`, and :func:`score_columns`, the one step that
turns a chunk of pairs into output columns for both table paths (files: ``tables.score_rows``;
``datasets``: ``DensityScorer.score_dataset``).

Below both :mod:`density_metric.scoring` and :mod:`density_metric.io.tables`, and importing neither.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np


@dataclass
class DensityResult:
    """Scores of n responses.

    Attributes:
        scores: (n,) raw DEnsity score s(r) = -Mahalanobis distance; higher is more human-like.
        calibrated: (n,) share of held-out human responses whose distance is larger, in [0, 1].
        signature: checkpoint, options and library versions that produced the scores.
        ratings: (n,) predicted human ratings, on the scale of the ratings that trained the
            checkpoint's few-shot rating head (``python -m train calibrate``); None without one.
        flags: n lists of the flags that say a row's score means little, ``[]`` for most rows: ``empty``,
            ``unreadable``, ``punctuation`` (these three scored at the floor, calibrated 0:
            ``row_flags.FLOORED``), ``non-latin`` (the reply or context is mostly in another script than Latin: the model
            reads English), ``truncated`` (:mod:`density_metric.row_flags`). Not given: no flags.
    """

    scores: np.ndarray
    calibrated: np.ndarray
    signature: str
    ratings: np.ndarray | None = None
    flags: list[list[str]] | None = None

    def __post_init__(self):
        if self.flags is None:
            self.flags = [[] for _ in range(len(self.scores))]

    @property
    def mean_score(self) -> float:
        """Mean raw score over all rows (``compute``'s ``density`` key)."""
        return float(np.mean(self.scores))

    @property
    def density(self) -> float:
        """Alias of :attr:`mean_score`, the name of ``compute``'s key, kept for callers of 0.1."""
        return self.mean_score

    def to_dict(self) -> dict[str, Any]:
        out = {
            "scores": self.scores.tolist(),
            "calibrated": self.calibrated.tolist(),
            "density": self.mean_score,
            "calibrated_mean": float(np.mean(self.calibrated)),
            "flags": [list(row) for row in self.flags],
            "signature": self.signature,
        }
        if self.ratings is not None:
            out["ratings"] = self.ratings.tolist()
        return out


ScoreChunk = Callable[[Sequence, Sequence], DensityResult]  # (n contexts, n responses) -> n scores

# The columns scoring adds after the input's, in order: each a suffix of the score field ("": the field itself) and
# its type. "_rating" only for a checkpoint with a rating head. The one list: score_columns, score_features and
# tables.output_columns read it.
SCORE_COLUMNS = {
    "": "float64",
    "_calibrated": "float64",
    "_rating": "float64",
    "_flags": "flags",
    "_signature": "string",
}


def added_columns(field: str = "density", rating: bool = False) -> list[str]:
    """The names of the columns :func:`score_columns` adds (``rating``: the checkpoint has a rating head), in order:
    ``{field}``, ``{field}_calibrated``, ``{field}_rating``, ``{field}_flags``, ``{field}_signature``."""
    return [f"{field}{suffix}" for suffix in SCORE_COLUMNS if rating or suffix != "_rating"]


def score_columns(
    score_chunk: ScoreChunk, contexts: Sequence, responses: Sequence, *, field: str = "density"
) -> dict[str, list[float] | list[str]]:
    """The output columns of one chunk of n pairs (:func:`added_columns`): ``{field}`` (n raw scores),
    ``{field}_calibrated`` (n in [0, 1]), for a checkpoint with a rating head ``{field}_rating`` (n predicted human
    ratings), ``{field}_flags`` (n lists of :attr:`DensityResult.flags`) and ``{field}_signature`` (n copies of
    :attr:`DensityResult.signature`: which checkpoint and options scored the row, so that ``compare`` can refuse
    scores of two checkpoints or settings: ``signature.SCORE_DEFINING_FIELDS``).

    The one scoring step under both table paths: :func:`score_rows` (files) and
    ``DensityScorer.score_dataset`` (``datasets``). ``score_chunk(contexts, responses)`` checks
    the n pairs (ValueError naming the row), scores them and returns a DensityResult:
    ``DensityScorer.score``, or ``functools.partial(score_distributed, scorer)`` to shard the
    chunk over the ranks of a process group.
    """
    result = score_chunk(contexts, responses)
    values = {
        "": result.scores.tolist(),
        "_calibrated": result.calibrated.tolist(),
        "_rating": None if result.ratings is None else result.ratings.tolist(),
        "_flags": [list(row) for row in result.flags],
        "_signature": [result.signature] * len(result.scores),
    }
    rating = result.ratings is not None
    return {name: values[name[len(field) :]] for name in added_columns(field, rating)}


def score_features(features, field: str, rating: bool):
    """``datasets.Features`` of a dataset with ``features`` once :func:`score_columns` has added its columns
    (``rating``: the ``{field}_rating`` column too). Given to ``Dataset.map``, so that the flags column is a list
    of strings from the first chunk on, even where that chunk has no flagged row."""
    import datasets

    types = {"float64": datasets.Value("float64"), "string": datasets.Value("string")}
    types["flags"] = datasets.List(datasets.Value("string"))
    added = {name: types[SCORE_COLUMNS[name[len(field) :]]] for name in added_columns(field, rating)}
    return datasets.Features({**features, **added})
