"""Validation signals that select a checkpoint without looking at a test set.

After every evaluation, on the validation split (its first ``valid_limit`` pairs):

- ``recall_at_1`` and ``mrr``: the gold among its 1 + N fixed random candidates (the paper's task);
- ``auc_f/<kind>`` and ``auc_density/<kind>``: for each negative kind, the probability that the
  gold outscores that kind's negative of the same context (one fixed negative per pair,
  ``density_train.negatives.mix.validation_candidates``), by the classifier f(c, r) and by DEnsity's
  -distance; beside them ``gold_overlap_spearman``: how DEnsity's score of the validation golds
  follows their word overlap with the last context turn (:func:`last_turn_overlap`), a check
  without human ratings that copy robustness is not bought by sinking human replies that reuse
  the last turn's words. The distance needs a Gaussian: it is fitted afresh at each evaluation to the current
  encoder's features of ``valid_fit_pairs`` training gold pairs (a fixed seeded sample), not the
  whole corpus, so these AUCs are for comparing checkpoints, not the released statistics;
- ``dev_pearson`` and ``dev_spearman`` (x100), if human judgments are given: DEnsity's -distance
  against the human scores of DailyDialog-Zhao's first 20 % of rows (the authors' own validation
  rows; ``density_train.data.judgments`` protocol ``dev``), and ``dev_overlap_spearman`` beside
  ``dev_human_overlap_spearman``: how the score, and how people, follow the reply's word overlap
  with the last context turn (:func:`last_turn_overlap`). A metric that rewards parrots follows it
  where people do not.

The AUCs and correlations are :mod:`density_metric.correlation`'s (numpy; checked against scikit-learn and
scipy in the tests), the one implementation that benchmarks/ uses too.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from ..data.examples import json_sha256

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

    def fingerprint(self) -> str:
        """sha256 of the rows (contexts, responses and human scores, in order): a resumed run checks that it
        validates on the rows it began with."""
        return json_sha256([self.contexts, self.responses, np.asarray(self.human, dtype=np.float64).tolist()])
