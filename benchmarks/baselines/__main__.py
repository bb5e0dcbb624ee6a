"""python -m benchmarks.baselines train --system {bert-ruber,maude,zhao} [--out DIR] ...

Trains one baseline and writes its weights (safetensors) and ``config.json`` to ``--out``
(default ``benchmarks/baselines/weights/<system>``); prints the training report as JSON.
"""

from __future__ import annotations

import argparse
import json
import logging
import shlex
import sys

from ..command_line import check_checkpoint, check_counts, check_files, check_sets
from . import SYSTEMS, WEIGHTS_ROOT, module
from .zhao import TRAINED_ON


def main(argv=None) -> None:
    argv = list(sys.argv[1:] if argv is None else argv)
    parser = argparse.ArgumentParser(prog="python -m benchmarks.baselines")
    commands = parser.add_subparsers(dest="command", required=True)
    train = commands.add_parser("train", help="train one baseline metric")
    train.add_argument("--system", required=True, choices=sorted(SYSTEMS))
    train.add_argument("--out", default=None, help="weights folder (default: benchmarks/baselines/weights/SYSTEM)")
    train.add_argument(
        "--data-dir",
        default=None,
        help="bert-ruber, maude: the DailyDialog folder (default ../shared/data/dailydialog); "
        "zhao: the folder with the human-judgment sets (default ../shared/data)",
    )
    train.add_argument("--limit", type=int, default=0, help="bert-ruber, maude: first N training pairs (0: all)")
    train.add_argument("--checkpoint", default="default", help="zhao: the DEnsity checkpoint that is stage 1")
    train.add_argument("--epochs", type=int, default=None, help="most epochs (early stopping may end sooner)")
    train.add_argument("--seed", type=int, default=0)
    train.add_argument(
        "--cache-dir",
        default="runs/cache",
        help="bert-ruber, maude: keep the frozen embeddings here and reuse them on a retrain ('' for none)",
    )
    args = parser.parse_args(argv)
    check_counts(parser, args, "--epochs")
    check_counts(parser, args, "--limit", least=0)
    options = {"seed": args.seed, "command": "python -m benchmarks.baselines " + shlex.join(argv)}
    if args.epochs is not None:  # None: the system's own default
        options["epochs"] = args.epochs
    if args.system == "zhao":
        data_dir = args.data_dir or "../shared/data"
        check_sets(parser, data_dir, [TRAINED_ON[0]])
        check_checkpoint(parser, args.checkpoint)
        options.update(data_dir=data_dir, checkpoint=args.checkpoint)
    else:
        data_dir = args.data_dir or "../shared/data/dailydialog"
        check_files(parser, "--data-dir", data_dir, ["dialogues_train.txt", "dialogues_validation.txt"])
        options.update(data_dir=data_dir, limit=args.limit, cache_dir=args.cache_dir or None)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s: %(message)s")
    report = module(args.system).train(args.out or WEIGHTS_ROOT / args.system, **options)
    print(json.dumps({k: v for k, v in report.items() if k != "history"}, indent=2))


if __name__ == "__main__":
    main()
