"""Validation signals that select a checkpoint without looking at a test set.

After every evaluation, on the validation split (its first ``valid_limit`` pairs):

- ``recall_at_1`` and ``mrr``: the gold among its 1 + N fixed random candidates (the paper's task);
- ``auc_f/<kind>`` and ``auc_density/<kind>``: for each negative kind, the probability that the
  gold outscores that kind's negative of the same context (one fixed negative per pair,
  ``train.negatives.validation_candidates``), by the classifier f(c, r) and by DEnsity's
  -distance; beside them ``gold_overlap_spearman``: how DEnsity's score of the validation golds
  follows their word overlap with the last context turn (:func:`last_turn_overlap`), a check
  without human ratings that copy robustness is not bought by sinking human replies that reuse
  the last turn's words. The distance needs a Gaussian: it is fitted afresh at each evaluation to the current
  encoder's features of ``valid_fit_pairs`` training gold pairs (a fixed seeded sample), not the
  whole corpus, so these AUCs are for comparing checkpoints, not the released statistics;
- ``dev_pearson`` and ``dev_spearman`` (x100), if human judgments are given: DEnsity's -distance
  against the human scores of DailyDialog-Zhao's first 20 % of rows (the authors' own validation
  rows; ``train.judgments`` protocol ``dev``), and ``dev_overlap_spearman`` beside
  ``dev_human_overlap_spearman``: how the score, and how people, follow the reply's word overlap
  with the last context turn (:func:`last_turn_overlap`). A metric that rewards parrots follows it
  where people do not.

Everything here is numpy; AUCs and rank correlations are checked against scikit-learn and scipy
in the tests.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np


def average_ranks(values: np.ndarray) -> np.ndarray:
    """1-based ranks of ``values`` (n,), ties given their average rank."""
    values = np.asarray(values, dtype=np.float64)
    order = np.argsort(values, kind="stable")
    sorted_values = values[order]
    ranks = np.empty(len(values), dtype=np.float64)
    starts = np.flatnonzero(np.r_[True, sorted_values[1:] != sorted_values[:-1]])
    ends = np.r_[starts[1:], len(values)]
    for start, end in zip(starts, ends):
        ranks[order[start:end]] = (start + end + 1) / 2
    return ranks


def auc(positive: Sequence[float], negative: Sequence[float]) -> float:
    """P(a positive outscores a negative), ties counted half (Mann-Whitney U / (n_pos n_neg))."""
    positive, negative = np.asarray(positive, dtype=np.float64), np.asarray(negative, dtype=np.float64)
    if not len(positive) or not len(negative):
        return float("nan")
    ranks = average_ranks(np.concatenate([positive, negative]))
    u = ranks[: len(positive)].sum() - len(positive) * (len(positive) + 1) / 2
    return float(u / (len(positive) * len(negative)))


def pearson(x: Sequence[float], y: Sequence[float]) -> float:
    x, y = np.asarray(x, dtype=np.float64), np.asarray(y, dtype=np.float64)
    x, y = x - x.mean(), y - y.mean()
    denominator = np.sqrt((x * x).sum() * (y * y).sum())
    return float((x * y).sum() / denominator) if denominator else float("nan")


def spearman(x: Sequence[float], y: Sequence[float]) -> float:
    return pearson(average_ranks(x), average_ranks(y))


_WORD = re.compile(r"\w+")


OVERLAP_MIN = 0.3  # a gold "reuses the last turn" (--overlap-rows) from this share of its words on


def last_turn_overlap(contexts: Sequence[Sequence[str]], responses: Sequence[str]) -> np.ndarray:
    """Share of each reply's words (lowercased ``\\w+`` runs) that occur in its context's last turn,
    (n,) float64 in [0, 1]; 0 for a reply without words or an empty context."""
    shares = np.zeros(len(responses), dtype=np.float64)
    for row, (context, response) in enumerate(zip(contexts, responses)):
        words = _WORD.findall(response.lower())
        if words and context:
            last = set(_WORD.findall(context[-1].lower()))
            shares[row] = sum(word in last for word in words) / len(words)
    return shares


@dataclass
class DevJudgments:
    """Human judgments to validate on: contexts (n lists of turns), responses (n), human scores (n,)."""

    contexts: list[list[str]]
    responses: list[str]
    human: np.ndarray
    name: str = "dev"
