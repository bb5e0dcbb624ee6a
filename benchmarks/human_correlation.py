"""Meta-evaluation: correlation with human judgments, baselines, robustness probes, figures.

    python -m benchmarks.human_correlation --checkpoint default --out results/bundled-default

Reads every ``*.normalized.jsonl`` under ``--data-dir``, scores it with the checkpoint and
the baselines on the same rows, and writes ``human_correlation.md``, ``human_correlation.json``
and PNG figures to ``--out``. Two protocols are reported by default (see ``train/data/judgments.py``):
``full`` (every row) and ``paper`` (the DEnsity paper's filtering); ``--protocols full paper dev``
adds ``dev`` (the Zhao sets' first 20 %, for model selection), reported for the sets that have it.
"""

from __future__ import annotations

import argparse
import datetime
import logging
import time
from pathlib import Path

import numpy as np
from scipy.stats import pearsonr, spearmanr

from density_metric import DensityScorer
from density_metric.correlation import pearson, spearman
from density_metric.io.inputs import check_dialogues, check_pairs, dialogue_pairs
from density_metric.io.outputs import write_json, write_text
from density_metric.scoring import DIALOGUE_AGGREGATES, dialogue_score
from density_train.data.corpora import load_dailydialog
from density_train.data.judgments import PROTOCOLS, JudgmentSet, apply_protocol, context_of, has_protocol

from .baselines import WEIGHTS_ROOT, available_columns
from .command_line import (
    add_dtype_argument,
    check_checkpoint,
    check_counts,
    check_dailydialog,
    check_out_folder,
    check_sets,
)
from .meta_report import DEFAULT_PROTOCOLS, markdown, plot_histogram, plot_scatter
from .probes import PROBES, SHORT_GOLD_WORDS, make_probes, word_count

logger = logging.getLogger("benchmarks.human_correlation")


def correlation(metric: np.ndarray, human: np.ndarray) -> dict:
    """Pearson r and Spearman rho (x100), :mod:`density_metric.correlation`'s, with the p-values of scipy's tests."""
    return {
        "pearson": 100 * pearson(metric, human),
        "pearson_p": float(pearsonr(metric, human).pvalue),
        "spearman": 100 * spearman(metric, human),
        "spearman_p": float(spearmanr(metric, human).pvalue),
        "n": int(len(human)),
    }


class ModelColumns:
    """Metric columns that come from one checkpoint: raw and calibrated DEnsity, Euclidean distance.

    Like the baselines' column providers (:mod:`benchmarks.baselines`), it is called with
    contexts, responses and optional references, and says where it may be reported.
    """

    supervised = False

    def __init__(self, scorer: DensityScorer, label: str):
        self.scorer, self.prefix = scorer, f"{label} " if label else ""

    def reports(self, set_name: str, protocol: str) -> bool:
        return True

    def __call__(self, contexts, responses, references=None) -> dict[str, np.ndarray]:
        features = self.scorer.features(contexts, responses)
        return self.columns(features, self.scorer.distances_of(features, responses))

    def columns(self, features: np.ndarray, distances: np.ndarray) -> dict[str, np.ndarray]:
        """The columns from pairs' features and their score's distances (:meth:`DensityScorer.distances_of`)."""
        result = self.scorer.result(distances)
        columns = {
            f"{self.prefix}DEnsity": result.scores,
            f"{self.prefix}DEnsity (calibrated)": result.calibrated,
            f"{self.prefix}-Euclidean to mean": -self.scorer.stats.euclidean(features),
        }
        if self.scorer.checkpoint.head is not None:
            columns[f"{self.prefix}f(c,r) classifier"] = self.scorer.classifier_from_features(features)
        return columns


def reference_columns(rows: list[dict]) -> dict[str, np.ndarray]:
    """BLEU-2 (sacrebleu) and ROUGE-L F1 (rouge-score) against the references, where a set has them."""
    import sacrebleu
    from rouge_score import rouge_scorer

    if not all(row.get("reference") for row in rows):
        return {}
    bleu = sacrebleu.metrics.BLEU(max_ngram_order=2, effective_order=True)
    rouge = rouge_scorer.RougeScorer(["rougeL"])
    bleu2, rouge_l = [], []
    for row in rows:
        references = row.get("references") or [row["reference"]]
        bleu2.append(bleu.sentence_score(row["response"], references).score)
        rouge_l.append(max(rouge.score(ref, row["response"])["rougeL"].fmeasure for ref in references))
    return {"BLEU-2": np.array(bleu2), "ROUGE-L": np.array(rouge_l)}


def evaluate_turn_set(
    judgments: JudgmentSet, columns: list, with_facts: bool, protocols=DEFAULT_PROTOCOLS, with_references: bool = True
) -> dict:
    """Per protocol (those defined for the set): correlation of every metric column with the human
    scores, and of BLEU-2 and ROUGE-L with ``with_references`` (:func:`reference_columns`). A supervised column is left
    out of the protocols that hold the rows it learned from."""
    rows = judgments.rows
    contexts = [context_of(row, with_facts) for row in rows]
    responses = [row["response"] for row in rows]
    references = [row.get("reference") or "" for row in rows]
    values: dict[str, np.ndarray] = {}
    provider: dict[str, object] = {}
    for model in columns:
        for name, column in model(contexts, responses, references).items():
            values[name], provider[name] = column, model
    if with_references:
        values.update(reference_columns(rows))
    out = {}
    for protocol in (p for p in protocols if has_protocol(judgments, p)):
        index, human = apply_protocol(judgments, protocol)
        out[protocol] = {
            name: correlation(column[index], human)
            for name, column in values.items()
            if name not in provider or provider[name].reports(judgments.name, protocol)
        }
    out["_supervised"] = [name for name, model in provider.items() if model.supervised]
    out["_values"] = {name: column.tolist() for name, column in values.items()}
    out["_model"] = [name for name, model in provider.items() if isinstance(model, ModelColumns)]
    out["_human"] = [row["score"] for row in rows]
    return out


def evaluate_dialogue_set(judgments: JudgmentSet, scorer: DensityScorer, protocols=DEFAULT_PROTOCOLS) -> dict:
    """FED dialogue level, against Overall: the library's dialogue score (:meth:`DensityScorer.score_dialogues`,
    mean and rms aggregates), and the mean over the same scored turns of the checkpoint's other scoring rows, minus
    the Euclidean distance and the classifier f(c, r); every turn pair is encoded once for all of them."""
    dialogues = check_dialogues([row["dialogue"] for row in judgments.rows])
    human = np.array([row["score"] for row in judgments.rows], dtype=float)
    contexts, responses = check_pairs(*dialogue_pairs(dialogues))  # score_dialogues' pairs and reading of them
    features, flags = scorer.features_and_flags(contexts, responses)
    distances = scorer.distances_of(features, responses, flags)
    bounds = np.cumsum([0] + [len(turns) - 1 for turns in dialogues])
    turns = [slice(start, stop) for start, stop in zip(bounds[:-1], bounds[1:])]
    values = {
        f"DEnsity dialogue ({aggregate})": np.array([dialogue_score(distances[t], aggregate) for t in turns])
        for aggregate in DIALOGUE_AGGREGATES
    }
    for name, column in ModelColumns(scorer, "").columns(features, distances).items():
        if "DEnsity" not in name:  # the DEnsity rows are the library's aggregates, above
            values[f"{name} dialogue (mean)"] = np.array([column[t].mean() for t in turns])
    out = {name: correlation(column, human) for name, column in values.items()}
    result = {protocol: out for protocol in ("full", "paper") if protocol in protocols}
    result["_values"] = {name: column.tolist() for name, column in values.items()}
    result["_human"] = human.tolist()
    return result


def run_probes(dialogues, columns: list, n: int, seed: int) -> dict:
    """Share of cases where the gold response outscores each corrupted variant, per metric."""
    cases = make_probes(dialogues, n, seed)
    contexts = [case["context"] for case in cases]

    def all_columns(responses):
        return {name: values for column in columns for name, values in column(contexts, responses).items()}

    gold = all_columns([case["gold"] for case in cases])
    short = np.array([1 <= word_count(case["gold"]) <= SHORT_GOLD_WORDS for case in cases])
    results, counts, short_results, short_counts = {}, {}, {}, {}
    for probe in PROBES:
        # A probe that does not apply to a case (None: no pronoun to swap, one word to truncate) leaves it out.
        kept = np.array([i for i, case in enumerate(cases) if case[probe] is not None], dtype=int)
        counts[probe], short_counts[probe] = len(kept), int(short[kept].sum())
        if not len(kept):
            continue
        variant = {
            name: values
            for column in columns
            for name, values in column([contexts[i] for i in kept], [cases[i][probe] for i in kept]).items()
        }
        wins = {name: gold[name][kept] > variant[name] for name in gold if "calibrated" not in name}
        results[probe] = {name: float(np.mean(won)) for name, won in wins.items()}
        if short_counts[probe]:
            short_results[probe] = {name: float(np.mean(won[short[kept]])) for name, won in wins.items()}
    return {
        "n": len(cases),
        "n_per_probe": counts,
        "seed": seed,
        "accuracy": results,
        # the same shares over the cases whose gold has 1 to SHORT_GOLD_WORDS words
        "short_gold_words": SHORT_GOLD_WORDS,
        "n_short_gold_per_probe": short_counts,
        "accuracy_short_gold": short_results,
        "examples": cases[:3],
    }


def save_row_scores(path: Path, row_scores: dict[str, np.ndarray], report: dict) -> None:
    """Write the checkpoint's per-row scores (float64; ``SET/COLUMN`` and ``SET/human``, every row of the set in
    its file's order: ``density_train.data.judgments.apply_protocol`` gives a protocol's rows; FED dialogue per dialogue;
    ``validation_gold_vs_random/{gold,random}/COLUMN`` for the histogram's pairs), so that checkpoints
    measured apart can be compared row by row later (a paired bootstrap needs the rows, not the correlations)."""
    from safetensors.numpy import save_file

    metadata = {"checkpoint": str(report["checkpoint"]), "signature": report["signature"], "date": report["date"]}
    save_file({name: np.ascontiguousarray(v) for name, v in row_scores.items()}, str(path), metadata=metadata)
    report["row_scores"] = path.name


def add_scoring_arguments(parser: argparse.ArgumentParser) -> None:
    """The options of the meta-evaluation scripts that choose the checkpoint, sets, baselines and output."""
    parser.add_argument("--checkpoint", default="default", help="'default', a directory, or a Hub repo id")
    parser.add_argument("--revision", default=None)
    parser.add_argument(
        "--data-dir",
        default="../shared/data",
        help="folder with dailydialog/ and the human-judgment sets (default: ../shared/data, the checkout's neighbour)",
    )
    parser.add_argument(
        "--sets", nargs="*", default=None, help="only these sets (file names without .normalized.jsonl)"
    )
    parser.add_argument(
        "--baselines-dir",
        type=Path,
        default=WEIGHTS_ROOT,
        help="trained baselines (python -m benchmarks.baselines train); those whose weights are missing are skipped",
    )
    parser.add_argument(
        "--no-baselines",
        action="store_true",
        help="leave out the baselines: BERT-RUBER, MaUde, Zhao et al., BLEU-2 and ROUGE-L",
    )
    parser.add_argument("--no-facts", action="store_true", help="do not put persona/fact lines in front of contexts")
    parser.add_argument("--seed", type=int, default=0)
    add_dtype_argument(parser)
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--out", type=Path, required=True)


def check_scoring_arguments(parser: argparse.ArgumentParser, args: argparse.Namespace) -> None:
    """The checks of :func:`add_scoring_arguments`' options, but the checkpoint's (the last check, it reads files)
    and --data-dir's (what each script reads there differs)."""
    check_counts(parser, args, "--batch-size")
    check_out_folder(parser, "--out", args.out)


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.human_correlation")
    add_scoring_arguments(parser)
    parser.add_argument(
        "--untuned-checkpoint",
        default=None,
        help="DEnsity with the untuned backbone, as a baseline (skipped if not given)",
    )
    parser.add_argument("--limit", type=int, default=0, help="first N rows per set (for quick trials)")
    parser.add_argument(
        "--protocols",
        nargs="+",
        choices=PROTOCOLS,
        default=list(DEFAULT_PROTOCOLS),
        help="protocols to report (default: full paper); 'dev' (the Zhao sets' first 20 %%) only for the sets that have it",
    )
    parser.add_argument("--probes", type=int, default=500)
    parser.add_argument("--histogram-pairs", type=int, default=1000)
    return parser


def _checked_sets(parser: argparse.ArgumentParser, args: argparse.Namespace) -> list[JudgmentSet]:
    """Every check of the command line, before any work; the human-judgment sets to score."""
    check_scoring_arguments(parser, args)
    check_counts(parser, args, "--probes", "--histogram-pairs")
    check_counts(parser, args, "--limit", least=0)
    sets = check_sets(parser, args.data_dir, args.sets)
    # the DailyDialog splits of the probes and the histogram
    check_dailydialog(parser, args.data_dir, "test", "validation", why="the probes need it")
    check_checkpoint(parser, args.checkpoint, args.revision)
    if args.untuned_checkpoint:
        check_checkpoint(parser, args.untuned_checkpoint, flag="--untuned-checkpoint")
    return sets


def _new_report(args: argparse.Namespace, argv, scorer: DensityScorer, columns: list) -> dict:
    """The report before any set is scored: the checkpoint, the command and the notes on the columns."""
    report = {
        "checkpoint": scorer.checkpoint.source,
        "revision": scorer.checkpoint.revision,
        "signature": scorer.signature,
        "date": datetime.date.today().isoformat(),
        "command": "python -m benchmarks.human_correlation " + " ".join(argv or __import__("sys").argv[1:]),
        "with_facts": not args.no_facts,
        "protocols": list(dict.fromkeys(args.protocols)),
        "sets": {},
        "figures": [],
        "notes": [],
        "supervised_columns": [],
    }
    if scorer.checkpoint.head is None:
        report["notes"].append(
            "classifier score f(c,r): not reported, the checkpoint has no classification head "
            "(density_head.safetensors); no number is filled in from elsewhere."
        )
    if not args.untuned_checkpoint:
        report["notes"].append("no --untuned-checkpoint given, so no untuned-backbone baseline column.")
    baselines = [column for column in columns if not isinstance(column, ModelColumns)]
    if baselines:
        report["notes"].append(
            "BERT-RUBER, MaUde and Zhao et al. are re-implemented here on all-MiniLM-L6-v2 (the papers used "
            "BERT-base or RoBERTa); BERT-RUBER blended needs a reference reply, so it appears only on sets "
            "whose every row has one."
        )
        report["baselines"] = {type(c).__name__: getattr(c, "config", {}).get("command", "") for c in baselines}
    return report


def _score_sets(args, sets: list[JudgmentSet], scorer: DensityScorer, columns: list, report: dict) -> dict:
    """Every set's correlations into ``report`` (and its scatter plot); returns the row scores of
    scores.safetensors: the checkpoint's per-row scores, for paired tests."""
    row_scores: dict[str, np.ndarray] = {}
    for judgments in sets:
        logger.info("scoring %s (%d rows)", judgments.name, len(judgments.rows))
        if judgments.level == "dialogue":
            result = evaluate_dialogue_set(judgments, scorer, args.protocols)
            model = list(result["_values"])
        else:
            result = evaluate_turn_set(
                judgments, columns, not args.no_facts, args.protocols, with_references=not args.no_baselines
            )
            model = result.pop("_model")
            figure = f"scatter_{judgments.name}.png"
            plot_scatter(
                judgments.name, result["_human"], result["_values"]["DEnsity"], args.out / figure, "DEnsity s(r)"
            )
            report["figures"].append(figure)
        row_scores[f"{judgments.name}/human"] = np.asarray(result.pop("_human"), dtype=np.float64)
        values = result.pop("_values")
        row_scores.update({f"{judgments.name}/{name}": np.asarray(values[name], dtype=np.float64) for name in model})
        report["sets"][judgments.name] = result
        if judgments.level == "dialogue":
            continue
        supervised = report["supervised_columns"]
        supervised += [name for name in result.pop("_supervised") if name not in supervised]
        report["sets"][judgments.name] = result
    return row_scores


def _gold_vs_random(args, columns: list, report: dict, row_scores: dict) -> None:
    """The probes on DailyDialog test, and the gold against a random reply on its validation split (the histogram):
    into ``report`` and ``row_scores``."""
    data_dir = Path(args.data_dir) / "dailydialog"
    test_dialogues = list(load_dailydialog(data_dir, "test")["turns"])
    report["probes"] = run_probes(test_dialogues, columns, args.probes, args.seed)
    cases = make_probes(list(load_dailydialog(data_dir, "validation")["turns"]), args.histogram_pairs, args.seed)
    contexts = [case["context"] for case in cases]
    gold = {k: v for k, v in columns[0](contexts, [case["gold"] for case in cases]).items() if "calibrated" not in k}
    random_ = columns[0](contexts, [case["random"] for case in cases])
    plot_histogram(gold["DEnsity"], random_["DEnsity"], args.out / "histogram_gold_vs_random.png", "DEnsity s(r)")
    report["figures"].append("histogram_gold_vs_random.png")
    report["gold_vs_random_validation"] = {
        "n": len(cases),
        "share_gold_higher": float(np.mean(gold["DEnsity"] > random_["DEnsity"])),
        "share_gold_higher_by_metric": {name: float(np.mean(gold[name] > random_[name])) for name in gold},
    }
    for name in gold:
        row_scores[f"validation_gold_vs_random/gold/{name}"] = np.asarray(gold[name], dtype=np.float64)
        row_scores[f"validation_gold_vs_random/random/{name}"] = np.asarray(random_[name], dtype=np.float64)


def main(argv=None) -> None:
    parser = _parser()
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s: %(message)s")
    logging.getLogger("absl").setLevel(logging.WARNING)  # rouge-score logs every scorer it builds
    started = time.perf_counter()
    sets = _checked_sets(parser, args)
    args.out.mkdir(parents=True, exist_ok=True)

    def load(checkpoint, revision=None):
        return DensityScorer(checkpoint, revision, dtype=args.dtype, batch_size=args.batch_size)

    scorer = load(args.checkpoint, args.revision)
    columns = [ModelColumns(scorer, "")]
    if args.untuned_checkpoint:
        columns.append(ModelColumns(load(args.untuned_checkpoint), "untuned"))
    if not args.no_baselines:
        columns += available_columns(args.baselines_dir)
    if args.limit:
        for judgments in sets:
            judgments.rows = judgments.rows[: args.limit]
    report = _new_report(args, argv, scorer, columns)
    row_scores = _score_sets(args, sets, scorer, columns, report)
    _gold_vs_random(args, columns, report, row_scores)
    save_row_scores(args.out / "scores.safetensors", row_scores, report)
    report["seconds"] = round(time.perf_counter() - started, 1)

    write_json(args.out / "human_correlation.json", report, default=str)
    write_text(args.out / "human_correlation.md", markdown(report))
    logger.info("wrote %s in %.0f s", args.out / "human_correlation.md", report["seconds"])


if __name__ == "__main__":
    main()
