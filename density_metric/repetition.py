"""An optional repetition term beside the density: s(r) = -sqrt(d(g)^2 + min(w max(z, 0), K)^2).

d(g) is the Mahalanobis distance of g(c, r) (the paper's score is -d), z the reply's rep-2 standardised by the
mean m and standard deviation sd of the fit golds' rep-2, w a weight and K a cap on the push, in distance units
(infinite: no cap). rep-2 = 1 - distinct bigrams / bigrams of
the reply's word pieces (Welleck et al., ICLR 2020, a measure of degenerate repetition); 0 for fewer than 2 pieces.

Why a term outside the Gaussian: g(c, r) is a mean over the reply's tokens, and a span said again has about the
span's mean, so the density cannot see repetition; a statistic appended to g counts as one axis of d + 1 and a
Mahalanobis distance is unchanged by rescaling it, so its weight has to sit outside. One-sided: a reply that
repeats itself less than golds do is not pushed out. Bounded: unbounded, a reply that says one bigram again and
again lands far off the distances' scale, which a linear correlation with people's ratings reads badly. With w = 0, or in a checkpoint without the term, the score is
the paper's. What it does and costs: ``results/experiments/repetition-term/NOTES.md``.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np


def rep2(pieces: Sequence[Sequence[int]]) -> np.ndarray:
    """rep-2 of each reply's token ids: (n,) float64, 1 - distinct bigrams / bigrams (0 with fewer than 2 ids).

    Vectorised over all replies: the (reply, first id, second id) triples of every bigram are sorted
    together, and a triple that differs from the one before it is a distinct bigram of its reply.
    """
    lengths = np.fromiter((len(ids) for ids in pieces), dtype=np.int64, count=len(pieces))
    out = np.zeros(len(pieces), dtype=np.float64)
    if not len(pieces) or lengths.max(initial=0) < 2:
        return out
    ids = np.concatenate([np.asarray(p, dtype=np.int64) for p in pieces if len(p)])
    rows = np.repeat(np.arange(len(pieces), dtype=np.int64), lengths)
    inside = rows[1:] == rows[:-1]  # bigram (i, i + 1) lies within one reply
    first, second, row = ids[:-1][inside], ids[1:][inside], rows[1:][inside]
    order = np.lexsort((second, first, row))
    first, second, row = first[order], second[order], row[order]
    new = np.ones(len(row), dtype=bool)
    new[1:] = (row[1:] != row[:-1]) | (first[1:] != first[:-1]) | (second[1:] != second[:-1])
    distinct = np.bincount(row[new], minlength=len(pieces))
    bigrams = np.maximum(lengths - 1, 0)
    has = bigrams > 0
    out[has] = 1.0 - distinct[has] / bigrams[has]
    return out


def check_settings(weight: float, cap: float = math.inf) -> None:
    """A ValueError unless ``weight`` is a positive number and ``cap`` positive (inf: none); checked before a fit
    encodes anything."""
    if not weight > 0 or not np.isfinite(weight):
        raise ValueError(f"the repetition weight must be a positive number, got {weight!r}")
    if not cap > 0:
        raise ValueError(f"the repetition cap must be positive (inf: none), got {cap!r}")


@dataclass(frozen=True)
class RepetitionTerm:
    """w, the fit golds' rep-2 mean m and standard deviation sd (sd > 0), and the cap K (> 0, may be infinite)."""

    weight: float
    mean: float
    sd: float
    cap: float = math.inf

    @classmethod
    def fit(cls, gold_rep2: np.ndarray, weight: float, cap: float = math.inf) -> RepetitionTerm:
        """The term with the fit golds' rep-2 values (n,), weight ``w`` and cap ``K``."""
        gold_rep2 = np.asarray(gold_rep2, dtype=np.float64)
        check_settings(weight, cap)
        sd = float(gold_rep2.std()) if gold_rep2.size else 0.0
        if gold_rep2.ndim != 1 or not sd > 0:
            raise ValueError(f"rep-2 of the fit golds must vary over at least 2 replies, got shape {gold_rep2.shape}")
        return cls(float(weight), float(gold_rep2.mean()), sd, float(cap))

    def distances(self, distances: np.ndarray, reply_rep2: np.ndarray) -> np.ndarray:
        """sqrt(d^2 + min(w max(z, 0), K)^2): (n,) float64, from the density's distances and the replies' rep-2."""
        distances, reply_rep2 = np.asarray(distances, dtype=np.float64), np.asarray(reply_rep2, dtype=np.float64)
        if distances.shape != reply_rep2.shape:
            raise ValueError(f"{distances.shape} distances but {reply_rep2.shape} rep-2 values: one per reply")
        z = np.maximum((reply_rep2 - self.mean) / self.sd, 0.0)
        push = np.minimum(self.weight * z, self.cap)
        return np.sqrt(distances**2 + push**2)
