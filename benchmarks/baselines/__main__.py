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

from . import SYSTEMS, WEIGHTS_ROOT, module


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
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s: %(message)s")
    options = {"seed": args.seed, "command": "python -m benchmarks.baselines " + shlex.join(argv)}
    if args.epochs:
        options["epochs"] = args.epochs
    if args.system == "zhao":
        options.update(data_dir=args.data_dir or "../shared/data", checkpoint=args.checkpoint)
    else:
        options.update(
            data_dir=args.data_dir or "../shared/data/dailydialog", limit=args.limit, cache_dir=args.cache_dir or None
        )
    report = module(args.system).train(args.out or WEIGHTS_ROOT / args.system, **options)
    print(json.dumps({k: v for k, v in report.items() if k != "history"}, indent=2))


if __name__ == "__main__":
    main()
