"""A validation signal for grounding (issue 50): does the score of human replies rise with their use of
the speaker's persona, and does it still put copies of the last turn below them?

The set: gold replies of ConvAI2 validation dialogues that no benchmark here draws from
(``../shared/data/convai2/valid_unused_by_benchmarks.txt``, 598 dialogues, 4,661 persona-owner
replies), read with :func:`density_train.data.corpora.load_convai2`: each context is the persona lines
("your persona: ...") first, then the dialogue's turns before the reply. A seeded sample of
:data:`DEFAULT_PAIRS` golds (``numpy.random.default_rng(seed)``, without replacement) is scored,
each beside the echo of its last turn and :data:`DEFAULT_DISTRACTORS` replies of other dialogues of
the set. For validation only: ConvAI2 reuses personas across dialogues, so training on these
dialogues would show the model persona lines of the benchmarks' contexts.

Metrics (``grounding/...``; scores are "higher is better", DEnsity's -distance):

- ``persona_spearman``: 100 x Spearman of the golds' scores with their persona overlap
  (:func:`content_overlap` of the reply with the persona lines, their "your persona:" prefix
  removed). People reward replies that use their persona (ConvAI2-USR: +21);
- ``last_turn_spearman``: 100 x Spearman of the scores with the last-turn overlap
  (:func:`content_overlap` with the context's last turn). People do not reward it (-6);
- ``recall_at_1``: the share of golds that score strictly above all of their distractors (the gold
  loses a tie), with the gold's own context;
- ``echo_win``: the share of contexts whose gold outscores the echo of the last turn (the last
  context turn verbatim) in the same context, ties counted half; beside it ``echo_auc``, the
  unpaired Mann-Whitney AUC of all gold scores against all echo scores (what
  ``results/experiments/copy-training-longer/convai2_valid_check.py`` reported).

**Overlap.** Content words: the text lowercased, cut into runs of ``[a-z0-9]`` (so "don't" gives
"don" and "t"), without the English stop words of :data:`density_train.data.text.STOP_WORDS` (NLTK's list, written out)
and without one-character tokens. A reply's overlap with a reference text is the number of its
content-word tokens (repeats counted) that occur among the reference's content words, divided by
the number of its content-word tokens: a share in [0, 1], 0 for a reply without content words.

Run it standalone on a checkpoint::

    python -m train grounding-validation --checkpoint density_metric/default --out grounding.json

or from training (``--grounding-valid FILE``): the trainer scores the same groups with the current
encoder and the evaluation Gaussian (:func:`group_metrics`). ``--grounded-valid personachat,topical_chat``
adds the same signal on the held-out split of each grounded corpus (:mod:`density_train.data.grounded_corpora`,
:meth:`GroundingSet.from_dialogues` with ``name="grounding_<corpus>"``): there a gold's "persona" overlap is its
overlap with its context's grounding lines (Topical-Chat: the cited knowledge), and only golds with lines count.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np

from density_metric.correlation import auc, spearman

from ..data.corpora import PERSONA_PREFIX as PERSONA
from ..data.corpora import load_convai2
from ..data.text import content_words, normalise

DEFAULT_FILE = "../shared/data/convai2/valid_unused_by_benchmarks.txt"
DEFAULT_PAIRS = 1200
DEFAULT_SEED = 0
DEFAULT_DISTRACTORS = 4  # random replies beside each gold for Recall@1: 1 in 5
USES_LINES = 0.2  # a reply "uses its lines" from this content-word overlap with them (--overlap-source lines)


def content_overlap(reply: str, reference: str) -> float:
    """The share of ``reply``'s content-word tokens that occur among ``reference``'s content words;
    0.0 for a reply without content words."""
    words = content_words(reply)
    if not words:
        return 0.0
    known = set(content_words(reference))
    return sum(word in known for word in words) / len(words)


def persona_lines(context: Sequence[str]) -> str:
    """The context's persona lines without their "your persona:" prefix, joined by spaces."""
    return grounding_text([turn for turn in context if turn.startswith(PERSONA)])


def grounding_text(lines: Sequence[str]) -> str:
    """A context's grounding lines (a corpus row's ``prefix``) joined by spaces, a "your persona:" prefix removed."""
    return " ".join(line[len(PERSONA) :].strip() if line.startswith(PERSONA) else line.strip() for line in lines)


def line_use(contexts: Sequence[Sequence[str]], replies: Sequence[str], counts: Sequence[int]) -> np.ndarray:
    """Per reply, its :func:`content_overlap` with its context's first ``counts[i]`` turns (its grounding lines,
    :func:`grounding_text`); 0.0 where it has none."""
    return np.array(
        [
            content_overlap(reply, grounding_text(context[:n])) if n else 0.0
            for context, reply, n in zip(contexts, replies, counts)
        ]
    )


@dataclass
class GroundingSet:
    """The scored groups: per gold, its context, the gold, the echo of its last turn and its distractors.

    contexts: n lists of turns (persona lines first); golds, echoes: n strings; distractors: n lists of
    k strings; persona, last_turn: (n,) float64 overlaps of the golds (:func:`content_overlap`).
    """

    contexts: list[list[str]]
    golds: list[str]
    echoes: list[str]
    distractors: list[list[str]]
    persona: np.ndarray
    last_turn: np.ndarray
    seed: int = DEFAULT_SEED
    source: str = ""
    name: str = "grounding"  # the metrics' prefix: grounding/... for ConvAI2, grounding_<corpus>/... for a corpus
    lines: list[int] | None = None  # per context, how many of its first turns are grounding lines (None: unknown)

    def __len__(self) -> int:
        return len(self.golds)

    def metric_names(self) -> tuple[str, ...]:
        """The names :func:`group_metrics` returns for this set (Recall@1 only with distractors)."""
        names = ("persona_spearman", "last_turn_spearman", "echo_win", "echo_auc")
        names += ("recall_at_1",) if any(self.distractors) else ()
        return tuple(f"{self.name}/{name}" for name in names)

    def with_lines_kept(self, tokenizer, pair_format) -> GroundingSet:
        """This set with its contexts cut by :meth:`PairFormat.keep_lines` (the grounding lines read whole where
        they fit); golds, echoes, distractors and overlaps unchanged (the last turn always stays)."""
        if self.lines is None:
            raise ValueError(f"{self.name}: which turns are grounding lines is not known")
        contexts = pair_format.keep_lines(tokenizer, self.contexts, self.lines)
        return replace(self, contexts=contexts)

    def groups(self) -> list[list[str]]:
        """Per context, its candidates: the gold, the echo, then the distractors (1 + 1 + k)."""
        return [[gold, echo, *others] for gold, echo, others in zip(self.golds, self.echoes, self.distractors)]

    @classmethod
    def from_dialogues(
        cls,
        dialogues,
        n: int = DEFAULT_PAIRS,
        seed: int = DEFAULT_SEED,
        distractors: int = DEFAULT_DISTRACTORS,
        source: str = "",
        name: str = "grounding",
    ) -> GroundingSet:
        """``n`` seeded golds of ``dialogues`` (a corpus dataset of :mod:`density_train.data.corpora` whose ``prefix`` holds
        the grounding lines, e.g. :func:`density_train.data.corpora.load_convai2`'s; all of them if it has fewer), each with
        ``distractors`` distinct replies of other dialogues of the set that are not copies of it
        (:func:`density_train.data.text.normalise`), drawn from the stream ``[seed, 1]``. Only golds whose context has
        grounding lines are drawn (every ConvAI2 gold has). A gold's grounding use (``persona``) is its
        :func:`content_overlap` with those lines, a "your persona:" prefix removed (:func:`line_use`)."""
        if n < 1 or distractors < 0:
            raise ValueError(f"the grounding set needs n >= 1 and distractors >= 0, got {n} and {distractors}")
        contexts, golds, owners, counts = [], [], [], []
        for number, row in enumerate(dialogues):
            turns, prefix = list(row["turns"]), list(row["prefix"])
            for i in row["responses"] if prefix else ():
                contexts.append(prefix + turns[:i])
                golds.append(turns[i])
                owners.append(number)
                counts.append(len(prefix))
        if not golds:
            raise ValueError(f"{source or 'the grounding set'}: no gold replies")
        owners = np.asarray(owners)
        rng = np.random.default_rng(seed)
        rows = np.sort(rng.choice(len(golds), size=min(n, len(golds)), replace=False))
        draw = np.random.default_rng([seed, 1])
        chosen = []
        for row in rows:
            key, picked = normalise(golds[row]), []
            for _ in range(1000 * max(distractors, 1)):
                if len(picked) == distractors:
                    break
                other = int(draw.integers(len(golds)))
                text = golds[other]
                if owners[other] != owners[row] and normalise(text) != key and text not in picked:
                    picked.append(text)
            if len(picked) < distractors:
                raise ValueError(f"{source or 'the grounding set'}: too few replies for {distractors} distractors")
            chosen.append(picked)
        contexts, golds, counts = [contexts[i] for i in rows], [golds[i] for i in rows], [counts[i] for i in rows]
        persona = line_use(contexts, golds, counts)
        last = np.array([content_overlap(g, c[-1]) for c, g in zip(contexts, golds)])
        echoes = [context[-1] for context in contexts]
        return cls(contexts, golds, echoes, chosen, persona, last, seed, source, name, counts)

    @classmethod
    def load(
        cls,
        path: str | Path = DEFAULT_FILE,
        n: int = DEFAULT_PAIRS,
        seed: int = DEFAULT_SEED,
        distractors: int = DEFAULT_DISTRACTORS,
    ) -> GroundingSet:
        """:meth:`from_dialogues` of a ConvAI2 file (ParlAI self_original format)."""
        return cls.from_dialogues(load_convai2(path), n, seed, distractors, str(path))


def grounding_metrics(
    gold: np.ndarray,
    echo: np.ndarray,
    distractors: np.ndarray,
    persona: np.ndarray,
    last_turn: np.ndarray,
    name: str = "grounding",
) -> dict[str, float]:
    """The metrics of the module docstring from scores: gold (n,), echo (n,), distractors (n, k) (k may
    be 0: no Recall@1), and the golds' overlaps persona (n,) and last_turn (n,); named ``name/...``."""
    gold, echo = np.asarray(gold, dtype=np.float64), np.asarray(echo, dtype=np.float64)
    distractors = np.asarray(distractors, dtype=np.float64).reshape(len(gold), -1)
    metrics = {
        f"{name}/persona_spearman": 100 * spearman(gold, persona),
        f"{name}/last_turn_spearman": 100 * spearman(gold, last_turn),
        f"{name}/echo_win": float(np.mean((gold > echo) + 0.5 * (gold == echo))),
        f"{name}/echo_auc": auc(gold, echo),
    }
    if distractors.shape[1]:
        metrics[f"{name}/recall_at_1"] = float(np.mean(gold > distractors.max(axis=1)))
    return metrics


def group_metrics(scores: np.ndarray, data: GroundingSet) -> dict[str, float]:
    """:func:`grounding_metrics` from the scores (n, 2 + k) of :meth:`GroundingSet.groups`' candidates."""
    scores = np.asarray(scores, dtype=np.float64).reshape(len(data), -1)
    return grounding_metrics(scores[:, 0], scores[:, 1], scores[:, 2:], data.persona, data.last_turn, data.name)


def evaluate_scores(score: Callable[[list, list], np.ndarray], data: GroundingSet) -> dict[str, float]:
    """The metrics with ``score(contexts, responses) -> (m,)`` (higher is better) on every candidate."""
    groups = data.groups()
    contexts = [context for context, group in zip(data.contexts, groups) for _ in group]
    responses = [text for group in groups for text in group]
    return group_metrics(np.asarray(score(contexts, responses)), data)
