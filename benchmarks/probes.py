"""Robustness probes (the paper's Figure 3): corrupted variants of gold responses.

Each probe turns (context, gold response) into a variant that a good metric should score
below the gold. All are seeded.

- ``random``: an utterance from another dialogue of the split.
- ``repetition``: the gold's words, each said twice ("fine fine , , thanks thanks").
- ``speaker_confused``: the last context turn prepended to the gold (one speaker says both).
- ``echo``: the last context turn repeated verbatim as the response.
- ``shuffled``: the gold's words in a random order.
- ``pronoun_swap``: the gold told from the other side: first and second person exchanged
  ("I like my job" -> "you like your job"). ``None`` where the gold has no such pronoun.
- ``truncated``: the gold cut off mid-sentence after its first 40-60 % of words (at least one
  word gone). ``None`` for golds of a single word.
- ``empty``: the empty reply ``""`` (what a generation bug that outputs nothing gives).
- ``punctuation``: a reply of punctuation marks only, one of :data:`PUNCTUATION_REPLIES` ("...", "?!", ":)").
- ``unreadable``: one to three emoji (:data:`EMOJI`), none of which the bundled model's vocabulary knows: every
  token is ``[UNK]``.
- ``special_sep``, ``special_pad``, ``special_cls``: the text of a special token as the whole reply (``[SEP]``,
  ``[PAD]``, ``[CLS]``, :data:`SPECIAL_TOKEN_REPLIES`), which a tokenizer that reads special-token text in user input
  turns into the token itself.
- ``generic_yes``, ``generic_okay``, ``generic_what``, ``generic_sure``, ``generic_dont_know``, ``generic_thanks``,
  ``generic_really``: a short reply that fits any context (``Yes.``, ``Okay.``, ``What do you mean?``, ``Sure.``,
  ``I don't know.``, ``Thank you.``, ``Really?``; :data:`GENERIC_REPLIES`). ``None`` where the gold is that reply, case
  and spacing aside.
- ``generic_fluent``: a fluent, longer reply that fits any context ("That sounds interesting. Tell me more about
  it."), one of :data:`FLUENT_GENERIC_REPLIES`, drawn per case from a generator of its own.

The special-token and short generic replies are constants: they draw from no generator, so adding them changed no
other probe's value; ``generic_fluent`` draws from its own generator, for the same reason. These generic replies are
written here for the probes alone: training's bland replies are mined from the training corpora, never taken from
this list.

The five from ``pronoun_swap`` to ``unreadable`` have no counterpart among the training negatives (``train/negatives/mix.py``,
``train/negatives/kinds.py``): they test what training never showed. The last three are degenerate
replies: the library flags and floors all three (``density_metric.row_flags.FLOORED``), whatever the model
learned, so there the probe checks that floor. This module shares no code with
``train/`` (a test checks it), so the probes stay an independent check of what training teaches.

A probe that does not apply to a case is ``None`` there, and that case is left out of the
probe's accuracy. ``make_probes`` draws the new probes' randomness from generators of their own, so
the earlier probes' values are the same as before they were added, for the same seed.
"""

from __future__ import annotations

import random
import re

PROBES = (
    "random",
    "repetition",
    "speaker_confused",
    "echo",
    "shuffled",
    "pronoun_swap",
    "truncated",
    "empty",
    "punctuation",
    "unreadable",
    "special_sep",
    "special_pad",
    "special_cls",
    "generic_yes",
    "generic_okay",
    "generic_what",
    "generic_sure",
    "generic_dont_know",
    "generic_thanks",
    "generic_really",
    "generic_fluent",
)
SPECIAL_TOKEN_REPLIES = {"special_sep": "[SEP]", "special_pad": "[PAD]", "special_cls": "[CLS]"}
GENERIC_REPLIES = {
    "generic_yes": "Yes.",
    "generic_okay": "Okay.",
    "generic_what": "What do you mean?",
    "generic_sure": "Sure.",
    "generic_dont_know": "I don't know.",
    "generic_thanks": "Thank you.",
    "generic_really": "Really?",
}
# Fluent replies that fit any context: what a chatbot tuned to please says when it has nothing to say.
FLUENT_GENERIC_REPLIES = (
    "That sounds interesting. Tell me more about it.",
    "I see what you mean. I have never thought about it that way.",
    "I'm not sure, but I think you are right.",
    "That's a good question. Let me think about it for a moment.",
    "Oh, really? I didn't know that.",
    "I know what you mean. It happens to me all the time.",
    "That's great to hear. I hope everything goes well.",
    "Well, I guess it depends on the situation.",
)
SHORT_GOLD_WORDS = 10  # golds of 1 to this many words: where a short generic reply wins most often
PUNCTUATION_REPLIES = ("...", "?", "!", "?!", "!!!", ".", "-", ":)", ":(", "..?")
EMOJI = ("😀", "😂", "👍", "🙂", "😊", "🎉", "🙏", "😢", "🤔", "😍", "🔥", "👋", "😎", "🙄", "😅")


def repetition(response: str) -> str:
    return " ".join(word for word in response.split() for _ in range(2))


def speaker_confused(context: list[str], response: str) -> str:
    return f"{context[-1]} {response}"


def echo(context: list[str]) -> str:
    return context[-1]


def shuffled(response: str, rng: random.Random) -> str:
    words = response.split()
    for _ in range(10):  # a few tries to differ from the gold when the words allow it
        rng.shuffle(words)
        if words != response.split() or len(set(words)) < 2:
            break
    return " ".join(words)


# Person swaps, keyed by the lowercased token. "you" is settled by its position (see _you).
_SWAPS = {
    "i": "you",
    "me": "you",
    "my": "your",
    "mine": "yours",
    "myself": "yourself",
    "your": "my",
    "yours": "mine",
    "yourself": "myself",
}
# Contractions written as one token, with a straight or a curly apostrophe.
_CONTRACTION = re.compile(r"^(i|you)(['’])(m|re|ve|ll|d)$", re.IGNORECASE)
# Tokens after which "you" is the subject ("and you are", "do you know", "? you"), so becomes "I".
_SUBJECT_CUES = {
    "and", "but", "so", "or", "because", "if", "when", "that", "what", "where", "how", "why", "than", "as",
    "do", "did", "does", "can", "could", "will", "would", "should", "shall", "may", "might", "must",
    "are", "were", "have", "had", "has", "am", "was", "is", "then", "think", "hope", "know", "guess",
}  # fmt: skip
# Verb forms that follow the swapped subject: "I am" <-> "you are", "I was" <-> "you were".
_AGREEMENT = {("i", "am"): "are", ("you", "are"): "am", ("i", "was"): "were", ("you", "were"): "was"}


def _cased(tokens: list[str], at: int, target: str) -> str:
    """``target`` in the case of ``tokens[at]``: "I" stays capital; what replaces "I" is capitalised
    only at the start of a sentence."""
    if target == "I" or target.startswith(("I'", "I\u2019")):
        return target
    source = tokens[at]
    if source == "I" or source.startswith(("I'", "I\u2019")):
        capital = at == 0 or tokens[at - 1][-1:] in (".", "!", "?")
    else:
        capital = source[:1].isupper()
    return target[:1].upper() + target[1:] if capital else target


def _you(tokens: list[str], at: int) -> str:
    """ "I" where "you" is a subject (start, after punctuation, a conjunction or an auxiliary), else "me"."""
    before = tokens[at - 1].lower() if at else ""
    after = tokens[at + 1].lower() if at + 1 < len(tokens) else ""
    if not before or not any(ch.isalnum() for ch in before) or before in _SUBJECT_CUES:
        return "I"
    return "I" if after in {"are", "were", "have", "will", "can", "do", "know", "think", "want", "need"} else "me"


def pronoun_swap(response: str) -> str | None:
    """``response`` with first and second person pronouns exchanged, verbs agreeing; ``None`` if none occurs."""
    tokens = response.split()
    out = list(tokens)
    subjects = {}  # position of a swapped subject pronoun -> what it became ("i" or "you")
    for at, token in enumerate(tokens):
        low = token.lower()
        contraction = _CONTRACTION.match(token)
        if contraction:
            person, apostrophe, tail = contraction.groups()
            if person.lower() == "i":
                new_person, new_tail = "you", {"m": "re"}.get(tail.lower(), tail)
            else:
                new_person, new_tail = "I", {"re": "m"}.get(tail.lower(), tail)
            out[at] = _cased(tokens, at, new_person) + apostrophe + new_tail
        elif low == "you":
            out[at] = _cased(tokens, at, _you(tokens, at))
            if out[at] == "I":
                subjects[at] = "i"
        elif low in _SWAPS:
            out[at] = _cased(tokens, at, _SWAPS[low])
            if low == "i":
                subjects[at] = "you"
    if out == tokens:
        return None
    for at, became in subjects.items():
        # "I ' m" / "I ’ m" written as three tokens
        if at + 2 < len(tokens) and tokens[at + 1] in ("'", "’") and tokens[at + 2].lower() in ("m", "re"):
            out[at + 2] = "re" if became == "you" else "m"
        # the verb after the subject ("I am" -> "you are") or before it ("are you" -> "am I")
        for near in (at + 1, at - 1):
            if 0 <= near < len(tokens):
                old_person = "you" if became == "i" else "i"
                verb = _AGREEMENT.get((old_person, tokens[near].lower()))
                if verb:
                    out[near] = _cased(tokens, near, verb)
    return " ".join(out)


def truncated(response: str, rng: random.Random) -> str | None:
    """``response`` cut right after its first 40-60 % of words (tokens with a letter or digit),
    keeping at least one word and losing at least one; ``None`` if it has fewer than two words."""
    tokens = response.split()
    word_ends = [at + 1 for at, token in enumerate(tokens) if any(ch.isalnum() for ch in token)]
    if len(word_ends) < 2:
        return None
    keep = min(max(round(rng.uniform(0.4, 0.6) * len(word_ends)), 1), len(word_ends) - 1)
    return " ".join(tokens[: word_ends[keep - 1]])


def punctuation_only(rng: random.Random) -> str:
    """A reply of punctuation marks only: one of :data:`PUNCTUATION_REPLIES`."""
    return rng.choice(PUNCTUATION_REPLIES)


def emoji_only(rng: random.Random) -> str:
    """One to three emoji of :data:`EMOJI`, without spaces (the encoder reads one ``[UNK]``)."""
    return "".join(rng.choice(EMOJI) for _ in range(rng.randint(1, 3)))


def generic(reply: str, gold: str) -> str | None:
    """The generic ``reply``, or ``None`` where ``gold`` is that reply (case and whitespace aside): the gold cannot
    beat itself."""
    same = "".join(reply.split()).lower() == "".join(gold.split()).lower()
    return None if same else reply


def word_count(text: str) -> int:
    """Tokens of ``text`` (split on whitespace) with a letter or digit in them."""
    return sum(any(ch.isalnum() for ch in token) for token in text.split())


def make_probes(dialogues: list[list[str]], n: int, seed: int = 0) -> list[dict]:
    """``n`` probe cases from ``dialogues`` (lists of turns), each with every probe variant.

    Returns dicts with ``context``, ``gold`` and one key per probe in :data:`PROBES` (``None``
    where a probe does not apply). ``pronoun_swap`` and ``truncated`` draw from a generator of
    their own, the degenerate replies (``empty``, ``punctuation``, ``unreadable``) from another and
    ``generic_fluent`` from a third, so the other probes' values do not depend on them; the special-token and short
    generic replies draw from none.
    """
    rng = random.Random(seed)
    rng_new = random.Random(f"probes-added-later:{seed}")
    rng_degenerate = random.Random(f"probes-degenerate:{seed}")
    rng_fluent = random.Random(f"probes-fluent-generic:{seed}")
    positions = [(d, i) for d, turns in enumerate(dialogues) for i in range(1, len(turns))]
    cases = []
    for d, i in rng.sample(positions, min(n, len(positions))):
        context, gold = dialogues[d][:i], dialogues[d][i]
        other = d
        while other == d and len(dialogues) > 1:
            other = rng.randrange(len(dialogues))
        cases.append(
            {
                "context": context,
                "gold": gold,
                "random": rng.choice(dialogues[other]),
                "repetition": repetition(gold),
                "speaker_confused": speaker_confused(context, gold),
                "echo": echo(context),
                "shuffled": shuffled(gold, rng),
                "pronoun_swap": pronoun_swap(gold),
                "truncated": truncated(gold, rng_new),
                "empty": "",
                "punctuation": punctuation_only(rng_degenerate),
                "unreadable": emoji_only(rng_degenerate),
                **SPECIAL_TOKEN_REPLIES,
                **{probe: generic(reply, gold) for probe, reply in GENERIC_REPLIES.items()},
                "generic_fluent": generic(rng_fluent.choice(FLUENT_GENERIC_REPLIES), gold),
            }
        )
    return cases
