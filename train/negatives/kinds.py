"""The kinds of negative candidate, one generator each: what a random utterance, an echo, a copy of an earlier
turn or a perturbed gold is. How a context's negatives are drawn and mixed by weight is :mod:`density_train.negatives.mix`.

Kinds (:data:`KINDS`), one generator each; every generator takes a ``numpy.random.Generator``
and returns one negative, or ``None`` where it cannot make a valid one:

- ``random`` (:func:`random_negative`): an utterance of the split's pool, never the gold nor a
  context turn; what ``SelectionData.negatives`` draws (the authors' negatives).
- ``same-dialogue`` (:func:`same_dialogue_negative`): a non-adjacent turn of the same
  conversation, from either speaker, earlier or later: not the gold, not the last context
  turn, not the turn right after the gold (Bak and Oh 2020). Needs the pairs' dialogues
  (``SelectionData`` built from :func:`density_train.data.corpora.response_pairs_with_dialogues`).
- ``echo`` (:func:`echo_negative`): a context turn verbatim: the last one with probability
  0.7, else another one.
- ``speaker`` (:func:`speaker_negative`): the previous turn joined to the gold, in front of it
  or after it (one speaker says both turns).
- ``earlier`` (:func:`earlier_negative`): a context turn before the last one, verbatim.
- ``span`` (:func:`span_negative`): a run of 3-12 consecutive words of one context turn, most
  often the last (a partial parrot).
- ``repeat`` (:func:`repeat_negative`): one word of the gold said 3-4 times, or a 2-4-word span
  said 2-3 times, in place. A word said twice ("very very", "no no") is often natural speech,
  hence 3-4 times for single words.
- ``drop`` (:func:`drop_negative`): 20-50 % of the gold's words dropped (at least one dropped,
  at least one kept); punctuation tokens are not words and stay.
- ``shuffle`` (:func:`shuffle_negative`): the gold's tokens shuffled within consecutive windows
  of 3 or 4.
- ``grounding`` (:func:`grounding_negative`): one of the context's persona or grounding lines
  ("your persona: ..."), verbatim without its prefix; none for a context without such lines. A
  pilot kind of issue 50: whether a reply that only restates a grounding line should lie far out.
- ``retrieved`` (:func:`density_train.negatives.retrieval.retrieved_negative`): one of the gold's nearest training utterances by
  embedding similarity (:mod:`density_train.negatives.retrieval`: top-k, near-duplicates above a ceiling already
  left out), never a context turn.
- ``bland`` (:func:`bland_negative`): one of the run's bland replies (:mod:`density_train.negatives.bland`: short replies that
  are the gold in many training dialogues, mined from the training split), uniformly; never a normalised
  copy of the gold or of a context turn, so a bland gold stays a gold.

Where the pairs' dialogues are known, ``echo``, ``earlier`` and ``span`` copy the dialogue's
turns only, never a prefix (ConvAI2's persona lines, the grounding lines of train/data/grounding.py).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from ..data.corpora import PERSONA_PREFIX
from ..data.text import normalise

# New kinds go at the end: a kind's position is its seed stream, so the others' draws stay the same.
KINDS = (
    "random",
    "same-dialogue",
    "echo",
    "speaker",
    "repeat",
    "drop",
    "shuffle",
    "retrieved",
    "earlier",
    "span",
    "grounding",
    "bland",
)
# Kinds that change the gold's words: the word sequence must differ from the gold's.
PERTURBATIONS = frozenset({"repeat", "drop", "shuffle"})
# Kinds made from the gold's own words (a perturbation, or the gold behind the previous turn):
# near-copies of it, which ``--contrastive-exclude`` can keep out of the contrastive term.
GOLD_KINDS = frozenset({"speaker", *PERTURBATIONS})
# Kinds whose negatives are (or may be) context turns by definition.
CONTEXT_KINDS = frozenset({"echo", "same-dialogue", "earlier", "span"})
# Kinds that copy the context, in whole or in part: what the density must learn to put far out.
COPY_KINDS = frozenset({"echo", "speaker", "earlier", "span", "grounding"})
ECHO_LAST = 0.7  # probability that echo repeats the last context turn
SPAN_LAST = 0.7  # probability that span copies from the last context turn
SPAN_WORDS = (3, 12)  # shortest and longest span, in whitespace tokens
ATTEMPTS = 8  # tries per wanted negative before a kind's slot falls back to random


def _is_word(token: str) -> bool:
    return any(char.isalnum() for char in token)


# --- one generator per kind -------------------------------------------------------------------


def random_negative(
    pool: Sequence[str], gold: str, context: Sequence[str], rng: np.random.Generator, avoid: Sequence[str] = ()
) -> str | None:
    """An utterance of ``pool``: not the gold (nor a normalised copy), not a context turn, not in ``avoid``.

    ``None`` only when the pool has no such utterance.
    """
    excluded = set(context) | set(avoid) | {gold}
    gold_key = normalise(gold)

    def fits(candidate: str) -> bool:
        return candidate not in excluded and normalise(candidate) != gold_key

    for index in rng.integers(len(pool), size=64) if len(pool) else ():
        if fits(pool[index]):
            return pool[index]
    return next((pool[i] for i in rng.permutation(len(pool)) if fits(pool[i])), None)


def same_dialogue_negative(turns: Sequence[str], gold_index: int, rng: np.random.Generator) -> str | None:
    """A turn of the gold's dialogue other than the gold, the turn before it and the turn after it.

    Turns with the same text as those three (or a normalised copy of the gold) are skipped too.
    ``None`` when no turn is left (e.g. the gold is the second of two or three turns).
    """
    gold_key = normalise(turns[gold_index])
    adjacent = {gold_index - 1, gold_index, gold_index + 1}
    banned = {turns[i] for i in adjacent if 0 <= i < len(turns)}
    eligible = [
        turn
        for i, turn in enumerate(turns)
        if i not in adjacent and turn not in banned and normalise(turn) != gold_key and turn.strip()
    ]
    return eligible[rng.integers(len(eligible))] if eligible else None


def echo_negative(context: Sequence[str], gold: str, rng: np.random.Generator) -> str | None:
    """A context turn verbatim: the last with probability :data:`ECHO_LAST`, else another one at random.

    Turns that are normalised copies of the gold are never chosen; ``None`` if every turn is one.
    """
    gold_key = normalise(gold)
    usable = [turn for turn in context if normalise(turn) != gold_key]
    if not usable:
        return None
    last = context[-1] if context[-1] in usable else None
    others = [turn for turn in usable if turn != last]
    if last is not None and (rng.random() < ECHO_LAST or not others):
        return last
    return others[rng.integers(len(others))]


def grounding_negative(context: Sequence[str], gold: str, rng: np.random.Generator) -> str | None:
    """One of the context's grounding lines (those that start with ``your persona:``), uniformly, without
    the prefix; never a normalised copy of the gold. ``None`` where the context has no such line."""
    gold_key = normalise(gold)
    lines = [turn[len(PERSONA_PREFIX) :].strip() for turn in context if turn.startswith(PERSONA_PREFIX)]
    usable = [line for line in lines if line and normalise(line) != gold_key]
    return usable[rng.integers(len(usable))] if usable else None


def speaker_negative(context: Sequence[str], gold: str, rng: np.random.Generator) -> str | None:
    """The previous turn and the gold as one reply, the previous turn first or last (even odds)."""
    if not context or not _is_word(context[-1]):
        return None
    return speaker_join(context[-1], gold, previous_first=rng.random() < 0.5)


def speaker_join(previous: str, gold: str, previous_first: bool) -> str:
    """The previous turn and the gold as one reply, stripped and joined by a space (an empty part left out)."""
    parts = [previous.strip(), gold.strip()]
    return " ".join(part for part in (parts if previous_first else parts[::-1]) if part)


def earlier_negative(context: Sequence[str], gold: str, rng: np.random.Generator) -> str | None:
    """A context turn before the last one, uniformly; never a normalised copy of the gold (or the last
    turn's text). ``None`` for a one-turn context."""
    gold_key, last = normalise(gold), normalise(context[-1]) if context else ""
    usable = [turn for turn in context[:-1] if turn.strip() and normalise(turn) not in (gold_key, last)]
    return usable[rng.integers(len(usable))] if usable else None


def span_negative(context: Sequence[str], rng: np.random.Generator) -> str | None:
    """3-12 consecutive whitespace tokens of one context turn: the last with probability
    :data:`SPAN_LAST`, else another, uniformly. A turn shorter than the span gives all its tokens.
    ``None`` when the chosen turn has no word."""
    if not context:
        return None
    turn = context[-1] if len(context) == 1 or rng.random() < SPAN_LAST else context[rng.integers(len(context) - 1)]
    tokens = turn.split()
    if not any(_is_word(token) for token in tokens):
        return None
    length = min(int(rng.integers(SPAN_WORDS[0], SPAN_WORDS[1] + 1)), len(tokens))
    start = int(rng.integers(len(tokens) - length + 1))
    return " ".join(tokens[start : start + length])


def repeat_negative(gold: str, rng: np.random.Generator) -> str | None:
    """One word said 3-4 times, or (half the time, given two tokens) a 2-4-token span said 2-3 times, in place.

    The repeated word or span contains at least one word (not only punctuation); ``None`` if the gold has none.
    """
    tokens = gold.split()
    if not any(_is_word(token) for token in tokens):
        return None
    if len(tokens) >= 2 and rng.random() < 0.5:
        length = int(rng.integers(2, min(4, len(tokens)) + 1))
        starts = [s for s in range(len(tokens) - length + 1) if any(map(_is_word, tokens[s : s + length]))]
        times = int(rng.integers(2, 4))
    else:
        length = 1
        starts = [s for s, token in enumerate(tokens) if _is_word(token)]
        times = int(rng.integers(3, 5))
    start = starts[rng.integers(len(starts))]
    return " ".join(tokens[:start] + tokens[start : start + length] * times + tokens[start + length :])


def drop_negative(gold: str, rng: np.random.Generator) -> str | None:
    """The gold with 20-50 % of its words dropped, rounded, at least one dropped and one kept.

    Words are the whitespace tokens with a letter or digit; punctuation tokens stay. ``None``
    for golds with fewer than two words.
    """
    tokens = gold.split()
    words = [i for i, token in enumerate(tokens) if _is_word(token)]
    if len(words) < 2:
        return None
    count = min(max(round(rng.uniform(0.2, 0.5) * len(words)), 1), len(words) - 1)
    dropped = {int(i) for i in rng.choice(words, size=count, replace=False)}
    return " ".join(token for i, token in enumerate(tokens) if i not in dropped)


def shuffle_negative(gold: str, rng: np.random.Generator) -> str | None:
    """The gold's tokens shuffled within consecutive windows of 3 or 4 tokens (a local shuffle).

    Retried a few times until the word sequence and the normalised text both change; ``None`` for
    golds with fewer than two words, or when no try changes them (e.g. "ha ha ha").
    """
    tokens = gold.split()
    if sum(map(_is_word, tokens)) < 2:
        return None
    gold_key = normalise(gold)
    for _ in range(ATTEMPTS):
        width = int(rng.integers(3, 5))
        shuffled = []
        for start in range(0, len(tokens), width):
            window = tokens[start : start + width]
            shuffled += [window[i] for i in rng.permutation(len(window))]
        if shuffled != tokens and normalise(" ".join(shuffled)) != gold_key:
            return " ".join(shuffled)
    return None


def bland_negative(replies: Sequence[str], context: Sequence[str], gold: str, rng: np.random.Generator) -> str | None:
    """One of ``replies`` (the run's bland list, :func:`density_train.negatives.bland.bland_list`) uniformly among those that are
    not a normalised copy of the gold nor of a context turn; ``None`` when none is left (or the list is empty)."""
    banned = {normalise(gold), *map(normalise, context)}
    usable = [reply for reply in replies if normalise(reply) not in banned]
    return usable[rng.integers(len(usable))] if usable else None
