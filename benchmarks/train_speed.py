"""Training speed of the layouts and savings, on the same DailyDialog contexts, in one process.

    python -m benchmarks.train_speed --steps 4 --json benchmarks/train_speed_cpu.json

Each arm is a fresh ``Trainer`` (all-MiniLM-L6-v2, 16 contexts x 1 + 15 random negatives per step
in micro-batches of ``--micro-batch`` contexts, ``--mixed-precision`` as in training: ``auto`` is
bf16 autocast where the CPU has bf16 instructions, else float32; 2 threads) that takes ``--steps`` optimizer steps after one warm-up step,
on the first batches of epoch 0 of the same training pairs. Arms run in turn for ``--rounds``
rounds and each keeps its best time, so that the machine's drift hits all alike. Reported:
seconds per step, contexts and candidates per second, and the ratio to the first arm. The loop's own host work,
with a model that costs almost nothing, is benchmarks/train_host.py.
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from pathlib import Path

import numpy as np
import torch

from density_metric.encoding.device import machine_description
from density_metric.encoding.pair_format import PairFormat
from density_metric.io.outputs import write_json
from density_train.config.recipe import TrainConfig
from density_train.data.corpora import load_dailydialog, response_pairs
from density_train.data.examples import SelectionData, epoch_batches, epoch_negatives
from density_train.loop.trainer import Trainer

from .command_line import check_counts, check_dailydialog, check_output

ARMS = {
    "paper, full last layer": dict(layout="paper", feature_only_last_layer=False),
    "paper, feature-only last layer": dict(layout="paper"),
    "paper, feature-only last layer, length buckets": dict(layout="paper", length_buckets=50),
    "shared-context": dict(layout="shared-context"),
    "shared-context, attention dropout 0": dict(layout="shared-context", attention_dropout=0.0),
    "shared-context, mean pooling": dict(layout="shared-context", pooling="mean"),
}


def make_trainer(arm: dict, args, train: SelectionData, valid: SelectionData, out: Path) -> Trainer:
    arm = dict(arm)
    pair_format = PairFormat(
        max_length=args.max_length,
        max_response_length=args.max_response_length,
        layout=arm.pop("layout"),
        pooling=arm.pop("pooling", "feature-token"),
    )
    config = TrainConfig(
        backbone="minilm", pair_format=pair_format, negatives=15, mixed_precision=args.mixed_precision, **arm
    )
    return Trainer(config, train, valid, out)


def time_steps(trainer: Trainer, negatives, steps: int, micro: int) -> float:
    """Seconds per optimizer step over ``steps`` steps of epoch 0's first batches (after one warm-up step)."""
    config = trainer.config
    batches = epoch_batches(
        len(trainer.train_data), config.batch_size, config.seed, trainer.context_lengths, config.length_buckets
    )
    trainer.model.train()

    def step(rows):
        # Micro-batches of `micro` contexts with accumulated gradients: the paper layout's 16 x 16
        # rows of 256 tokens do not fit 24 GB in one float32 pass.
        for start in range(0, len(rows), micro):
            part = rows[start : start + micro]
            contexts = [trainer.train_data.contexts[i] for i in part]
            candidates = [[trainer.train_data.responses[i], *negatives[i]] for i in part]
            kinds = [["random"] * len(negatives[i]) for i in part]
            loss = trainer._micro_batch_loss(contexts, candidates, kinds)[0]  # then its parts and the golds
            trainer.accelerator.backward(loss * len(part) / len(rows))
        trainer.optimizer.step()
        trainer.optimizer.zero_grad()

    step(batches[0])
    started = time.perf_counter()
    for rows in batches[1 : steps + 1]:
        step(rows)
    return (time.perf_counter() - started) / steps


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.train_speed", description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--data-dir", default="../shared/data", help="folder with dailydialog/ (default: ../shared/data)"
    )
    parser.add_argument(
        "--train-pairs",
        type=int,
        default=4000,
        help="a seeded sample of this many training pairs to draw batches from (the corpus's first pairs "
        "have shorter contexts than the rest: 3.7 s against 6.0 s per shared-context step at 128 tokens)",
    )
    parser.add_argument("--steps", type=int, default=4)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--max-length", type=int, default=256)
    parser.add_argument("--max-response-length", type=int, default=64)
    parser.add_argument("--micro-batch", type=int, default=4, help="contexts per forward pass of a 16-context step")
    parser.add_argument(
        "--mixed-precision",
        default="auto",
        choices=("auto", "no", "bf16"),
        help="as train's flag: 'no' pins float32, as the pilots do (default: auto)",
    )
    parser.add_argument(
        "--arms", nargs="+", default=list(ARMS), choices=list(ARMS), metavar="ARM", help=f"default: all of {list(ARMS)}"
    )
    parser.add_argument("--json", type=Path)
    args = parser.parse_args(argv)
    check_counts(parser, args, "--train-pairs", "--steps", "--rounds", "--max-length", "--max-response-length")
    check_counts(parser, args, "--micro-batch")
    if args.train_pairs // 16 < args.steps + 1:  # epoch_batches drops the last partial batch
        parser.error(
            f"--train-pairs {args.train_pairs} makes {args.train_pairs // 16} steps of 16 contexts; "
            f"--steps {args.steps} needs {args.steps + 1} (one warm-up step)"
        )
    for layout in sorted({ARMS[name]["layout"] for name in args.arms}):
        try:
            PairFormat(max_length=args.max_length, max_response_length=args.max_response_length, layout=layout)
        except ValueError as err:
            parser.error(str(err))
    check_output(parser, "--json", args.json)
    dailydialog = check_dailydialog(parser, args.data_dir, "train")

    contexts, responses = response_pairs(load_dailydialog(dailydialog, "train"))
    sample = np.sort(np.random.default_rng(0).permutation(len(contexts))[: args.train_pairs])
    train = SelectionData.from_pairs([contexts[i] for i in sample], [responses[i] for i in sample])
    valid = SelectionData.from_pairs(contexts[:64], responses[:64])
    negatives = epoch_negatives(train, 15, 42, 0, False)
    best = {name: float("inf") for name in args.arms}
    with tempfile.TemporaryDirectory() as scratch:
        for _ in range(args.rounds):
            for name in args.arms:
                trainer = make_trainer(ARMS[name], args, train, valid, Path(scratch) / name.replace(" ", "_"))
                best[name] = min(best[name], time_steps(trainer, negatives, args.steps, args.micro_batch))
                del trainer
    first = best[args.arms[0]]
    report = {
        "machine": machine_description("cpu"),
        "torch_threads": torch.get_num_threads(),
        "mixed_precision": args.mixed_precision,
        "max_length": args.max_length,
        "max_response_length": args.max_response_length,
        "train_pairs": f"seeded sample of {args.train_pairs}",
        "contexts_per_step": 16,
        "contexts_per_micro_batch": args.micro_batch,
        "candidates_per_context": 16,
        "arms": {
            name: {
                "seconds_per_step": round(seconds, 3),
                "contexts_per_second": round(16 / seconds, 2),
                "candidates_per_second": round(256 / seconds, 1),
                "speed_vs_first": round(first / seconds, 2),
            }
            for name, seconds in best.items()
        },
    }
    print(json.dumps(report, indent=2))
    if args.json:
        write_json(args.json, report)


if __name__ == "__main__":
    main()
