"""Training examples for response selection: each gold pair with N random negatives.

Negatives are utterances of the same split, never the gold response nor any turn of its
context, as in the authors' code. Sampling is seeded: ``negatives_seed`` fixes them for all
epochs (the authors' way, seed 42), or ``resample=True`` draws new ones each epoch from
``seed + epoch``. Hard negatives (echoes, perturbed golds, same-dialogue and retrieved turns)
and their mix with random ones are in :mod:`density_train.negatives.mix`; the pairs' dialogues they need
(``dialogues``, ``turn_indices``) come from :func:`density_train.data.corpora.response_pairs_with_dialogues`.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np


def json_sha256(value) -> str:
    """sha256 of ``value`` written as JSON: the fingerprint a resumed run compares its data with."""
    return hashlib.sha256(json.dumps(value).encode("utf-8")).hexdigest()


@dataclass
class SelectionData:
    """Gold pairs of one split and the utterance pool their negatives come from.

    ``dialogues`` and ``turn_indices`` are optional: per pair, its dialogue's turns (without any
    prefix such as persona lines; pairs of one dialogue share the list) and the gold's index in
    them, so ``dialogues[i][turn_indices[i]] == responses[i]``.

    ``sources`` is optional too: per pair, the name of its corpus (a ``--corpus`` mix,
    :func:`density_train.data.corpora.load_corpus`). With more than one name, each pair's random negatives come from
    the utterances of its own corpus (:meth:`pool_of`), so that style alone (case, punctuation, topic)
    never tells a negative from the gold; ``pool`` stays the union. With one name, or none, everything
    is as without sources.
    """

    contexts: list[list[str]]
    responses: list[str]
    pool: list[str]
    dialogues: list[list[str]] | None = None
    turn_indices: list[int] | None = None
    sources: list[str] | None = None

    def __post_init__(self):
        if self.sources is not None and len(self.sources) != len(self.responses):
            raise ValueError(f"{len(self.responses)} pairs but {len(self.sources)} sources")
        self._pools: dict[str, list[str]] | None = None
        self._pool_sets: dict[str, frozenset[str]] = {}
        if self.sources is not None and len(set(self.sources)) > 1:
            turns: dict[str, set[str]] = {}
            for context, gold, source in zip(self.contexts, self.responses, self.sources):
                turns.setdefault(source, set()).update(context, (gold,))
            pool = set(self.pool)
            self._pools = {source: sorted(texts & pool) for source, texts in turns.items()}
        if (self.dialogues is None) != (self.turn_indices is None):
            raise ValueError("dialogues and turn_indices go together: give both or neither")
        if self.dialogues is not None:
            if not len(self.dialogues) == len(self.turn_indices) == len(self.responses):
                raise ValueError(
                    f"{len(self.responses)} pairs but {len(self.dialogues)} dialogues and "
                    f"{len(self.turn_indices)} turn indices"
                )
            for row, (turns, index, gold) in enumerate(zip(self.dialogues, self.turn_indices, self.responses)):
                if not 0 <= index < len(turns) or turns[index] != gold:
                    raise ValueError(f"pair {row}: turn {index} of its dialogue is not its gold response")

    @classmethod
    def from_pairs(
        cls,
        contexts: list[list[str]],
        responses: list[str],
        dialogues: list[list[str]] | None = None,
        turn_indices: list[int] | None = None,
        sources: list[str] | None = None,
    ) -> SelectionData:
        """The pairs with the pool of their turns; ``from_pairs(*response_pairs_with_dialogues(corpus))``
        also keeps each pair's dialogue (then the pool leaves out the lines before the dialogue's turns, such as
        persona or knowledge lines: they are no one's utterance; without such lines the pool is the same), and
        ``from_pairs(*density_train.data.corpora.load_corpus(args, with_dialogues=True)[0])`` each pair's corpus."""
        if dialogues is not None and turn_indices is not None:  # the turns only: a prefix line is no utterance
            pool = {turn for context, i in zip(contexts, turn_indices) for turn in context[len(context) - i :]}
        else:
            pool = {turn for context in contexts for turn in context}
        pool = sorted(pool | set(responses))
        return cls(contexts, responses, pool, dialogues, turn_indices, sources)

    @property
    def mixed(self) -> bool:
        """Whether the pairs come from more than one corpus (negatives then come from each pair's own)."""
        return self._pools is not None

    def pool_of(self, row: int) -> list[str]:
        """The utterances pair ``row``'s random negatives come from: its corpus's, or the whole pool."""
        return self.pool if self._pools is None else self._pools[self.sources[row]]

    def in_pool_of(self, row: int, text: str) -> bool:
        """Whether ``text`` is an utterance of pair ``row``'s corpus (always true without a mix)."""
        if self._pools is None:
            return True
        source = self.sources[row]
        if source not in self._pool_sets:
            self._pool_sets[source] = frozenset(self._pools[source])
        return text in self._pool_sets[source]

    def __len__(self) -> int:
        return len(self.responses)

    def line_counts(self) -> list[int] | None:
        """Per pair, how many of its context's first turns are lines before its dialogue's turns (persona or
        knowledge lines: ``len(context) - turn_index``); None without dialogues."""
        if self.turn_indices is None:
            return None
        return [len(context) - index for context, index in zip(self.contexts, self.turn_indices)]

    def fingerprint(self) -> str:
        """sha256 of the pairs (contexts and gold responses, in order): a resumed run checks that it
        reads the data it began with."""
        return json_sha256([self.contexts, self.responses])

    def select(self, rows: Sequence[int]) -> SelectionData:
        """The pairs ``rows`` (with their dialogues, if kept) over the same pool, e.g. ``data.select(range(1000))``."""
        rows = [int(row) for row in rows]
        dialogues = None if self.dialogues is None else [self.dialogues[i] for i in rows]
        indices = None if self.turn_indices is None else [self.turn_indices[i] for i in rows]
        sources = None if self.sources is None else [self.sources[i] for i in rows]
        return self._with_pools(
            [self.contexts[i] for i in rows], [self.responses[i] for i in rows], dialogues, indices, sources
        )

    def with_contexts(self, contexts: Sequence[list[str]]) -> SelectionData:
        """These pairs with other contexts (e.g. grounding lines in front of them), over the same pools."""
        return self._with_pools(list(contexts), self.responses, self.dialogues, self.turn_indices, self.sources)

    def _with_pools(self, contexts, responses, dialogues, indices, sources) -> SelectionData:
        """Pairs over this data's pool and each corpus's pool as they are, not recomputed from the new pairs."""
        out = SelectionData(contexts, responses, self.pool, dialogues, indices)
        out.sources, out._pools = sources, self._pools
        return out

    def negatives(self, n: int, seed: int) -> list[list[str]]:
        """``n`` negatives per pair, drawn without replacement from the pair's pool (:meth:`pool_of`)
        minus the pair's own turns."""
        pools = [self.pool] if self._pools is None else list(self._pools.values())
        smallest = min(pools, key=len)
        if n >= len(smallest):
            raise ValueError(f"cannot draw {n} negatives from a pool of {len(smallest)} utterances")
        rng = np.random.default_rng(seed)
        out = []
        for row, (context, gold) in enumerate(zip(self.contexts, self.responses)):
            excluded = set(context) | {gold}
            pool = self.pool_of(row)
            chosen: list[str] = []
            while len(chosen) < n:
                # Rejection sampling: the pool is large, so drawing a few extra is cheaper than a permutation.
                for index in rng.integers(len(pool), size=2 * (n - len(chosen)) + 1):
                    candidate = pool[index]
                    if candidate not in excluded and candidate not in chosen:
                        chosen.append(candidate)
                        if len(chosen) == n:
                            break
            out.append(chosen)
        return out


def epoch_negatives(data: SelectionData, n: int, seed: int, epoch: int, resample: bool) -> list[list[str]]:
    """Negatives for ``epoch``: the same every epoch unless ``resample``."""
    return data.negatives(n, seed + epoch if resample else seed)


def epoch_batches(
    n: int,
    batch_size: int,
    seed: int,
    lengths: np.ndarray | None = None,
    bucket_batches: int = 0,
    pool: np.ndarray | None = None,
    pool_rows: int = 0,
) -> np.ndarray:
    """The epoch's micro-batches of row indices, (n // batch_size, batch_size): a seeded shuffle.

    With ``pool`` (row indices) and ``pool_rows`` > 0, the last ``pool_rows`` places of every batch
    hold rows of ``pool`` instead, in a shuffle of their own (``[seed, 2]``; the pool repeats when the
    epoch needs more than it has), so that every batch has that many of them.

    With ``bucket_batches``, each window of that many batches of the shuffle is sorted by
    ``lengths`` (n,) before it is cut into batches, and the batches are then shuffled, so a batch
    holds contexts of similar length (less padding) while the epoch order stays random. Each
    context's loss is unchanged; which contexts share a batch (and so the contrastive term's
    in-batch negatives) becomes length-correlated.
    """
    rng = np.random.default_rng(seed)
    order = rng.permutation(n)[: n // batch_size * batch_size]
    if bucket_batches:
        window = bucket_batches * batch_size
        order = np.concatenate(
            [
                chunk[np.argsort(lengths[chunk], kind="stable")]
                for chunk in np.split(order, range(window, len(order), window))
            ]
        )
    batches = order.reshape(-1, batch_size)
    batches = batches[rng.permutation(len(batches))] if bucket_batches else batches
    if pool is not None and pool_rows:
        if not 0 < pool_rows < batch_size or not len(pool):
            raise ValueError(f"pool_rows must be in (0, {batch_size}) and the pool not empty, got {pool_rows}")
        picks = np.resize(np.random.default_rng([seed, 2]).permutation(pool), len(batches) * pool_rows)
        batches = np.concatenate([batches[:, : batch_size - pool_rows], picks.reshape(-1, pool_rows)], axis=1)
    return batches
