"""Which covariance estimator: pinv (the authors'), Ledoit-Wolf or OAS shrinkage?

    python -m benchmarks.covariance --train-pairs 20000 --checkpoint default

Fits all three on the same encoded DailyDialog training pairs (one encoding pass) and
reports, for each, the validation separation of gold from random responses (ROC AUC; the
selection criterion) and, for information only, Spearman rho on DailyDialog-Zhao (paper
protocol). Human judgments are not used to choose. It compares the density alone: a checkpoint's
repetition term (density_metric.repetition), if it has one, is left out of every column.
"""

from __future__ import annotations

import argparse
import json

import numpy as np

from density_metric import DensityScorer
from density_metric.correlation import auc, spearman
from density_metric.gaussian import ESTIMATORS, GaussianAccumulator, mahalanobis, precision_matrix, shrunk_covariance
from density_train.data.corpora import load_dailydialog, response_pairs
from density_train.data.judgments import apply_protocol, context_of

from .command_line import add_dtype_argument, check_checkpoint, check_counts, check_dailydialog, check_sets
from .probes import make_probes


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.covariance")
    parser.add_argument("--checkpoint", default="default")
    parser.add_argument(
        "--data-dir",
        default="../shared/data",
        help="folder with dailydialog/ and the human-judgment sets (default: ../shared/data, the checkout's neighbour)",
    )
    parser.add_argument("--train-pairs", type=int, default=20000)
    parser.add_argument("--valid-cases", type=int, default=1000)
    add_dtype_argument(parser)
    args = parser.parse_args(argv)
    check_counts(parser, args, "--train-pairs", least=2)  # a covariance needs two
    check_counts(parser, args, "--valid-cases")
    dailydialog = check_dailydialog(parser, args.data_dir, "train", "validation")
    [zhao] = check_sets(parser, args.data_dir, ["dailydialog_zhao"])
    check_checkpoint(parser, args.checkpoint)
    scorer = DensityScorer(args.checkpoint, dtype=args.dtype)
    contexts, responses = response_pairs(load_dailydialog(dailydialog, "train"))
    pick = np.random.default_rng(0).choice(len(responses), size=min(args.train_pairs, len(responses)), replace=False)
    accumulator = GaussianAccumulator(scorer.stats.dim)
    accumulator.update(scorer.features([contexts[i] for i in pick], [responses[i] for i in pick]))

    cases = make_probes(list(load_dailydialog(dailydialog, "validation")["turns"]), args.valid_cases, 0)
    case_contexts = [case["context"] for case in cases]
    gold = scorer.features(case_contexts, [case["gold"] for case in cases])
    random_ = scorer.features(case_contexts, [case["random"] for case in cases])
    index, human = apply_protocol(zhao, "paper")
    zhao_features = scorer.features(
        [context_of(zhao.rows[i], False) for i in index], [zhao.rows[i]["response"] for i in index]
    )

    report = {"train_pairs": accumulator.n, "signature": scorer.signature, "estimators": {}}
    for estimator in ESTIMATORS:
        covariance, shrinkage = shrunk_covariance(accumulator, estimator)
        precision = precision_matrix(covariance)
        gold_scores, random_scores, zhao_scores = (
            -mahalanobis(f, accumulator.mean, precision) for f in (gold, random_, zhao_features)
        )
        report["estimators"][estimator] = {
            "shrinkage": shrinkage,
            "valid_gold_vs_random_auc": auc(gold_scores, random_scores),
            "dailydialog_zhao_paper_spearman": 100 * spearman(zhao_scores, human),
        }
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
