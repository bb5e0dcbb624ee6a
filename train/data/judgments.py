"""Human-judgment sets in the shared ``*.normalized.jsonl`` schema, and their protocols.

Read by training (``--dev-judgments``: protocol ``dev`` for model selection) and by the
meta-evaluation in ``benchmarks/``.

- ``full``: every row of the set, scored against its mean human rating (``score``).
- ``paper``: the DEnsity paper's protocol: ground-truth rows dropped; for the Zhao sets
  the MAD-filtered rating (``score_density``) and only the last 80 % of rows (the first
  20 % were the authors' validation part).
- ``dev``: that validation part: the first 20 % of a Zhao set's rows, with the same filtering
  and rating as ``paper``, for choosing among checkpoints without touching ``paper``'s rows.
  ``dev`` and ``paper`` partition a Zhao set's non-ground-truth rows. Sets without such a
  split (every set but the ``*_zhao`` ones) have no ``dev`` protocol (:func:`has_protocol`).
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from .corpora import jsonl_values

GROUND_TRUTH = re.compile(r"ground.?truth", re.IGNORECASE)
PROTOCOLS = ("full", "paper", "dev")
# Sets whose name ends so have the authors' validation/test split (first 20 % / last 80 % of rows).
SPLIT_SUFFIX = "_zhao"


@dataclass
class JudgmentSet:
    """Rows of one human-judgment set (``level`` is ``turn`` or ``dialogue``)."""

    name: str
    rows: list[dict]
    level: str = "turn"
    notes: list[str] = field(default_factory=list)


def load_sets(data_dir: str | Path, names: list[str] | None = None) -> list[JudgmentSet]:
    """Every ``*.normalized.jsonl`` below ``data_dir``, named after its file (``dailydialog_zhao``...)."""
    sets = []
    for path in sorted(Path(data_dir).rglob("*.normalized.jsonl")):
        name = path.name.removesuffix(".normalized.jsonl")
        if names and name not in names:
            continue
        rows = read_rows(path)
        level = "dialogue" if rows and rows[0].get("level") == "dialogue" else "turn"
        sets.append(JudgmentSet(name, rows, level))
    return sets


# The fields every row of a set needs, by level: what the protocols and the meta-evaluation read.
REQUIRED_FIELDS = {"turn": ("context", "response", "score"), "dialogue": ("dialogue", "score")}
NOT_A_SET = (
    "not a human-judgment set (a turn row has a list 'context', 'response' and 'score'; "
    "a dialogue row 'level': 'dialogue', 'dialogue' and 'score')"
)


def read_rows(path: Path) -> list[dict]:
    """The rows of one ``*.normalized.jsonl`` set. Raises ValueError naming the file and line where a line is not
    a row of this schema (a JSONL of another schema that happens to share the suffix), or the file or line that is
    no JSON Lines at all (text that is not UTF-8, a line that is not JSON)."""
    rows = []
    for number, row in jsonl_values(path):
        if not isinstance(row, dict):
            raise ValueError(f"{path}: line {number} is not a JSON object: {NOT_A_SET}")
        try:
            _check_row(path, number, row)
        except ValueError as err:
            raise ValueError(str(err) if NOT_A_SET in str(err) else f"{err}: {NOT_A_SET}") from None
        rows.append(row)
    return rows


def _check_row(path: Path, number: int, row: dict) -> None:
    """A ValueError naming the line where ``row`` lacks the fields of a human-judgment row."""
    missing = [
        key for key in REQUIRED_FIELDS["dialogue" if row.get("level") == "dialogue" else "turn"] if key not in row
    ]
    if missing:
        raise ValueError(f"{path}: line {number} has no {', '.join(map(repr, missing))}: {NOT_A_SET}")
    if not isinstance(row.get("context", []), list):
        raise ValueError(f"{path}: line {number}: 'context' is not a list of turns: {NOT_A_SET}")
    texts = {"context": row.get("context", []), "dialogue": row.get("dialogue", [])}
    for key, turns in texts.items():
        if isinstance(turns, list) and not all(isinstance(turn, str) for turn in turns):
            raise ValueError(f"{path}: line {number}: {key!r} has a turn that is not a string: {NOT_A_SET}")
    if "response" in row and not isinstance(row["response"], str):
        raise ValueError(f"{path}: line {number}: 'response' is {type(row['response']).__name__}, not a string")
    for key in ("score", "score_density"):  # the ratings the protocols read
        value = row.get(key, 0.0)
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
            raise ValueError(f"{path}: line {number}: {key!r} is {value!r}, not a finite number")


def load_named_sets(data_dir: str | Path, names: list[str] | None = None) -> list[JudgmentSet]:
    """:func:`load_sets`, with a ValueError naming ``data_dir`` where it holds no set or a name matches none."""
    sets = load_sets(data_dir, names)
    missing = [name for name in names or [] if name not in {judgments.name for judgments in sets}]
    if sets and not missing:
        return sets
    found = sorted(path.name.removesuffix(".normalized.jsonl") for path in Path(data_dir).rglob("*.normalized.jsonl"))
    what = f"no set named {', '.join(missing)}" if missing else "no *.normalized.jsonl below it"
    raise ValueError(f"--data-dir {data_dir}: {what} (found: {', '.join(found) or 'none'})")


def mad_filtered_mean(ratings, low: float = 1.0, high: float = 5.0) -> float:
    """Mean of the ratings within median +- 1.4826 * MAD, scaled from [low, high] to [0, 1]."""
    ratings = np.asarray(ratings, dtype=float)
    median = np.median(ratings)
    spread = 1.4826 * np.median(np.abs(ratings - median))
    kept = ratings[np.abs(ratings - median) <= spread]
    return float(np.mean((kept - low) / (high - low)))


def is_ground_truth(row: dict) -> bool:
    return bool(GROUND_TRUTH.search(str(row.get("system") or "")))


def has_protocol(judgments: JudgmentSet | str, protocol: str) -> bool:
    """Whether ``protocol`` is defined for the set: ``dev`` only for sets with the authors' split."""
    name = judgments if isinstance(judgments, str) else judgments.name
    return protocol != "dev" or name.endswith(SPLIT_SUFFIX)


def apply_protocol(judgments: JudgmentSet, protocol: str) -> tuple[np.ndarray, np.ndarray]:
    """Indices of the rows kept under ``protocol`` and their human scores (see the module docstring).

    Raises ValueError for an unknown protocol, or ``dev`` on a set without a validation split.
    """
    if protocol not in PROTOCOLS:
        raise ValueError(f"protocol must be one of {PROTOCOLS}, got {protocol!r}")
    if not has_protocol(judgments, protocol):
        raise ValueError(
            f"protocol {protocol!r} is not defined for {judgments.name}: it has no validation split "
            f"(only the *{SPLIT_SUFFIX} sets have one)"
        )
    rows = judgments.rows
    index = np.arange(len(rows))
    if protocol == "full":
        return index, np.array([row["score"] for row in rows], dtype=float)
    key = "score"
    if judgments.name.endswith(SPLIT_SUFFIX):
        test_start = len(rows) - int(len(rows) * 0.8)
        index, key = (index[test_start:] if protocol == "paper" else index[:test_start]), "score_density"
    index = np.array([i for i in index if not is_ground_truth(rows[i])], dtype=int)
    lacking = next((i for i in index if key not in rows[i]), None)
    if lacking is not None:
        raise ValueError(f"{judgments.name}: row {lacking + 1} has no {key!r}, which the {protocol!r} protocol reads")
    return index, np.array([rows[i][key] for i in index], dtype=float)


def facts_of(row: dict) -> list[str]:
    """The row's persona or fact lines (USR's ``fact``: a list, or one string), [] without."""
    facts = row.get("fact")
    return (facts if isinstance(facts, list) else [facts]) if facts else []


def context_of(row: dict, with_facts: bool) -> list[str]:
    """The row's context turns; persona or fact lines first when ``with_facts`` (as the authors did for USR)."""
    return (facts_of(row) if with_facts else []) + list(row["context"])
