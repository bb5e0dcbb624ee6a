"""Dialogue corpora as ``datasets.Dataset`` with the columns of :mod:`density_train.data.rows`

- ``turns``: list of str, oldest first;
- ``prefix``: list of str put before every context (ConvAI2's persona lines), often empty;
- ``responses``: indices of the turns that become training responses.

Every response is scored against ``prefix + turns[:i]``.

Corpora (``--corpus``, one name or a weighted mix, :func:`parse_corpus_mix`):

- ``dailydialog`` (:func:`load_dailydialog`): the official splits; for training, the training
  dialogues that also occur in validation or test (case and spacing aside, :func:`dialogue_key`)
  are left out by default (:func:`clean_dailydialog_train`, ``--dailydialog-train``);
- ``self_dialogue`` (:func:`load_self_dialogue`): the Self-dialogue corpus (Fainberg et al. 2018,
  BSD-3), ``dialogues.jsonl`` of the shared data folder;
- ``chitchat`` (:func:`load_chitchat`): the BYU Chit-Chat Challenge (MIT), read from the installed
  PyPI package ``chitchat-dataset==0.9.0``;
- ``personachat``, ``topical_chat`` (:mod:`density_train.data.grounded_corpora`): real grounded dialogues, the persona lines
  or the cited knowledge first in each context;
- ``convai2``, ``jsonl``, ``hub``: files or a Hub dataset the user names.

Self-dialogue and Chit-Chat publish no split: each gets a seeded 5 % validation split by dialogue
(:func:`validation_split`, seed :data:`SPLIT_SEED`).
"""

from __future__ import annotations

import json
import logging
import math
import re
from collections.abc import Sequence
from importlib import resources
from pathlib import Path

import datasets
import numpy as np

from .rows import (
    PERSONA_PREFIX,
    SEEDED_SPLITS,
    SPLIT_SEED,
    VALIDATION_SHARE,
    corpus_dataset,
    jsonl_values,
    text_lines,
    validation_split,
)

logger = logging.getLogger(__name__)

SPLITS = ("train", "validation", "test")
# Seed of the order in which a weighted mix takes each corpus's dialogues (and interleaves them).
MIX_SEED = 0
CHITCHAT_PACKAGE = "chitchat_dataset"  # PyPI chitchat-dataset==0.9.0


def clean_turns(turns) -> list[str]:
    """``turns`` stripped, blank ones dropped (a blank turn would be a reply, or a context turn, of no words)."""
    return [turn.strip() for turn in turns if turn.strip()]


def every_turn(turns: list[str], prefix: list[str] | None = None) -> dict:
    """A dialogue whose every turn from the second on is a response."""
    return {"turns": turns, "prefix": prefix or [], "responses": list(range(1, len(turns)))}


def load_dailydialog(data_dir: str | Path, split: str) -> datasets.Dataset:
    """DailyDialog from its original ``dialogues_{split}.txt`` (turns end with ``__eou__``); the
    official split as published (see :func:`clean_dailydialog_train` for training)."""
    return corpus_dataset([every_turn(turns) for turns in _dailydialog_turns(data_dir, split)])


def _dailydialog_turns(data_dir: str | Path, split: str) -> list[list[str]]:
    if split not in SPLITS:
        raise ValueError(f"split must be one of {SPLITS}, got {split!r}")
    dialogues = []
    for _, line in text_lines(Path(data_dir) / f"dialogues_{split}.txt"):
        turns = [turn.strip() for turn in line.split("__eou__")]
        dialogues.append([turn for turn in turns if turn])
    return dialogues


_SPACE = re.compile(r"\s+")


def dialogue_key(turns: Sequence[str]) -> str:
    """A dialogue's text lowercased, with every whitespace character removed and the turns joined
    without a mark: two dialogues with the same key are the same dialogue, case and spacing aside
    (DailyDialog's copies differ in spacing, e.g. "Thank you.How" against "Thank you . How", and
    now and then where a turn ends)."""
    return _SPACE.sub("", "".join(turns).lower())


def clean_dailydialog_train(data_dir: str | Path) -> tuple[datasets.Dataset, int]:
    """DailyDialog's training dialogues without those that also occur in its validation or test split
    (:func:`dialogue_key`), and how many were left out.

    The official splits overlap: on the published files 97 validation and 129 test dialogues occur in
    the training split under this key (the shared data README's 77 and 106 collapse whitespace
    instead of removing it), and 258 of the 11,118 training dialogues are left out. A model compared
    with people on sets drawn from DailyDialog's test dialogues should not have trained on them.
    """
    train = _dailydialog_turns(data_dir, "train")
    held_out = {
        dialogue_key(turns) for split in ("validation", "test") for turns in _dailydialog_turns(data_dir, split)
    }
    kept = [turns for turns in train if dialogue_key(turns) not in held_out]
    return corpus_dataset([every_turn(turns) for turns in kept]), len(train) - len(kept)


def _split_rows(dialogues: list[list[str]], split: str, name: str) -> datasets.Dataset:
    """``split`` (``train`` or ``validation``) of ``dialogues`` by :func:`validation_split`."""
    if split not in SEEDED_SPLITS:
        raise ValueError(f"split must be one of {SEEDED_SPLITS}, got {split!r}")
    chosen = np.zeros(len(dialogues), dtype=bool)
    chosen[validation_split(len(dialogues))] = True
    keep = chosen if split == "validation" else ~chosen
    rows = [every_turn(turns) for turns, kept in zip(dialogues, keep) if kept]
    logger.info(
        "%s %s: %d of %d dialogues (validation: %.0f %%, seed %d)",
        name,
        split,
        len(rows),
        len(dialogues),
        100 * VALIDATION_SHARE,
        SPLIT_SEED,
    )
    return corpus_dataset(rows)


def read_self_dialogue(path: str | Path) -> list[list[str]]:
    """The Self-dialogue corpus's conversations (lists of turns, in file order) from ``dialogues.jsonl``
    (one ``{"id", "topic", "turns"}`` object a line; ``path`` may be its folder)."""
    path = Path(path)
    if path.is_dir():
        path = path / "dialogues.jsonl"
    dialogues = []
    for number, value in jsonl_values(path):
        turns = value.get("turns") if isinstance(value, dict) else None
        if not isinstance(turns, list) or not all(isinstance(turn, str) for turn in turns):
            raise ValueError(f"{path}, line {number}: expected an object with a 'turns' list of strings")
        turns = clean_turns(turns)
        if len(turns) >= 2:
            dialogues.append(turns)
    return dialogues


def load_self_dialogue(path: str | Path, split: str) -> datasets.Dataset:
    """The Self-dialogue corpus (24,155 conversations, one writer playing both sides), split by
    :func:`validation_split`: every turn from the second on is a response."""
    return _split_rows(read_self_dialogue(path), split, "self_dialogue")


def read_chitchat(source: str | Path | None = None) -> list[list[str]]:
    """The BYU Chit-Chat Challenge's two-person conversations as lists of turns, in the package's order.

    ``source``: a ``dataset.json`` (tests); by default the file inside the installed package
    ``chitchat-dataset==0.9.0``, read through :mod:`importlib.resources`. Each conversation's messages
    are read in order, empty ones dropped; a turn is one person's consecutive messages joined by a
    space. Conversations in which only one person talks (3,150 of the package's 7,168) are left out,
    4,017 remain (in one two-sided chat the second person's only message is empty).
    """
    if source is None:
        try:
            text = resources.files(CHITCHAT_PACKAGE).joinpath("dataset.json").read_text(encoding="utf-8")
        except ModuleNotFoundError:
            raise ValueError(
                "the chitchat corpus needs the package chitchat-dataset==0.9.0: pip install -e '.[train]'"
            ) from None
    else:
        text = Path(source).read_text(encoding="utf-8")
    dialogues = []
    for conversation in json.loads(text).values():
        turns, senders = [], []
        for message in (m for group in conversation["messages"] for m in group):
            words = message["text"].strip()
            if not words:
                continue
            if senders and senders[-1] == message["sender"]:
                turns[-1] += " " + words
            else:
                turns.append(words)
                senders.append(message["sender"])
        if len(set(senders)) >= 2:
            dialogues.append(turns)
    return dialogues


def load_chitchat(split: str, source: str | Path | None = None) -> datasets.Dataset:
    """The BYU Chit-Chat Challenge (:func:`read_chitchat`), split by :func:`validation_split`."""
    return _split_rows(read_chitchat(source), split, "chitchat")


def load_convai2(path: str | Path) -> datasets.Dataset:
    """ConvAI2 / PersonaChat in ParlAI ``self_original`` text format.

    The ``your persona:`` lines become the context prefix; only the persona owner's
    ("self") turns become responses. Lines are ``N partner<TAB>self[<TAB>...]``; the
    numbering restarts at 1 for each dialogue.
    """
    rows: list[dict] = []
    current: dict | None = None
    for number, line in text_lines(path):
        line = line.rstrip("\n")
        if not line.strip():
            continue
        index, _, text = line.partition(" ")
        if index == "1" or current is None:
            current = {"turns": [], "prefix": [], "responses": []}
            rows.append(current)
        if text.startswith(PERSONA_PREFIX) and not current["turns"]:
            current["prefix"].append(text)
            continue
        fields = text.split("\t")
        if len(fields) < 2:
            raise ValueError(f"{path}, line {number}: expected 'partner<TAB>self', got {text[:60]!r}")
        current["turns"] += [fields[0].strip(), fields[1].strip()]
        current["responses"].append(len(current["turns"]) - 1)
    return corpus_dataset(rows)


def load_jsonl_dialogues(path: str | Path, field: str = "turns") -> datasets.Dataset:
    """A JSONL file with one dialogue per line: a list of turns, or an object with ``field``; its turns
    :func:`clean_turns`, as every reader of dialogues as lists of turns does."""
    rows, paired = [], 0
    for number, value in jsonl_values(path):
        turns = value.get(field) if isinstance(value, dict) else value
        if not isinstance(turns, list) or not all(isinstance(t, str) for t in turns):
            raise ValueError(f"{path}, line {number}: expected a list of strings (or {{{field!r}: [...]}})")
        turns = clean_turns(turns)
        rows.append(every_turn(turns))
        paired += len(turns) >= 2
    if not paired:  # an empty file failed inside datasets; one of one-turn dialogues as "0 training pairs"
        raise ValueError(f"{path}: no dialogue of 2 or more turns ({len(rows)} dialogues), so no (context, reply) pair")
    return corpus_dataset(rows)


def load_hub_dialogues(repo_id: str, split: str, field: str = "turns", **kwargs) -> datasets.Dataset:
    """A Hub dataset (``datasets.load_dataset``) whose ``field`` column holds lists of turns (:func:`clean_turns`)."""
    source = datasets.load_dataset(repo_id, split=split, **kwargs)
    if field not in source.column_names:
        raise ValueError(f"{repo_id} has no column {field!r}; columns: {source.column_names}")
    return corpus_dataset([every_turn(clean_turns(turns)) for turns in source[field]])


def response_pairs(dialogues: datasets.Dataset | list) -> tuple[list[list[str]], list[str]]:
    """(contexts, responses): each response turn against the prefix and the turns before it.

    Accepts a corpus dataset (above) or plain lists of turns.
    """
    contexts, responses, _, _ = response_pairs_with_dialogues(dialogues)
    return contexts, responses


def response_pairs_with_dialogues(
    dialogues: datasets.Dataset | list,
) -> tuple[list[list[str]], list[str], list[list[str]], list[int]]:
    """(contexts, responses, turns, turn_indices): :func:`response_pairs` plus, per pair, its
    dialogue's turns (without the prefix; one list shared by the dialogue's pairs) and the
    gold's index in them, for negatives drawn from the same dialogue. ``SelectionData.from_pairs``
    takes the four lists as they come.
    """
    rows = dialogues if isinstance(dialogues, datasets.Dataset) else [every_turn(list(t)) for t in dialogues]
    contexts, responses, turns_of, indices = [], [], [], []
    for row in rows:
        turns = list(row["turns"])
        for i in row["responses"]:
            contexts.append(list(row["prefix"]) + turns[:i])
            responses.append(turns[i])
            turns_of.append(turns)
            indices.append(int(i))
    return contexts, responses, turns_of, indices


# --- the corpus flags of the commands ---------------------------------------------------------

CORPORA = ("dailydialog", "self_dialogue", "chitchat", "personachat", "topical_chat", "convai2", "jsonl", "hub")
# The flags each corpus needs.
_NEEDED = {
    "dailydialog": ["data_dir"],
    "self_dialogue": ["self_dialogue"],
    "chitchat": [],
    "personachat": ["personachat"],
    "topical_chat": ["topical_chat"],
    "convai2": ["train_file", "valid_file"],
    "jsonl": ["train_file", "valid_file"],
    "hub": ["hub_id"],
}
_FLAG_OF = {
    "dailydialog": "--data-dir",
    "self_dialogue": "--self-dialogue",
    "chitchat": "chitchat-dataset",
    "personachat": "--personachat",
    "topical_chat": "--topical-chat",
    "hub": "--hub-id",
}


def parse_corpus_mix(text: str, flag: str = "--corpus") -> tuple[tuple[str, float], ...]:
    """``--corpus``: one corpus name, or ``name:weight`` items separated by commas (a bare name weighs
    1), e.g. ``dailydialog:1,self_dialogue:0.5,chitchat:0.5``; a ValueError names the flag and the item."""
    mix = []
    for item in str(text).split(","):
        name, colon, weight = (part.strip() for part in item.partition(":"))
        if name not in CORPORA:
            raise ValueError(f"{flag} {text!r}: unknown corpus {name!r}; corpora: {', '.join(CORPORA)}")
        if name in (seen[0] for seen in mix):
            raise ValueError(f"{flag} {text!r}: {name!r} is given twice")
        try:
            value = float(weight) if colon else 1.0
        except ValueError:
            value = float("nan")
        if not math.isfinite(value) or value <= 0:
            raise ValueError(f"{flag} {text!r}: the weight of {name!r} must be a positive number, got {weight!r}")
        mix.append((name, value))
    names = [name for name, _ in mix]
    if "convai2" in names and "jsonl" in names:
        raise ValueError(f"{flag} {text!r}: convai2 and jsonl both read --train-file; mix at most one of them")
    return tuple(mix)


def mix_dialogues(
    corpora: Sequence[tuple[str, float, datasets.Dataset]], seed: int = MIX_SEED
) -> tuple[datasets.Dataset, list[str]]:
    """The dialogues of a weighted mix and each one's corpus name.

    ``corpora``: (name, weight, dialogues) each. Weights are relative shares of the mix's *pairs*
    (responses): the mix is the largest one in which each corpus has its share and no dialogue
    repeats, i.e. N = min over corpora of (its pairs / its share) pairs in all. Each corpus gives
    whole dialogues in a seeded order (``[seed, i]`` for the i-th corpus) until it has its share of N
    (the corpus that sets N gives all of its dialogues), and the chosen dialogues of every corpus are
    interleaved in a seeded order (``[seed, len(corpora)]``), so that any first-N-pairs cut (``--limit``,
    ``--valid-limit``) is a mix too. One corpus comes back whole and in order.
    """
    if len(corpora) == 1:
        name, _, dialogues = corpora[0]
        return dialogues, [name] * len(dialogues)
    total_weight = sum(weight for _, weight, _ in corpora)
    pairs = [np.asarray([len(r) for r in dialogues["responses"]], dtype=np.int64) for _, _, dialogues in corpora]
    for counts, (name, _, _) in zip(pairs, corpora):
        if not counts.sum():
            raise ValueError(f"--corpus: {name!r} has no pairs in this split, so the mix cannot give it its share")
    size = min(counts.sum() * total_weight / weight for counts, (_, weight, _) in zip(pairs, corpora))
    chosen: list[tuple[int, int]] = []  # (corpus, dialogue)
    for i, ((name, weight, _), counts) in enumerate(zip(corpora, pairs)):
        quota = size * weight / total_weight
        order = np.random.default_rng([seed, i]).permutation(len(counts))
        taken = np.cumsum(counts[order])
        last = int(np.searchsorted(taken, quota - 1e-9))  # the first prefix that reaches the quota
        picked = order[: min(last + 1, len(order))]
        chosen += [(i, int(j)) for j in picked]
        logger.info(
            "corpus mix: %s gives %d of %d dialogues, %d pairs (weight %g)",
            name,
            len(picked),
            len(counts),
            int(counts[picked].sum()),
            weight,
        )
    chosen = [chosen[k] for k in np.random.default_rng([seed, len(corpora)]).permutation(len(chosen))]
    tables = [dialogues.to_list() for _, _, dialogues in corpora]
    rows = [tables[i][j] for i, j in chosen]
    return corpus_dataset(rows), [corpora[i][0] for i, _ in chosen]


def add_corpus_arguments(parser) -> None:
    parser.add_argument(
        "--corpus",
        default="dailydialog",
        help=f"a corpus ({', '.join(CORPORA)}), or a weighted mix, e.g. dailydialog:1,self_dialogue:0.5,chitchat:0.5 "
        "(weights are shares of the training pairs; a context's random negatives come from its own corpus)",
    )
    parser.add_argument("--data-dir", help="DailyDialog folder with dialogues_{split}.txt")
    parser.add_argument(
        "--dailydialog-train",
        choices=("clean", "official"),
        default="clean",
        help="clean (default): DailyDialog's training split without the dialogues that also occur in its "
        "validation or test split (258 of 11,118); official: the published split",
    )
    parser.add_argument(
        "--valid-corpus",
        help="the validation pairs' corpus or mix, in --corpus's form (default: --corpus), e.g. dailydialog to "
        "judge a mixed training run on the same validation pairs as a DailyDialog-only one",
    )
    parser.add_argument("--self-dialogue", help="the Self-dialogue corpus's dialogues.jsonl (or its folder)")
    parser.add_argument(
        "--personachat",
        help="the PersonaChat training subset's dialogues.jsonl (or its folder, personachat_train_subset)",
    )
    parser.add_argument(
        "--topical-chat",
        help="the Topical-Chat validation conversations' dialogues.jsonl (or its folder, topical_chat_valid)",
    )
    parser.add_argument("--train-file", help="ConvAI2 (ParlAI self_original) or JSONL training file")
    parser.add_argument("--valid-file", help="its validation file")
    parser.add_argument("--hub-id", help="Hub dataset with a 'turns' column and train/validation splits")
    parser.add_argument("--limit", type=int, default=0, help="use only the first N pairs of each split (for trials)")


def load_corpus(args, with_dialogues: bool = False) -> tuple:
    """(train pairs, validation pairs) of the chosen corpus or mix (the validation pairs of
    ``--valid-corpus`` where given): (contexts, responses) each, or with
    ``with_dialogues`` also each pair's dialogue turns, gold index (for same-dialogue negatives) and
    corpus name (for negatives from the context's own corpus): the five lists
    ``density_train.data.examples.SelectionData.from_pairs`` takes. A ValueError names a bad or missing flag, or the
    file that cannot be read. ``--limit`` is checked here, before anything is read, for every command."""
    from ..arguments import check_at_least  # here, not at the top: it imports the model (torch), this module need not

    check_at_least("--limit", args.limit, 0)
    mixes = [parse_corpus_mix(args.corpus)]
    valid_corpus = getattr(args, "valid_corpus", None)
    mixes.append(parse_corpus_mix(valid_corpus, "--valid-corpus") if valid_corpus else mixes[0])
    for flag, text, mix in (("--corpus", args.corpus, mixes[0]), ("--valid-corpus", valid_corpus, mixes[1])):
        for name, _ in mix:
            missing = ["--" + need.replace("_", "-") for need in _NEEDED[name] if not getattr(args, need, None)]
            if missing:
                raise ValueError(f"{flag} {text} needs {' and '.join(missing)}")
    splits_of: dict[str, list] = {}
    for name in dict.fromkeys(name for mix in mixes for name, _ in mix):
        try:
            splits_of[name] = load_splits(name, args)
        except (OSError, UnicodeDecodeError) as err:  # a user's path or file: one line, not a traceback
            flag = _FLAG_OF.get(name, "--train-file / --valid-file")
            if isinstance(err, OSError) and err.filename and err.strerror:
                problem = f"{err.filename}: {err.strerror}"
            else:
                problem = f"{type(err).__name__}: {err}"
            raise ValueError(f"--corpus {name} ({flag}): {problem}") from None
    pairs = []
    for split, mix in enumerate(mixes):
        dialogues, sources = mix_dialogues([(name, weight, splits_of[name][split]) for name, weight in mix])
        found = response_pairs_with_dialogues(dialogues)
        if with_dialogues:
            per_pair = [source for source, row in zip(sources, dialogues["responses"]) for _ in row]
            pairs.append((*found, per_pair))
        else:
            pairs.append(found[:2])
    if args.limit:
        pairs = [tuple(side[: args.limit] for side in split) for split in pairs]
    return pairs[0], pairs[1]


def load_selection_data(args) -> tuple:
    """The training and validation :class:`~density_train.data.examples.SelectionData` of the corpus flags
    (:func:`load_corpus` with the dialogues), as ``python -m train train`` gives them to its trainer."""
    from .examples import SelectionData

    train, valid = load_corpus(args, with_dialogues=True)
    return SelectionData.from_pairs(*train), SelectionData.from_pairs(*valid)


def load_splits(name: str, args) -> list:
    """The (train, validation) dialogues of corpus ``name``, as ``args`` names them."""
    if name == "dailydialog":
        if getattr(args, "dailydialog_train", "clean") == "official":
            train = load_dailydialog(args.data_dir, "train")
        else:
            train, dropped = clean_dailydialog_train(args.data_dir)
            logger.info(
                "DailyDialog training split: %d dialogues left out, they also occur in validation or test "
                "(--dailydialog-train official keeps them); %d remain",
                dropped,
                len(train),
            )
        return [train, load_dailydialog(args.data_dir, "validation")]
    if name == "self_dialogue":
        dialogues = read_self_dialogue(args.self_dialogue)
        return [_split_rows(dialogues, split, name) for split in SEEDED_SPLITS]
    if name == "chitchat":
        dialogues = read_chitchat()
        return [_split_rows(dialogues, split, name) for split in SEEDED_SPLITS]
    if name in ("personachat", "topical_chat"):
        from .grounded_corpora import LOADERS

        return [LOADERS[name](getattr(args, name), split) for split in SEEDED_SPLITS]
    if name == "convai2":
        return [load_convai2(args.train_file), load_convai2(args.valid_file)]
    if name == "jsonl":
        return [load_jsonl_dialogues(args.train_file), load_jsonl_dialogues(args.valid_file)]
    return [load_hub_dialogues(args.hub_id, split) for split in ("train", "validation")]
