"""No words, no score: how many replies of the project's corpora and human-judgment sets have no letter and no digit
in any script (no character of Unicode category L* or N*: the rule of the ``punctuation`` flag,
``density_metric.row_flags.reply_flag``), the replies that the rule "no words, no score" will floor.

Counted per set: every training reply of each corpus as its loader makes them (DailyDialog's three official splits;
Self-dialogue, Chit-Chat, the PersonaChat subset and Topical-Chat, training and validation splits together), and
every rated reply of each human-judgment set (``density_train.data.judgments.load_sets``; FED's dialogue-level set: every turn from
the second on, as ``score_dialogue`` scores them), of which those a person wrote (a system named human or
ground-truth; in FED's dialogues also the ``User`` turns). For each such reply, the flag the bundled default gives it:
``empty`` and ``unreadable`` replies were floored already (floor policy ``v1``), ``punctuation`` ones are floored
from ``v2`` on. Reads data only. Usage, from the repository root:

    PYTHONPATH=. python results/bundled-default/degenerate-probes/no_words.py

writes ``no_words.json`` and ``no_words.md`` beside this file.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from pathlib import Path

from density_train.data.corpora import load_chitchat, load_dailydialog, load_self_dialogue, response_pairs
from density_train.data.grounded_corpora import load_personachat, load_topical_chat
from density_train.data.judgments import context_of, load_sets
from density_train.data.rows import SEEDED_SPLITS

from density_metric import DensityScorer
from density_metric.encoding.text_ids import reply_ids
from density_metric.row_flags import EMPTY, PUNCTUATION, reply_flag

DATA = Path("../shared/data")
OUT = Path(__file__).resolve().parent
COMMAND = "PYTHONPATH=. python results/bundled-default/degenerate-probes/no_words.py"
HUMAN_SYSTEM = re.compile(r"human|ground.?truth", re.IGNORECASE)
EXAMPLES = 5


def corpus_tables() -> dict[str, list]:
    """Each corpus's training tables (``density_train.data.corpora``'s datasets), by the set's name."""
    corpora = {f"DailyDialog {split}": [load_dailydialog(DATA / "dailydialog", split)] for split in SEEDED_SPLITS}
    corpora["DailyDialog test"] = [load_dailydialog(DATA / "dailydialog", "test")]
    corpora["Self-dialogue"] = [load_self_dialogue(DATA / "self_dialogue", split) for split in SEEDED_SPLITS]
    corpora["Chit-Chat"] = [load_chitchat(split) for split in SEEDED_SPLITS]
    corpora["PersonaChat subset"] = [load_personachat(DATA / "personachat_train_subset", s) for s in SEEDED_SPLITS]
    corpora["Topical-Chat"] = [load_topical_chat(DATA / "topical_chat_valid", split) for split in SEEDED_SPLITS]
    return corpora


def corpus_replies() -> dict[str, list[tuple[str, bool]]]:
    """Each corpus's training replies, (reply, written by a person) each."""
    return {
        name: [(reply, True) for table in tables for reply in response_pairs(table)[1]]
        for name, tables in corpus_tables().items()
    }


def judgment_rows() -> dict[str, list[tuple[list[str], str, bool]]]:
    """Each human-judgment set's scored rows, (context, reply, written by a person) each: a turn-level row's context
    with its fact lines (``density_train.data.judgments.context_of``); each turn of a FED dialogue from the second on, against
    the turns before it."""
    sets = {}
    for judged in load_sets(DATA):
        rows = []
        for row in judged.rows:
            human = bool(HUMAN_SYSTEM.search(row.get("system") or ""))
            if judged.level == "dialogue":
                turns = row["dialogue"]
                speakers = row.get("speakers") or [None] * len(turns)
                rows += [(turns[:i], turns[i], human or speakers[i] == "User") for i in range(1, len(turns))]
            else:
                rows.append((context_of(row, with_facts=True), row["response"], human))
        sets[judged.name] = rows
    return sets


def judgment_replies() -> dict[str, list[tuple[str, bool]]]:
    """Each human-judgment set's scored replies, (reply, written by a person) each."""
    return {name: [(reply, human) for _, reply, human in rows] for name, rows in judgment_rows().items()}


def count(replies: list[tuple[str, bool]], pair_format, tokenizer) -> dict:
    """How many of ``replies`` have no words (all and those a person wrote), the checkpoint's flag of those (with
    ``tokenizer``), and the most frequent of them."""
    texts = [reply for reply, _ in replies]
    ids = reply_ids(tokenizer, texts)
    # With no unknown token, reply_flag leaves out "unreadable": empty or punctuation is then exactly "no words".
    none = [i for i, reply_ids in enumerate(ids) if reply_flag(texts[i], reply_ids, None) in (EMPTY, PUNCTUATION)]
    return {
        "replies": len(replies),
        "human_replies": sum(human for _, human in replies),
        "no_words": len(none),
        "no_words_human": sum(replies[i][1] for i in none),
        "flag": dict(Counter(reply_flag(texts[i], ids[i], tokenizer.unk_token_id) for i in none)),
        "most_frequent": Counter(texts[i] for i in none).most_common(EXAMPLES),
    }


def markdown(report: dict) -> str:
    lines = [
        "# Replies without a letter or a digit (no words, no score)",
        "",
        f"Command: `{report['command']}`. Checkpoint for the flags: {report['signature']}.",
        "A reply has no words when no character of it is a letter or a digit in any script (Unicode L* or N*, the",
        "`punctuation` flag's rule in `density_metric/row_flags.py`). Corpora: every training reply, all written by",
        "people. Judgment sets: every rated reply; 'by people' are those of a system named human or ground-truth (FED's",
        "dialogues: every turn from the second on, and the `User` turns). 'Flag': the bundled default's flag of the",
        "no-words replies (`empty`, `unreadable`: floored under policy v1 already; `punctuation`: floored from v2 on).",
        "",
        "| set | replies | by people | no words | of them by people | flag | most frequent |",
        "| --- | --- | --- | --- | --- | --- | --- |",
    ]
    for name, row in report["sets"].items():
        flags = ", ".join(f"{flag} {n}" for flag, n in sorted(row["flag"].items())) or "-"
        frequent = ", ".join(f"`{json.dumps(text, ensure_ascii=False)}` x{n}" for text, n in row["most_frequent"])
        lines.append(
            f"| {name} | {row['replies']:,} | {row['human_replies']:,} | {row['no_words']:,} | "
            f"{row['no_words_human']:,} | {flags} | {frequent or '-'} |"
        )
    return "\n".join(lines) + "\n"


def main() -> None:
    scorer = DensityScorer("default", device="cpu", dtype="float32")
    pair_format, tokenizer = scorer.encoder.pair_format, scorer.encoder.tokenizer
    sets = {**corpus_replies(), **judgment_replies()}
    report = {
        "command": COMMAND,
        "signature": scorer.signature,
        "sets": {name: count(replies, pair_format, tokenizer) for name, replies in sets.items()},
    }
    (OUT / "no_words.json").write_text(json.dumps(report, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    (OUT / "no_words.md").write_text(markdown(report), encoding="utf-8")


if __name__ == "__main__":
    main()
