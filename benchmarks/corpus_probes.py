"""Robustness probes on held-out dialogues of each training corpus: does the gold beat its corruptions there too?

    python -m benchmarks.corpus_probes --checkpoint default --out results/bundled-default/corpus-probes

The probes of :mod:`benchmarks.probes` (echo, previous turn + gold, repetition, random, ...), built from dialogues no
training run here ever reads: DailyDialog's test split (as in ``benchmarks.human_correlation``), and the seeded 5 %
validation splits of the Self-dialogue corpus and the Chit-Chat Challenge (``density_train.data.corpora.validation_split``, the
dialogues that ``--corpus self_dialogue`` or ``chitchat`` keep out of training). Per corpus, the share of cases in
which the gold reply's DEnsity score is above the variant's, with n. Writes ``corpus_probes.json`` and
``corpus_probes.md`` to ``--out``. The probes share no code with the training negatives (``tests/benchmarks/test_probes.py``).
"""

from __future__ import annotations

import argparse
import datetime
import logging
import sys
import time
from pathlib import Path

from density_metric import DensityScorer
from density_metric.io.outputs import write_json, write_text
from density_train.data.corpora import load_chitchat, load_dailydialog, load_self_dialogue

from .command_line import add_dtype_argument, check_checkpoint, check_counts, check_dailydialog, check_out_folder
from .human_correlation import ModelColumns, run_probes
from .probes import PROBES

CORPORA = ("dailydialog", "self_dialogue", "chitchat")
# Each corpus's held-out dialogues: the split, and what the report calls it.
SPLIT = {"dailydialog": "test", "self_dialogue": "validation", "chitchat": "validation"}
NAMES = {
    "echo": "echo of the previous turn",
    "speaker_confused": "previous turn + gold",
    "repetition": "every word said twice",
    "random": "a random reply of another dialogue",
    "shuffled": "the gold's words shuffled",
    "pronoun_swap": "first and second person swapped",
    "truncated": "the gold cut off mid-sentence",
    "empty": "the empty reply",
    "punctuation": "punctuation only",
    "unreadable": "emoji only (every token unknown)",
    "special_sep": "the text [SEP]",
    "special_pad": "the text [PAD]",
    "special_cls": "the text [CLS]",
    "generic_yes": "generic: Yes.",
    "generic_okay": "generic: Okay.",
    "generic_what": "generic: What do you mean?",
    "generic_sure": "generic: Sure.",
    "generic_dont_know": "generic: I don't know.",
    "generic_thanks": "generic: Thank you.",
    "generic_really": "generic: Really?",
    "generic_fluent": "generic and fluent (e.g. That sounds interesting. Tell me more about it.)",
}

logger = logging.getLogger("benchmarks.corpus_probes")


def held_out_dialogues(corpus: str, data_dir: str | Path) -> list[list[str]]:
    """The turns of ``corpus``'s held-out dialogues (:data:`SPLIT`), read below the shared data folder ``data_dir``."""
    data_dir = Path(data_dir)
    if corpus == "dailydialog":
        table = load_dailydialog(data_dir / "dailydialog", SPLIT[corpus])
    elif corpus == "self_dialogue":
        table = load_self_dialogue(data_dir / "self_dialogue", SPLIT[corpus])
    else:
        table = load_chitchat(SPLIT[corpus])
    return list(table["turns"])


def markdown(report: dict) -> str:
    corpora = list(report["corpora"])
    lines = [
        "# Robustness probes on each corpus's held-out dialogues",
        "",
        f"Checkpoint `{report['checkpoint']}` ({report['signature']}), {report['date']}. Command: `{report['command']}`.",
        "Share of cases in which the gold reply scores above the variant (DEnsity s(r)); n per cell in brackets;",
        "beside each corpus, the same share over the cases whose gold has 1 to 10 words (tokens with a letter or digit).",
        "Held out: " + "; ".join(f"{c}: its {SPLIT[c]} split" for c in corpora) + ".",
        "",
        "| probe | " + " | ".join(f"{c} | {c}, gold of 1-10 words" for c in corpora) + " |",
        "| --- |" + " --- | --- |" * len(corpora),
    ]

    def cell(accuracy, n):
        return "-" if accuracy is None else f"{100 * accuracy:.1f} % ({n})"

    for probe in PROBES:
        cells = []
        for corpus in corpora:
            result = report["corpora"][corpus]
            cells.append(cell(result["accuracy"].get(probe, {}).get("DEnsity"), result["n_per_probe"][probe]))
            short = result.get("accuracy_short_gold", {}).get(probe, {}).get("DEnsity")
            cells.append(cell(short, result.get("n_short_gold_per_probe", {}).get(probe)))
        lines.append(f"| {NAMES[probe]} | " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.corpus_probes", description=__doc__.split("\n")[0])
    parser.add_argument("--checkpoint", default="default", help="'default', a directory, or a Hub repo id")
    parser.add_argument("--revision", default=None)
    parser.add_argument("--data-dir", default="../shared/data", help="the shared data folder (default: ../shared/data)")
    parser.add_argument("--corpora", nargs="+", choices=CORPORA, default=list(CORPORA))
    parser.add_argument("--probes", type=int, default=500, help="cases per corpus (default: 500)")
    parser.add_argument("--seed", type=int, default=0)
    add_dtype_argument(parser)
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s: %(message)s")
    check_counts(parser, args, "--probes", "--batch-size")
    check_out_folder(parser, "--out", args.out)
    if "dailydialog" in args.corpora:
        check_dailydialog(parser, args.data_dir, SPLIT["dailydialog"], why="the DailyDialog probes need it")
    if "self_dialogue" in args.corpora and not (Path(args.data_dir) / "self_dialogue").exists():
        parser.error(f"--data-dir {args.data_dir}: no self_dialogue folder (the Self-dialogue corpus)")
    check_checkpoint(parser, args.checkpoint, args.revision)
    started = time.perf_counter()
    scorer = DensityScorer(args.checkpoint, args.revision, dtype=args.dtype, batch_size=args.batch_size)
    columns = [ModelColumns(scorer, "")]
    report = {
        "checkpoint": scorer.checkpoint.source,
        "revision": scorer.checkpoint.revision,
        "signature": scorer.signature,
        "date": datetime.date.today().isoformat(),
        "command": "python -m benchmarks.corpus_probes " + " ".join(sys.argv[1:] if argv is None else argv),
        "splits": {corpus: SPLIT[corpus] for corpus in args.corpora},
        "corpora": {},
    }
    for corpus in dict.fromkeys(args.corpora):
        dialogues = held_out_dialogues(corpus, args.data_dir)
        logger.info("%s: %d held-out dialogues, %d probe cases", corpus, len(dialogues), args.probes)
        result = run_probes(dialogues, columns, args.probes, args.seed)
        result["dialogues"] = len(dialogues)
        report["corpora"][corpus] = result
    report["seconds"] = round(time.perf_counter() - started, 1)
    args.out.mkdir(parents=True, exist_ok=True)
    write_json(args.out / "corpus_probes.json", report, default=str)
    write_text(args.out / "corpus_probes.md", markdown(report))
    logger.info("wrote %s in %.0f s", args.out / "corpus_probes.md", report["seconds"])


if __name__ == "__main__":
    main()
