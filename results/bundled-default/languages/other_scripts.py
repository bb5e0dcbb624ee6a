"""Other scripts: the rows of the project's corpora and human-judgment sets that the ``non-latin`` flag marks (reply
or context mostly letters outside the Latin script: ``density_metric.row_flags.other_script_rows``), which must be
none, since every one of them is English; and the bundled model's scores and flags of short dialogues in eight other
scripts, which must all be flagged.

Counted per set, every (context, reply) row as scoring reads it: each corpus's training rows as its loader makes
them (DailyDialog's three official splits; Self-dialogue, Chit-Chat, the PersonaChat subset with its persona lines
and Topical-Chat with its knowledge line, training and validation splits together), and every rated row of each
human-judgment set (``density_train.data.judgments.load_sets``; the USR sets with their fact lines; FED's dialogue-level set:
every turn from the second on against the turns before it, as ``score_dialogue`` reads them), of which those a
person wrote (``no_words.py``'s rule: a system named human or ground-truth; in FED's dialogues also the ``User``
turns). Also counted: the rows with any letter outside the Latin script at all, the candidates. Reads data only.
Usage, from the repository root:

    PYTHONPATH=. python results/bundled-default/languages/other_scripts.py

writes ``other_scripts.json`` and ``other_scripts.md`` beside this file.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np
from density_train.data.corpora import response_pairs

from density_metric import DensityScorer
from density_metric.row_flags import other_script_rows
from density_metric.scripts import letter_counts, turn_letter_counts

# The corpora and the judgment sets as results/bundled-default/degenerate-probes/no_words.py reads them.
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "degenerate-probes"))
from no_words import corpus_tables, judgment_rows  # noqa: E402

OUT = Path(__file__).resolve().parent
COMMAND = "PYTHONPATH=. python results/bundled-default/languages/other_scripts.py"
EXAMPLES = 5
# Short dialogues in other scripts (context, reply): every one must be flagged.
DIALOGUES = {
    "Russian": ("Привет! Как прошли выходные?", "Отлично, мы ходили в поход."),
    "Russian, gibberish reply": ("Привет! Как прошли выходные?", "Ыврап олдж фыва пролдж вапро."),
    "Korean": ("주말 잘 보냈어요?", "주말 주말 주말"),
    "Chinese": ("你好，你周末过得怎么样？", "很好，我去爬山了。"),
    "Arabic": ("مرحبا، كيف كانت عطلة نهاية الأسبوع؟", "كانت رائعة، ذهبت للتنزه"),
    "Greek": ("Γεια σου, πώς ήταν το Σαββατοκύριακο;", "Ήταν υπέροχο, πήγα πεζοπορία."),
    "Japanese": ("週末はどうでしたか？", "とても楽しかったです"),
    "Hindi": ("नमस्ते, आपका सप्ताहांत कैसा था?", "बहुत अच्छा था"),
    "English reply, Russian context": ("Привет! Как прошли выходные?", "Great, we went hiking."),
    "Korean reply, English context": ("How was your weekend?", "주말 주말 주말"),
}


def corpus_rows() -> dict[str, list[tuple[list[str], str, bool]]]:
    """Each corpus's training rows, (context, reply, written by a person) each."""
    sets = {}
    for name, tables in corpus_tables().items():
        pairs = [response_pairs(table) for table in tables]
        sets[name] = [
            (context, reply, True) for contexts, replies in pairs for context, reply in zip(contexts, replies)
        ]
    return sets


def count(rows: list[tuple[list[str], str, bool]]) -> dict:
    """How many of ``rows`` are flagged ``non-latin`` (all, and those a person wrote), how many hold any letter
    outside the Latin script, and the flagged ones (or, where none is, the candidates) most outside it."""
    contexts = [context for context, _, _ in rows]
    replies = [reply for _, reply, _ in rows]
    human = np.array([by_person for _, _, by_person in rows], dtype=bool)
    flagged = other_script_rows(contexts, replies)
    reply_counts = letter_counts(replies)  # (Latin, other) letters of each reply, and of each context below
    context_counts = np.zeros_like(reply_counts)
    with_other, counts = turn_letter_counts(contexts)
    context_counts[with_other] = counts
    candidates = np.flatnonzero((reply_counts[:, 1] > 0) | (context_counts[:, 1] > 0))
    # Per row, the larger share of letters outside the Latin script of its reply and of its context (the flag's rule
    # reads each side alone: more than half of one side's letters, and at least 2).
    share = np.maximum(*(side[:, 1] / np.maximum(side.sum(axis=1), 1) for side in (reply_counts, context_counts)))
    shown = np.flatnonzero(flagged) if flagged.any() else candidates
    shown = shown[np.argsort(-share[shown], kind="stable")]
    return {
        "rows": len(rows),
        "human_rows": int(human.sum()),
        "any_other_letter": len(candidates),
        "flagged": int(flagged.sum()),
        "flagged_human": int((flagged & human).sum()),
        "largest_other_share": round(float(share.max()), 4) if len(rows) else 0.0,
        "examples": [
            {
                "reply": replies[i],
                "share": round(float(share[i]), 4),
                "reply_letters": reply_counts[i].tolist(),
                "context_letters": context_counts[i].tolist(),
            }
            for i in shown[:EXAMPLES]
        ],
    }


def probes(scorer: DensityScorer) -> dict:
    """The bundled model's calibrated score and flags of each of :data:`DIALOGUES`."""
    contexts = [[context] for context, _ in DIALOGUES.values()]
    result = scorer.score(contexts, [reply for _, reply in DIALOGUES.values()], warn=False)
    return {
        name: {"context": context, "reply": reply, "calibrated": round(float(calibrated), 4), "flags": flags}
        for (name, (context, reply)), calibrated, flags in zip(DIALOGUES.items(), result.calibrated, result.flags)
    }


def markdown(report: dict) -> str:
    lines = [
        "# Other scripts: the `non-latin` flag on the project's English data, and on dialogues in other scripts",
        "",
        f"Command: `{report['command']}`. Checkpoint for the probes: {report['signature']}.",
        "A row is flagged `non-latin` when its reply, or its context (turns, persona, fact or knowledge lines",
        "together), has more letters outside the Latin script than in it, and at least 2 (`density_metric/scripts.py`).",
        "Rows: every training row of each corpus; every rated row of each judgment set, 'by people' those of a system",
        "named human or ground-truth (FED's dialogues: every turn from the second on, and the `User` turns). 'Any other",
        "letter': rows with at least one letter outside the Latin script, flagged or not; 'largest share': of the letters",
        "of one reply or one context, the largest share outside the Latin script (the flag needs more than 0.5).",
        "",
        "| set | rows | by people | any other letter | largest share | flagged | flagged, by people | examples (reply;"
        " share) |",
        "| --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    for name, row in report["sets"].items():
        examples = ", ".join(
            f"`{json.dumps(e['reply'][:60], ensure_ascii=False)}` ({e['share']:.3f})" for e in row["examples"]
        )
        lines.append(
            f"| {name} | {row['rows']:,} | {row['human_rows']:,} | {row['any_other_letter']:,} | "
            f"{row['largest_other_share']:.3f} | {row['flagged']:,} | "
            f"{row['flagged_human']:,} | {examples or '-'} |"
        )
    total = sum(row["rows"] for row in report["sets"].values())
    flagged = sum(row["flagged"] for row in report["sets"].values())
    lines += ["", f"In all: {flagged:,} of {total:,} rows flagged.", "", "## Dialogues in other scripts", ""]
    lines += ["| dialogue | context | reply | calibrated | flags |", "| --- | --- | --- | --- | --- |"]
    for name, probe in report["probes"].items():
        flags = ", ".join(probe["flags"]) or "-"
        lines.append(f"| {name} | {probe['context']} | {probe['reply']} | {probe['calibrated']:.4f} | {flags} |")
    return "\n".join(lines) + "\n"


def main() -> None:
    scorer = DensityScorer("default", device="cpu", dtype="float32")
    sets = {**corpus_rows(), **judgment_rows()}
    report = {
        "command": COMMAND,
        "signature": scorer.signature,
        "sets": {name: count(rows) for name, rows in sets.items()},
        "probes": probes(scorer),
    }
    (OUT / "other_scripts.json").write_text(json.dumps(report, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    (OUT / "other_scripts.md").write_text(markdown(report), encoding="utf-8")


if __name__ == "__main__":
    main()
