"""Training examples for response selection: each gold pair with N random negatives.

Negatives are utterances of the same split, never the gold response nor any turn of its
context, as in the authors' code. Sampling is seeded: ``negatives_seed`` fixes them for all
epochs (the authors' way, seed 42), or ``resample=True`` draws new ones each epoch from
``seed + epoch``.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass
class SelectionData:
    """Gold pairs of one split and the utterance pool their negatives come from."""

    contexts: list[list[str]]
    responses: list[str]
    pool: list[str]

    @classmethod
    def from_pairs(cls, contexts: list[list[str]], responses: list[str]) -> SelectionData:
        pool = sorted({turn for context in contexts for turn in context} | set(responses))
        return cls(contexts, responses, pool)

    def __len__(self) -> int:
        return len(self.responses)

    def negatives(self, n: int, seed: int) -> list[list[str]]:
        """``n`` negatives per pair, drawn without replacement from the pool minus the pair's own turns."""
        if n >= len(self.pool):
            raise ValueError(f"cannot draw {n} negatives from a pool of {len(self.pool)} utterances")
        rng = np.random.default_rng(seed)
        out = []
        for context, gold in zip(self.contexts, self.responses):
            excluded = set(context) | {gold}
            chosen: list[str] = []
            while len(chosen) < n:
                # Rejection sampling: the pool is large, so drawing a few extra is cheaper than a permutation.
                for index in rng.integers(len(self.pool), size=2 * (n - len(chosen)) + 1):
                    candidate = self.pool[index]
                    if candidate not in excluded and candidate not in chosen:
                        chosen.append(candidate)
                        if len(chosen) == n:
                            break
            out.append(chosen)
        return out


def epoch_negatives(data: SelectionData, n: int, seed: int, epoch: int, resample: bool) -> list[list[str]]:
    """Negatives for ``epoch``: the same every epoch unless ``resample``."""
    return data.negatives(n, seed + epoch if resample else seed)
