"""Robustness probes (the paper's Figure 3): corrupted variants of gold responses.

Each probe turns (context, gold response) into a variant that a good metric should score
below the gold. All are seeded.

- ``random``: an utterance from another dialogue of the split.
- ``repetition``: the gold's words, each said twice ("fine fine , , thanks thanks").
- ``speaker_confused``: the last context turn prepended to the gold (one speaker says both).
- ``echo``: the last context turn repeated verbatim as the response.
- ``shuffled``: the gold's words in a random order.
"""

from __future__ import annotations

import random

PROBES = ("random", "repetition", "speaker_confused", "echo", "shuffled")


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


def make_probes(dialogues: list[list[str]], n: int, seed: int = 0) -> list[dict]:
    """``n`` probe cases from ``dialogues`` (lists of turns), each with every probe variant.

    Returns dicts with ``context``, ``gold`` and one key per probe in :data:`PROBES`.
    """
    rng = random.Random(seed)
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
            }
        )
    return cases
