"""Dialogue corpora as ``datasets.Dataset`` with the columns

- ``turns``: list of str, oldest first;
- ``prefix``: list of str put before every context (ConvAI2's persona lines), often empty;
- ``responses``: indices of the turns that become training responses.

Every response is scored against ``prefix + turns[:i]``.
"""

from __future__ import annotations

import json
from pathlib import Path

import datasets

SPLITS = ("train", "validation", "test")


def _dataset(rows: list[dict]) -> datasets.Dataset:
    features = datasets.Features(
        {
            "turns": datasets.Sequence(datasets.Value("string")),
            "prefix": datasets.Sequence(datasets.Value("string")),
            "responses": datasets.Sequence(datasets.Value("int32")),
        }
    )
    return datasets.Dataset.from_list(rows, features=features)


def every_turn(turns: list[str], prefix: list[str] | None = None) -> dict:
    """A dialogue whose every turn from the second on is a response."""
    return {"turns": turns, "prefix": prefix or [], "responses": list(range(1, len(turns)))}


def load_dailydialog(data_dir: str | Path, split: str) -> datasets.Dataset:
    """DailyDialog from its original ``dialogues_{split}.txt`` (turns end with ``__eou__``)."""
    if split not in SPLITS:
        raise ValueError(f"split must be one of {SPLITS}, got {split!r}")
    rows = []
    with open(Path(data_dir) / f"dialogues_{split}.txt", encoding="utf-8") as handle:
        for line in handle:
            turns = [turn.strip() for turn in line.split("__eou__")]
            rows.append(every_turn([turn for turn in turns if turn]))
    return _dataset(rows)


def load_convai2(path: str | Path) -> datasets.Dataset:
    """ConvAI2 / PersonaChat in ParlAI ``self_original`` text format.

    The ``your persona:`` lines become the context prefix; only the persona owner's
    ("self") turns become responses. Lines are ``N partner<TAB>self[<TAB>...]``; the
    numbering restarts at 1 for each dialogue.
    """
    rows: list[dict] = []
    current: dict | None = None
    with open(path, encoding="utf-8") as handle:
        for number, line in enumerate(handle, start=1):
            line = line.rstrip("\n")
            if not line.strip():
                continue
            index, _, text = line.partition(" ")
            if index == "1" or current is None:
                current = {"turns": [], "prefix": [], "responses": []}
                rows.append(current)
            if text.startswith("your persona:") and not current["turns"]:
                current["prefix"].append(text)
                continue
            fields = text.split("\t")
            if len(fields) < 2:
                raise ValueError(f"{path}, line {number}: expected 'partner<TAB>self', got {text[:60]!r}")
            current["turns"] += [fields[0].strip(), fields[1].strip()]
            current["responses"].append(len(current["turns"]) - 1)
    return _dataset(rows)


def load_jsonl_dialogues(path: str | Path, field: str = "turns") -> datasets.Dataset:
    """A JSONL file with one dialogue per line: a list of turns, or an object with ``field``."""
    rows = []
    with open(path, encoding="utf-8") as handle:
        for number, line in enumerate(handle, start=1):
            if not line.strip():
                continue
            try:
                value = json.loads(line)
            except json.JSONDecodeError as err:
                raise ValueError(f"{path}, line {number}: invalid JSON ({err.msg})") from None
            turns = value.get(field) if isinstance(value, dict) else value
            if not isinstance(turns, list) or not all(isinstance(t, str) for t in turns):
                raise ValueError(f"{path}, line {number}: expected a list of strings (or {{{field!r}: [...]}})")
            rows.append(every_turn(turns))
    return _dataset(rows)


def load_hub_dialogues(repo_id: str, split: str, field: str = "turns", **kwargs) -> datasets.Dataset:
    """A Hub dataset (``datasets.load_dataset``) whose ``field`` column holds lists of turns."""
    source = datasets.load_dataset(repo_id, split=split, **kwargs)
    if field not in source.column_names:
        raise ValueError(f"{repo_id} has no column {field!r}; columns: {source.column_names}")
    return _dataset([every_turn(list(turns)) for turns in source[field]])


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


def add_corpus_arguments(parser) -> None:
    parser.add_argument("--corpus", choices=("dailydialog", "convai2", "jsonl", "hub"), default="dailydialog")
    parser.add_argument("--data-dir", help="DailyDialog folder with dialogues_{split}.txt")
    parser.add_argument("--train-file", help="ConvAI2 (ParlAI self_original) or JSONL training file")
    parser.add_argument("--valid-file", help="its validation file")
    parser.add_argument("--hub-id", help="Hub dataset with a 'turns' column and train/validation splits")
    parser.add_argument("--limit", type=int, default=0, help="use only the first N pairs of each split (for trials)")


def load_corpus(args, with_dialogues: bool = False) -> tuple:
    """(train pairs, validation pairs) of the chosen corpus: (contexts, responses) each, or with
    ``with_dialogues`` also each pair's dialogue turns and gold index (for same-dialogue negatives). A ValueError names a missing flag."""
    needed = {
        "dailydialog": ["data_dir"],
        "convai2": ["train_file", "valid_file"],
        "jsonl": ["train_file", "valid_file"],
        "hub": ["hub_id"],
    }[args.corpus]
    missing = ["--" + name.replace("_", "-") for name in needed if not getattr(args, name)]
    if missing:
        raise ValueError(f"--corpus {args.corpus} needs {' and '.join(missing)}")
    try:
        splits = _load_splits(args)
    except (OSError, UnicodeDecodeError) as err:  # a user's path or file: one line, not a traceback
        flag = {"dailydialog": "--data-dir", "hub": "--hub-id"}.get(args.corpus, "--train-file / --valid-file")
        if isinstance(err, OSError) and err.filename and err.strerror:
            problem = f"{err.filename}: {err.strerror}"
        else:
            problem = f"{type(err).__name__}: {err}"
        raise ValueError(f"--corpus {args.corpus} ({flag}): {problem}") from None
    pairs = [response_pairs_with_dialogues(split) if with_dialogues else response_pairs(split) for split in splits]
    if args.limit:
        pairs = [tuple(side[: args.limit] for side in split) for split in pairs]
    return pairs[0], pairs[1]


def _load_splits(args) -> list:
    """The corpus's (train, validation) dialogues, as ``args`` names them."""
    if args.corpus == "dailydialog":
        return [load_dailydialog(args.data_dir, split) for split in ("train", "validation")]
    if args.corpus == "convai2":
        return [load_convai2(args.train_file), load_convai2(args.valid_file)]
    if args.corpus == "jsonl":
        return [load_jsonl_dialogues(args.train_file), load_jsonl_dialogues(args.valid_file)]
    return [load_hub_dialogues(args.hub_id, split) for split in ("train", "validation")]
