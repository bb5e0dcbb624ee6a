"""Grounded training contexts (issue 50, item 1; default off, ``--grounding``).

A grounded context is a training context with "your persona: ..." lines in front of it, as ConvAI2
puts its persona lines, so that grounding at training looks like grounding at test time. The lines:

- ``used`` lines that the gold reply demonstrably uses: sentences of the same corpus's training
  dialogues (never the gold's own dialogue, so never a context turn), chosen by content-word
  overlap with the gold (:func:`density_train.data.text.content_words`), rare words weighing
  more (the sum of the shared words' inverse document frequencies);
- ``distractors`` sentences of the same corpus that share no content word with the gold;

all in a seeded order. Only a ``rate`` share of the training pairs (seeded per pair) gets lines; the
others stay as they are, so the model still sees plain contexts.

**Why this design.** Issue 50's look 3 gave DailyDialog contexts persona lines made of the
responder's own earlier turns; the gold rarely used them, and 300 steps moved nothing (persona
correlation 22 against the soup's 24) while the copy margin went on teaching that context words are
bad. Lines the gold does not use teach nothing: the density can only learn that reusing grounding is
human-like from golds that do reuse it. Hence lines selected *because* the gold shares their content
words, and distractors beside them so that a line's mere presence never predicts the gold.

**Guards.**

- Never a copy of the gold: a sentence is never chosen when its content words cover at least
  :data:`NEAR_TOTAL` of the gold's content-word tokens, or when at least :data:`NEAR_TOTAL` of its own
  content-word tokens are the gold's, or when it is the gold once normalised
  (:func:`density_train.data.text.normalise`). So the gold can use a line without restating it.
- Never benchmark material: sentences whose normalised text is in ``excluded`` are never chosen
  (:func:`benchmark_sentences`: every turn, response and reference of the human-judgment sets of
  the shared data folder, and DailyDialog's validation and test dialogues). The lines come from the
  training dialogues only (DailyDialog's training split is the clean one by default,
  :func:`density_train.data.corpora.clean_dailydialog_train`).
- The copy negatives stay copies of the dialogue's turns: ``density_train.negatives.mix`` makes echo, earlier
  and span negatives from the pair's dialogue turns, never from the persona lines. Whether a
  verbatim copy of a grounding line should be a negative too is a pilot question, not a default.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from .corpora import PERSONA_PREFIX
from .examples import SelectionData
from .text import content_words, normalise

PERSONA = PERSONA_PREFIX + " "  # the prefix of the grounding lines this module writes
NEAR_TOTAL = 0.8  # a line this close to the gold, in either direction, is a copy, not grounding
CANDIDATES = 200  # sentences looked at per gold: those of its rarest content words first, a seeded sample of the last
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+")


def sentences(turn: str) -> list[str]:
    """The sentences of a turn: split after ``.``, ``!`` or ``?`` followed by space."""
    return [part.strip() for part in _SENTENCE_END.split(turn) if part.strip()]


@dataclass(frozen=True)
class GroundingSpec:
    """``--grounding``: ``rate=R,used=U,distractors=D`` (any subset; "" is off)."""

    rate: float = 0.5
    used: int = 2
    distractors: int = 2

    @classmethod
    def parse(cls, text: str) -> GroundingSpec | None:
        """None for ""; a ValueError names ``--grounding`` and the bad item."""
        if not text.strip():
            return None
        values: dict = {}
        for item in text.split(","):
            key, equals, value = (part.strip() for part in item.partition("="))
            if key not in ("rate", "used", "distractors") or not equals:
                raise ValueError(f"--grounding {text!r}: expected rate=R,used=U,distractors=D, got {item!r}")
            try:
                values[key] = float(value) if key == "rate" else int(value)
            except ValueError:
                raise ValueError(f"--grounding {text!r}: {key} must be a number, got {value!r}") from None
        spec = cls(**values)
        if not 0 < spec.rate <= 1 or spec.used < 1 or spec.distractors < 0:
            raise ValueError(f"--grounding {text!r}: needs 0 < rate <= 1, used >= 1 and distractors >= 0")
        return spec

    def __str__(self) -> str:
        return f"rate={self.rate:g},used={self.used},distractors={self.distractors}"


class GroundingIndex:
    """The sentences of one corpus's training dialogues, with an inverted index of their content words.

    ``dialogues``: lists of turns; ``excluded``: normalised texts never to be chosen (benchmark material).
    Sentences with fewer than two content words are left out (they ground nothing).
    """

    def __init__(self, dialogues: Sequence[Sequence[str]], excluded: Iterable[str] = ()):
        excluded = set(excluded)
        self.texts: list[str] = []
        self.keys: list[str] = []  # normalised texts
        self.words: list[frozenset[str]] = []
        self.tokens: list[list[str]] = []
        owners: list[int] = []
        postings: dict[str, list[int]] = {}
        seen: set[str] = set()
        for number, turns in enumerate(dialogues):
            for turn in turns:
                for sentence in sentences(turn):
                    key = normalise(sentence)
                    tokens = content_words(sentence)
                    if len(set(tokens)) < 2 or key in excluded or key in seen:
                        continue
                    seen.add(key)
                    row = len(self.texts)
                    self.texts.append(sentence)
                    self.keys.append(key)
                    self.tokens.append(tokens)
                    self.words.append(frozenset(tokens))
                    owners.append(number)
                    for word in self.words[-1]:
                        postings.setdefault(word, []).append(row)
        self.owners = np.asarray(owners, dtype=np.int64)
        self.postings = {word: np.asarray(rows, dtype=np.int64) for word, rows in postings.items()}
        self.idf = {word: math.log(len(self.texts) / len(rows)) for word, rows in self.postings.items()}

    def __len__(self) -> int:
        return len(self.texts)

    def lines(
        self,
        gold: str,
        dialogue: int,
        spec: GroundingSpec,
        rng: np.random.Generator,
        own: frozenset[str] = frozenset(),
    ) -> list[str] | None:
        """The grounding lines for ``gold`` (of dialogue number ``dialogue`` of the index's dialogues, whose
        sentences are never chosen): ``spec.used`` used lines and ``spec.distractors`` distractors, in a
        seeded order, each as "your persona: <sentence>"; None when no sentence qualifies as used.

        ``own``: the normalised sentences of the gold's dialogue (:func:`dialogue_sentences`). A sentence that
        two dialogues share is indexed once, under the first, so the owner check alone would let the gold's own
        turns (even the turn after it) through when another dialogue repeats them."""
        tokens = content_words(gold)
        gold_words = set(tokens)
        known = sorted((word for word in gold_words if word in self.postings), key=lambda w: (-self.idf[w], w))
        if not known:
            return None
        picked: set[int] = set()
        for word in known:  # rarest first; a common word's sentences only fill what the rare ones leave
            need = CANDIDATES - len(picked)
            if need <= 0:
                break
            rows = self.postings[word]
            # a sample with replacement (repeats merge in the set): a permutation of a common word's postings is slow
            picked.update((rows[rng.integers(len(rows), size=need)] if len(rows) > need else rows).tolist())
        pool = sorted(picked)
        gold_key, scored = normalise(gold), []
        for row in pool:
            if self.owners[row] == dialogue or self.keys[row] in own:
                continue
            if not self.is_grounding(int(row), tokens, gold_words, gold_key):
                continue
            scored.append((-sum(self.idf[w] for w in self.words[row] & gold_words), int(row)))
        if not scored:
            return None
        used = [row for _, row in sorted(scored)[: spec.used]]
        others: list[int] = []
        for _ in range(50 * spec.distractors):
            if len(others) == spec.distractors:
                break
            row = int(rng.integers(len(self.texts)))
            if self.owners[row] == dialogue or self.keys[row] in own:
                continue
            if not self.words[row] & gold_words and row not in others:
                others.append(row)
        chosen = used + others
        return [PERSONA + self.texts[chosen[i]] for i in rng.permutation(len(chosen))]

    def is_grounding(self, row: int, gold_tokens: list[str], gold_words: set[str], gold_key: str) -> bool:
        """Whether sentence ``row`` shares a content word with the gold without being a near-copy of it
        (see :data:`NEAR_TOTAL`)."""
        words, line_tokens = self.words[row], self.tokens[row]
        if not words & gold_words or self.keys[row] == gold_key:
            return False
        covers_gold = sum(token in words for token in gold_tokens) / len(gold_tokens)
        inside_gold = sum(token in gold_words for token in line_tokens) / len(line_tokens)
        return covers_gold < NEAR_TOTAL and inside_gold < NEAR_TOTAL


def ground_pairs(
    data: SelectionData, spec: GroundingSpec, seed: int, excluded: Iterable[str] = ()
) -> tuple[SelectionData, int]:
    """``data`` with grounding lines in front of a ``spec.rate`` share of its contexts, and how many got them.

    Needs the pairs' dialogues (``SelectionData.from_pairs(*load_corpus(args, with_dialogues=True)[0])``):
    each corpus (``data.sources``) gets its own :class:`GroundingIndex` of its dialogues, so lines come
    from the pair's own corpus. Pair ``row`` draws from ``numpy.random.default_rng([seed, row])`` alone,
    so the result does not depend on the order of the work. The pool of negatives stays ``data``'s:
    grounding lines never become random negatives.
    """
    if data.dialogues is None:
        raise ValueError(
            "--grounding needs the pairs' dialogues (density_train.data.corpora.load_corpus with_dialogues=True)"
        )
    excluded = set(excluded)
    sources = data.sources or ["corpus"] * len(data)
    numbers: dict[int, int] = {}  # dialogue list (shared by its pairs) -> its number
    per_source: dict[str, list[Sequence[str]]] = {}
    index_of: dict[int, int] = {}
    for turns, source in zip(data.dialogues, sources):
        if id(turns) not in numbers:
            numbers[id(turns)] = len(numbers)
            group = per_source.setdefault(source, [])
            index_of[id(turns)] = len(group)
            group.append(turns)
    indexes = {source: GroundingIndex(dialogues, excluded) for source, dialogues in per_source.items()}
    contexts, grounded = [], 0
    own_of: dict[int, frozenset[str]] = {}
    for row, (context, gold, turns, source) in enumerate(zip(data.contexts, data.responses, data.dialogues, sources)):
        rng = np.random.default_rng([seed, row])
        if rng.random() < spec.rate:
            own = own_of.get(id(turns))
            if own is None:
                own = own_of[id(turns)] = dialogue_sentences(turns)
            lines = indexes[source].lines(gold, index_of[id(turns)], spec, rng, own)
        else:
            lines = None
        contexts.append([*lines, *context] if lines else context)
        grounded += bool(lines)
    return data.with_contexts(contexts), grounded


def dialogue_sentences(turns: Sequence[str]) -> frozenset[str]:
    """The normalised sentences (:func:`sentences`, :func:`density_train.data.text.normalise`) of a dialogue's turns."""
    return frozenset(normalise(sentence) for turn in turns for sentence in sentences(turn)) - {""}


# The fields of a *.normalized.jsonl row that hold text: the context, the reply, the reference(s), ConvAI2-USR's
# persona lines and TopicalChat-USR's fact (``fact``: a list or a string), FED's whole dialogue.
TEXT_FIELDS = ("context", "response", "reference", "references", "fact", "dialogue")


def _texts(value) -> list[str]:
    """The strings of a field: a string, or a list of strings (other items are skipped)."""
    if isinstance(value, str):
        return [value]
    if isinstance(value, list):
        return [item for item in value if isinstance(item, str)]
    return []


def benchmark_sentences(data_dir: str | Path) -> set[str]:
    """Normalised sentences (:func:`density_train.data.text.normalise`) of the benchmark material below ``data_dir``
    (the shared data folder): every text of its ``*.normalized.jsonl`` sets (:data:`TEXT_FIELDS`; a
    "your persona:" prefix is dropped first), and the turns of ``dailydialog/dialogues_{validation,test}.txt`` if present. A ValueError if
    there is none."""
    data_dir = Path(data_dir)
    texts: list[str] = []
    for path in sorted(data_dir.rglob("*.normalized.jsonl")):
        with open(path, encoding="utf-8") as handle:
            for line in handle:
                if line.strip():
                    row = json.loads(line)
                    texts += [text for field in TEXT_FIELDS for text in _texts(row.get(field))]
    for split in ("validation", "test"):
        path = data_dir / "dailydialog" / f"dialogues_{split}.txt"
        if path.is_file():
            texts += [turn for line in path.read_text(encoding="utf-8").splitlines() for turn in line.split("__eou__")]
    if not texts:
        raise ValueError(f"--grounding-exclude {data_dir}: no *.normalized.jsonl sets or DailyDialog files below it")
    texts = [text.removeprefix(PERSONA_PREFIX).strip() for text in texts]
    return {normalise(sentence) for text in texts for sentence in sentences(text)} - {""}
