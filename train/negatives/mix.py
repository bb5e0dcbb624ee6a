"""Negative candidates for response selection: random utterances and hard negatives, mixed by weight.

The kinds and their generators are in :mod:`density_train.negatives.kinds`; this module mixes them.

**False negatives are filtered.** A negative whose normalised text (:func:`normalise`:
lowercased, punctuation and whitespace removed) equals the gold's is a copy, not a wrong reply,
and is rejected for every kind; perturbations (``repeat``, ``drop``, ``shuffle``) must also
change the word sequence. Every kind but ``echo`` and ``same-dialogue`` (which are context
turns, or may be, by definition) is rejected when it equals a context turn. A context's
negatives are distinct.

**Fallback.** Where a kind cannot make a valid negative, its slot gets a ``random`` one
instead: ``same-dialogue`` when the dialogue has no eligible turn (e.g. a 3-turn dialogue),
``echo`` when every context turn is a copy of the gold, ``speaker`` when the previous turn has
no word, ``repeat`` for a gold without a word, ``drop`` and ``shuffle`` for a one-word gold,
``retrieved`` when the gold has no neighbour outside its context, ``bland`` when every bland reply is a
normalised copy of the gold or of a context turn (or the list is empty); and a kind asked for several
negatives in one context that runs out of distinct ones.

**Corpora.** When the pairs come from a ``--corpus`` mix (``SelectionData.sources``), random
negatives and fallbacks come from the pair's own corpus (``SelectionData.pool_of``) and a
``retrieved`` neighbour from another corpus is skipped, so that no negative can be told from the
gold by its corpus's style; the other kinds are made from the pair's own dialogue or gold.

**Seeds.** :func:`draw_negatives` is a function of ``(seed, epoch, row)`` only, never of the
batch: each row's generators are ``numpy.random.default_rng([seed, row, stream])``. The hard
negatives and the allocation of slots to kinds come from ``seed`` and stay fixed across
epochs; the random ones come from ``seed + epoch`` when ``resample``, else ``seed``, exactly
like :func:`density_train.data.examples.epoch_negatives`. The mix ``random:1`` returns
``SelectionData.negatives(n, seed)`` unchanged (the authors' recipe, bit for bit, including its
rule that excludes the gold and context turns verbatim only: on DailyDialog train with seed 42
and 15 negatives, 2 of 1,140,795 are normalised copies of the gold). In any other mix the
random negatives also skip normalised copies of the gold.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from ..data.examples import SelectionData
from ..data.text import normalise
from .bland import bland_list
from .kinds import (
    ATTEMPTS,
    CONTEXT_KINDS,
    KINDS,
    PERTURBATIONS,
    bland_negative,
    drop_negative,
    earlier_negative,
    echo_negative,
    grounding_negative,
    random_negative,
    repeat_negative,
    same_dialogue_negative,
    shuffle_negative,
    span_negative,
    speaker_negative,
)
from .retrieval import RetrievalIndex, retrieved_negative

# Streams of the per-row generators, after one per kind (0..len(KINDS) - 1).
_ALLOCATION, _RANDOM_EXTRA, _FALLBACK = 100, 101, 102


# --- the mix --------------------------------------------------------------------------------


@dataclass(frozen=True)
class NegativeMix:
    """Relative weights of the negative kinds, e.g. ``NegativeMix.parse("random:8,echo:1")``."""

    weights: tuple[tuple[str, float], ...]

    def __post_init__(self):
        if not self.weights:
            raise ValueError("a negative mix needs at least one kind")
        seen = set()
        for kind, weight in self.weights:
            if kind not in KINDS:
                raise ValueError(f"unknown negative kind {kind!r}; kinds: {', '.join(KINDS)}")
            if kind in seen:
                raise ValueError(f"negative kind {kind!r} is given twice")
            seen.add(kind)
            if isinstance(weight, bool) or not isinstance(weight, (int, float)):
                raise ValueError(f"bad weight {weight!r} for negative kind {kind!r}: must be a number")
            if not math.isfinite(weight) or weight <= 0:
                raise ValueError(f"bad weight {weight!r} for negative kind {kind!r}: must be positive and finite")

    @classmethod
    def parse(cls, text: str) -> NegativeMix:
        """``kind:weight`` items separated by commas (a bare ``kind`` weighs 1); weights are relative."""
        weights = []
        for item in text.split(","):
            kind, colon, weight = (part.strip() for part in item.partition(":"))
            if not kind:
                raise ValueError(f"empty negative kind in {text!r}")
            if kind not in KINDS:
                raise ValueError(f"unknown negative kind {kind!r} in {text!r}; kinds: {', '.join(KINDS)}")
            try:
                value = float(weight) if colon else 1.0
            except ValueError:
                raise ValueError(f"bad weight {weight!r} for negative kind {kind!r} in {text!r}") from None
            weights.append((kind, value))
        return cls(tuple(weights))

    def __str__(self) -> str:
        return ",".join(f"{kind}:{int(w) if float(w).is_integer() else repr(float(w))}" for kind, w in self.weights)

    @property
    def kinds(self) -> tuple[str, ...]:
        return tuple(kind for kind, _ in self.weights)

    @property
    def random_only(self) -> bool:
        """The authors' recipe: every negative random."""
        return self.kinds == ("random",)

    def allocate(self, n: int, rng: np.random.Generator) -> dict[str, int]:
        """How many of ``n`` slots each kind gets: its quota ``n * weight / total`` rounded down, and
        the remaining slots to kinds drawn with probabilities equal to their quotas' fractional parts
        (systematic sampling in a random order), so each kind gets exactly its quota in expectation."""
        total = sum(weight for _, weight in self.weights)
        quotas = np.array([n * weight / total for _, weight in self.weights])
        counts = np.floor(quotas).astype(int)
        remainder = n - int(counts.sum())
        if remainder > 0:
            order = rng.permutation(len(quotas))
            edges = np.cumsum((quotas - counts)[order])
            points = rng.random() * (edges[-1] / remainder) + np.arange(remainder) * (edges[-1] / remainder)
            for slot in np.minimum(np.searchsorted(edges, points, side="right"), len(order) - 1):
                counts[order[slot]] += 1
        return {kind: int(count) for kind, count in zip(self.kinds, counts)}


DEFAULT_MIX = NegativeMix((("random", 1.0),))


# --- drawing --------------------------------------------------------------------------------


def _rng(*entropy: int) -> np.random.Generator:
    return np.random.default_rng([int(value) for value in entropy])


def _check(data: SelectionData, kinds: Sequence[str], retrieval: RetrievalIndex | None) -> None:
    unknown = [kind for kind in kinds if kind not in KINDS]
    if unknown:
        raise ValueError(f"unknown negative kind {unknown[0]!r}; kinds: {', '.join(KINDS)}")
    if "same-dialogue" in kinds and data.dialogues is None:
        raise ValueError(
            "negative kind 'same-dialogue' needs the pairs' dialogues: build the SelectionData from "
            "density_train.data.corpora.response_pairs_with_dialogues"
        )
    if "retrieved" in kinds:
        if retrieval is None:
            raise ValueError(
                "negative kind 'retrieved' needs a retrieval index (density_train.negatives.retrieval.RetrievalIndex)"
            )
        retrieval.check_pool(data.pool)


def _generate(kind: str, data: SelectionData, row: int, rng: np.random.Generator, retrieval) -> str | None:
    """One candidate of a hard ``kind`` for pair ``row`` (not yet checked against the rules)."""
    context, gold = data.contexts[row], data.responses[row]
    # The copies are made of the dialogue's own turns when known: persona or grounding lines are
    # context, not turns, and a copy of one is not a copy of the conversation (train/data/grounding.py).
    turns = data.dialogues[row][: data.turn_indices[row]] if data.dialogues is not None else context
    if kind == "same-dialogue":
        return same_dialogue_negative(data.dialogues[row], data.turn_indices[row], rng)
    if kind == "echo":
        return echo_negative(turns or context, gold, rng)
    if kind == "speaker":
        return speaker_negative(context, gold, rng)
    if kind == "earlier":
        return earlier_negative(turns or context, gold, rng)
    if kind == "span":
        return span_negative(turns or context, rng)
    if kind == "repeat":
        return repeat_negative(gold, rng)
    if kind == "drop":
        return drop_negative(gold, rng)
    if kind == "shuffle":
        return shuffle_negative(gold, rng)
    if kind == "grounding":
        return grounding_negative(context, gold, rng)
    if kind == "retrieved":
        return retrieved_negative(gold, context, retrieval, rng)
    if (
        kind == "bland"
    ):  # the training split's list, also for a validation split (density_train.negatives.bland.use_bland_list)
        return bland_negative(bland_list(data), context, gold, rng)
    raise ValueError(f"no generator for negative kind {kind!r}")


def acceptable(kind: str, candidate: str | None, gold: str, context: Sequence[str], taken=()) -> bool:
    """Whether ``candidate`` is a valid ``kind`` negative for (context, gold): not a copy of the gold,
    a changed word sequence for perturbations, not a context turn unless the kind is one, not already ``taken``."""
    if candidate is None or candidate == gold or candidate in taken:
        return False
    if normalise(candidate) == normalise(gold):
        return False
    if kind in PERTURBATIONS and candidate.split() == gold.split():
        return False
    return kind in CONTEXT_KINDS or candidate not in context


def _hard_negatives(kind, count, data, row, seed, retrieval, taken) -> list[str]:
    """Up to ``count`` distinct valid ``kind`` negatives for ``row``, from the stream ``(seed, row, kind)``."""
    rng = _rng(seed, row, KINDS.index(kind))
    context, gold = data.contexts[row], data.responses[row]
    out: list[str] = []
    for _ in range(count * ATTEMPTS):
        if len(out) == count:
            break
        candidate = _generate(kind, data, row, rng, retrieval)
        if candidate is None:  # this kind cannot make one here
            break
        if kind == "retrieved" and not data.in_pool_of(row, candidate):  # a neighbour from another corpus
            continue
        if acceptable(kind, candidate, gold, context, [*taken, *out]):
            out.append(candidate)
    return out


def _random_table(data: SelectionData, n: int, seed: int) -> list[list[str]]:
    """``data.negatives(n, seed)``, computed once per (n, seed) and kept on ``data`` (the last four: an epoch's
    negatives and copies, and the next epoch's copies, which the loop draws ahead)."""
    cache = data.__dict__.setdefault("_negatives_cache", {})
    if (n, seed) not in cache:
        while len(cache) >= 4:
            cache.pop(next(iter(cache)))
        cache[(n, seed)] = data.negatives(n, seed)
    return cache[(n, seed)]


def draw_labelled_negatives(
    data: SelectionData,
    rows: Sequence[int],
    n: int,
    mix: NegativeMix,
    *,
    seed: int,
    epoch: int,
    retrieval: RetrievalIndex | None = None,
    resample: bool = False,
) -> list[list[tuple[str, str]]]:
    """:func:`draw_negatives` with each negative's kind: ``(kind, text)``; fallbacks are labelled ``random``."""
    _check(data, mix.kinds, retrieval)
    random_seed = seed + epoch if resample else seed
    table = _random_table(data, n, random_seed)  # also the first source of fallbacks
    if mix.random_only:
        return [[("random", text) for text in table[int(row)]] for row in rows]
    rank = {kind: i for i, kind in enumerate(mix.kinds)}
    out = []
    for row in map(int, rows):
        counts = mix.allocate(n, _rng(seed, row, _ALLOCATION))
        context, gold = data.contexts[row], data.responses[row]
        chosen: list[tuple[str, str]] = []
        for kind in mix.kinds:
            if kind != "random" and counts[kind]:
                taken = [text for _, text in chosen]
                chosen += [
                    (kind, text) for text in _hard_negatives(kind, counts[kind], data, row, seed, retrieval, taken)
                ]
        missing = n - len(chosen)
        taken = {text for _, text in chosen}
        randoms = [text for text in table[row] if text not in taken and acceptable("random", text, gold, context)]
        randoms = randoms[:missing]
        extra = _rng(random_seed, row, _RANDOM_EXTRA) if len(randoms) < missing else None
        while len(randoms) < missing:
            text = random_negative(data.pool_of(row), gold, context, extra, avoid=[*taken, *randoms])
            if text is None:
                raise ValueError(f"pair {row}: the pool has too few utterances for {n} distinct negatives")
            randoms.append(text)
        labelled = chosen + [("random", text) for text in randoms]
        out.append(sorted(labelled, key=lambda item: rank.get(item[0], len(rank))))  # stable: mix order
    return out


def draw_negatives(
    data: SelectionData,
    rows: Sequence[int],
    n: int,
    mix: NegativeMix,
    *,
    seed: int,
    epoch: int,
    retrieval: RetrievalIndex | None = None,
    resample: bool = False,
) -> list[list[str]]:
    """``n`` negatives for each pair in ``rows`` (in order), a deterministic function of (seed, epoch, row).

    Each pair's ``n`` slots go to the kinds by :meth:`NegativeMix.allocate`; the negatives come
    out grouped by kind in the mix's order (fallbacks with the random ones). Hard negatives and
    the allocation depend on ``seed`` and ``row`` only; random negatives on ``seed + epoch`` if
    ``resample`` (drawn afresh each epoch), else on ``seed`` (fixed, the authors' way): a resumed
    run, or another batch composition, sees the same negatives for the same (epoch, row). With
    the mix ``random:1`` the result is ``data.negatives(n, seed + epoch if resample else seed)``
    row for row, i.e. :func:`density_train.data.examples.epoch_negatives`.

    Raises ValueError if a kind needs what ``data`` lacks (dialogues for ``same-dialogue``), if
    ``retrieved`` has no ``retrieval`` index, or :class:`density_train.negatives.retrieval.PoolMismatchError` if the
    index was built for another pool.
    """
    labelled = draw_labelled_negatives(
        data, rows, n, mix, seed=seed, epoch=epoch, retrieval=retrieval, resample=resample
    )
    return [[text for _, text in row] for row in labelled]


def validation_candidates(
    data: SelectionData,
    kinds: Sequence[str],
    *,
    seed: int,
    retrieval: RetrievalIndex | None = None,
    fallback: bool = True,
) -> dict[str, list[str | None]]:
    """One fixed negative per pair for each kind (for per-kind gold-vs-kind AUCs on validation).

    Pair ``row``'s ``kind`` negative comes from the stream ``(seed, row, kind)``. Where the kind
    cannot make one, it is a random one if ``fallback``, else ``None`` (so that an AUC can leave
    those pairs out). ``retrieved`` needs an index built for this data's pool (for a validation
    split: ``python -m train retrieval-index --split validation``).
    """
    _check(data, kinds, retrieval)
    out: dict[str, list[str | None]] = {}
    for kind in kinds:
        values: list[str | None] = []
        for row in range(len(data)):
            context, gold = data.contexts[row], data.responses[row]
            if kind == "random":
                values.append(random_negative(data.pool_of(row), gold, context, _rng(seed, row, KINDS.index(kind))))
                continue
            found = _hard_negatives(kind, 1, data, row, seed, retrieval, ())
            if not found and fallback:
                found = [random_negative(data.pool_of(row), gold, context, _rng(seed, row, _FALLBACK))]
            values.append(found[0] if found else None)
        out[kind] = values
    return out
