"""The grounded corpora (issue 55): real dialogues whose replies use their speaker's persona or knowledge.

- ``personachat`` (:func:`load_personachat`): the first 1,072 PersonaChat (ConvAI2) *training* dialogues,
  ``personachat_train_subset/dialogues.jsonl`` of the shared data folder. The replying speaker's persona lines go
  first in every context, as ``your persona: ...`` lines (ConvAI2-USR's form); only that speaker's turns are
  responses (the partner's persona is not given).
- ``topical_chat`` (:func:`load_topical_chat`): the 1,078 Topical-Chat validation conversations,
  ``topical_chat_valid/dialogues.jsonl``, less the 6 flagged ``overlaps_TopicalChat_USR``. Every turn from the
  second on is a response, its context led by the knowledge that turn cites (:func:`turn_knowledge`), one plain
  line without a prefix, as TopicalChat-USR's ``fact`` goes first. Since that line belongs to one turn, each
  response is a row of its own (the turns up to it, ``responses`` = its index).

Neither corpus publishes a split that is ours to use: each gets a seeded validation split by dialogue
(:func:`density_train.data.rows.validation_split`, :data:`VALIDATION_SHARE` of the dialogues, seed
:data:`density_train.data.rows.SPLIT_SEED`), taken before Topical-Chat's conversations become rows. A malformed line is a
ValueError naming the file, the line and the field; nothing is loaded in part.

**A turn's knowledge** (:func:`turn_knowledge`): of the sources the turn lists (``knowledge_source``), the first
factual section ``FS1``-``FS3``, read from the *speaker's* reading set; its Wikipedia lead, whitespace collapsed,
shortened to :data:`KNOWLEDGE_WORDS` whitespace words: whole sentences while they fit, else the first
:data:`KNOWLEDGE_WORDS` words. A turn that cites no factual section (personal knowledge, an article section ``AS``
whose text cannot be built offline) has no line. Fun facts cannot be built offline either, so a turn citing an FS
may use a fact its line lacks. Why a budget: contexts are cut from the left, and the first line goes first.
"""

from __future__ import annotations

import logging
import re
from pathlib import Path

import datasets
import numpy as np

from .rows import PERSONA_PREFIX, SEEDED_SPLITS, SPLIT_SEED, corpus_dataset, jsonl_values, validation_split

logger = logging.getLogger(__name__)

# A tenth of the dialogues for validation (the signals of train/evaluation/grounding_validation.py need some hundreds of
# golds: PersonaChat's 1,072 dialogues give 107, about 790 golds).
VALIDATION_SHARE = 0.1
KNOWLEDGE_WORDS = 48
FACT_SECTIONS = ("FS1", "FS2", "FS3")
PERSONACHAT_FILE = "dialogues.jsonl"  # in personachat_train_subset/
TOPICAL_CHAT_FILE = "dialogues.jsonl"  # in topical_chat_valid/
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+")


def _lines(path: str | Path, default_name: str):
    """(path, line number, object) of every non-blank line of a JSONL file (``path`` may be its folder)."""
    path = Path(path)
    if path.is_dir():
        path = path / default_name
    for number, value in jsonl_values(path):
        if not isinstance(value, dict):
            raise ValueError(f"{path}, line {number}: expected an object, got {type(value).__name__}")
        yield path, number, value


def _field(value: dict, name: str, kind: type, where: str):
    if not isinstance(value.get(name), kind):
        raise ValueError(f"{where}: field {name!r} must be a {kind.__name__}, got {value.get(name)!r:.60}")
    return value[name]


def _text(turn, index: int, where: str) -> str:
    if not isinstance(turn, dict) or not isinstance(turn.get("text"), str) or not turn["text"].strip():
        raise ValueError(f"{where}: field 'turns'[{index}].text must be a non-empty string")
    return turn["text"].strip()


def _split(dialogues: list, split: str, name: str) -> list:
    """``split`` (``train`` or ``validation``) of ``dialogues`` by the seeded split of the module docstring."""
    if split not in SEEDED_SPLITS:
        raise ValueError(f"split must be one of {SEEDED_SPLITS}, got {split!r}")
    chosen = np.zeros(len(dialogues), dtype=bool)
    chosen[validation_split(len(dialogues), SPLIT_SEED, VALIDATION_SHARE)] = True
    keep = chosen if split == "validation" else ~chosen
    kept = [dialogue for dialogue, wanted in zip(dialogues, keep) if wanted]
    logger.info("%s %s: %d of %d dialogues", name, split, len(kept), len(dialogues))
    return kept


# --- PersonaChat ------------------------------------------------------------------------------


def read_personachat(path: str | Path) -> list[dict]:
    """The dialogues of ``personachat_train_subset/dialogues.jsonl`` as corpus rows (``turns``, ``prefix``: the
    owner's persona lines as ``your persona: ...``, ``responses``: the persona owner's turns after the first)."""
    rows = []
    for source, number, value in _lines(path, PERSONACHAT_FILE):
        where = f"{source}, line {number}"
        persona = _field(value, "persona_owner_persona", list, where)
        if not persona or not all(isinstance(line, str) and line.strip() for line in persona):
            raise ValueError(f"{where}: field 'persona_owner_persona' must be a list of non-empty strings")
        turns, responses = [], []
        for index, turn in enumerate(_field(value, "turns", list, where)):
            turns.append(_text(turn, index, where))
            speaker = turn.get("speaker")
            if speaker not in ("partner", "persona_owner"):
                raise ValueError(
                    f"{where}: field 'turns'[{index}].speaker must be 'partner' or 'persona_owner', got {speaker!r}"
                )
            if speaker == "persona_owner" and index >= 1:
                responses.append(index)
        prefix = [f"{PERSONA_PREFIX} {line.strip()}" for line in persona]
        rows.append({"turns": turns, "prefix": prefix, "responses": responses})
    return rows


def load_personachat(path: str | Path, split: str) -> datasets.Dataset:
    """PersonaChat's training subset (:func:`read_personachat`), split by dialogue (module docstring)."""
    return corpus_dataset(_split(read_personachat(path), split, "personachat"))


# --- Topical-Chat -----------------------------------------------------------------------------


def shorten(text: str, words: int = KNOWLEDGE_WORDS) -> str:
    """``text`` with whitespace collapsed, cut to at most ``words`` whitespace words: whole sentences while
    they fit, else the first ``words`` words."""
    tokens = text.split()
    if len(tokens) <= words:
        return " ".join(tokens)
    kept: list[str] = []
    for sentence in _SENTENCE_END.split(" ".join(tokens)):
        size = len(sentence.split())
        if len(kept) + size > words:
            break
        kept += sentence.split()
    return " ".join(kept or tokens[:words])


def turn_knowledge(knowledge: dict, turn: dict, words: int = KNOWLEDGE_WORDS) -> str | None:
    """The knowledge line of one Topical-Chat turn (module docstring), or ``None`` when it cites no factual
    section. ``knowledge``: the conversation's ``{agent: {FSk: {entity, wiki_lead}}}``. A KeyError names
    what is missing."""
    cited = [source for source in turn.get("knowledge_source", []) if source in FACT_SECTIONS]
    if not cited:
        return None
    section = knowledge.get(turn["speaker"], {}).get(cited[0])
    if not isinstance(section, dict) or not isinstance(section.get("wiki_lead"), str):
        raise KeyError(f"knowledge.{turn['speaker']}.{cited[0]}.wiki_lead")
    return shorten(section["wiki_lead"], words) or None


def read_topical_chat(path: str | Path) -> list[list[dict]]:
    """The conversations of ``topical_chat_valid/dialogues.jsonl`` without those flagged
    ``overlaps_TopicalChat_USR``, each as its list of corpus rows (one per response, module docstring)."""
    conversations, dropped = [], 0
    for source, number, value in _lines(path, TOPICAL_CHAT_FILE):
        where = f"{source}, line {number}"
        flagged = value.get("overlaps_TopicalChat_USR")
        if not isinstance(flagged, bool):
            raise ValueError(f"{where}: field 'overlaps_TopicalChat_USR' must be true or false, got {flagged!r}")
        knowledge = _field(value, "knowledge", dict, where)
        turns = _field(value, "turns", list, where)
        texts = [_text(turn, index, where) for index, turn in enumerate(turns)]
        rows = []
        for index in range(1, len(turns)):
            turn = turns[index]
            if not isinstance(turn.get("knowledge_source"), list) or turn.get("speaker") not in knowledge:
                raise ValueError(
                    f"{where}: field 'turns'[{index}] needs a 'knowledge_source' list and a 'speaker' of 'knowledge'"
                )
            try:
                line = turn_knowledge(knowledge, turn)
            except KeyError as err:
                raise ValueError(f"{where}: field 'turns'[{index}] cites {err.args[0]}, which is missing") from None
            rows.append({"turns": texts[: index + 1], "prefix": [line] if line else [], "responses": [index]})
        if flagged:
            dropped += 1
        else:
            conversations.append(rows)
    logger.info("topical_chat: %d conversations flagged overlaps_TopicalChat_USR left out", dropped)
    return conversations


def load_topical_chat(path: str | Path, split: str) -> datasets.Dataset:
    """Topical-Chat's validation conversations (:func:`read_topical_chat`), split by conversation (module
    docstring), one row per response."""
    return corpus_dataset([row for rows in _split(read_topical_chat(path), split, "topical_chat") for row in rows])


# The loader of each grounded corpus, ``loader(path, split)``, by its --corpus name.
LOADERS = {"personachat": load_personachat, "topical_chat": load_topical_chat}
