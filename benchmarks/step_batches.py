"""The training loop's feed: how fast its background thread makes a step's micro-batches, per named recipe.

    python -m benchmarks.step_batches --json benchmarks/step_batches_cpu.json

For each recipe of :mod:`benchmarks.device_recipes`, the device command's own training arguments
(:func:`benchmarks.device_commands.train_argv` at the device's scale, float32, on the first ``--train-pairs``
DailyDialog training pairs) build a ``Trainer``. Then ``StepBatches.step``, what the loop's background thread does
for a step (the negatives' and copies' draws, the gathers from the token store, the padding:
``train/loop/step_batches.py``), is timed without the model's work, on ``--steps`` steps of epoch 0 after
``--warm-up`` steps. One host thread doing only this feeds at most (contexts a step) / (median seconds a step)
contexts a second, the figure to set beside the GPU targets of the loop (docs/speed.md). As in training, a recipe of
several epochs draws the next epoch's tables in another thread meanwhile (``StepBatches.epoch``): the slowest steps
(the 90th percentile) hold that, the median does not. A recipe that starts from a
checkpoint starts from the bundled one; a backbone recipe from all-MiniLM-L6-v2 (``minilm``). The setup seconds
(token store, tables, the density term's anchor and gold bank) are reported, not timed with the steps.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from .command_line import check_counts, check_dailydialog, check_output
from .device_recipes import RECIPES


def recipe_trainer(name: str, data_dir: str, train_pairs: int, out: Path):
    """A fresh ``Trainer`` of recipe ``name`` as the device command builds it (device scale, float32)."""
    from density_train.data.corpora import load_selection_data
    from density_train.loop.trainer import Trainer

    from .device_train import parse_args, parsed_train_args, train_argv

    start = "minilm" if RECIPES[name].starts_from == "backbone" else "density_metric/default"
    scale = ["--train-limit", str(train_pairs), "--mixed-precision", "no"]
    device_args = parse_args([name, "--out", str(out), "--data-dir", data_dir, "--start", start, *scale])
    train_args = parsed_train_args(train_argv(device_args, out / "run", minutes=60))
    config = train_args.config
    trainer = Trainer(config, *load_selection_data(train_args), out / "run")
    return trainer, config


def time_steps(trainer, steps: int, warm_up: int) -> np.ndarray:
    """Seconds of ``StepBatches.step`` for each of the steps after ``warm_up`` of epoch 0."""
    plan, seconds = trainer.batches.epoch(0), []
    for step in range(warm_up + steps):
        started = time.perf_counter()
        trainer.batches.step(plan, 0, step, step)
        seconds.append(time.perf_counter() - started)
    return np.array(seconds[warm_up:])


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.step_batches", description=__doc__.split("\n\n")[0])
    parser.add_argument("--recipes", nargs="+", choices=RECIPES, default=list(RECIPES), help="default: all")
    parser.add_argument(
        "--data-dir", default="../shared/data", help="folder with dailydialog/ (default: ../shared/data)"
    )
    parser.add_argument("--train-pairs", type=int, default=4000, help="first training pairs (default: 4000)")
    parser.add_argument("--steps", type=int, default=50, help="timed steps per recipe (default: 50)")
    parser.add_argument("--warm-up", type=int, default=5, help="steps before the timed ones (default: 5)")
    parser.add_argument("--json", type=Path)
    args = parser.parse_args(argv)
    check_counts(parser, args, "--train-pairs", "--steps", "--warm-up")
    check_output(parser, "--json", args.json)
    check_dailydialog(parser, args.data_dir, "train")
    import torch

    from density_metric.encoding.device import machine_description
    from density_metric.io.outputs import write_json

    torch.set_num_threads(1)  # the setup's encoder passes; the steps themselves use no torch threads
    recipes = {}
    for name in args.recipes:
        with tempfile.TemporaryDirectory() as scratch:
            started = time.perf_counter()
            trainer, config = recipe_trainer(name, args.data_dir, args.train_pairs, Path(scratch))
            setup = time.perf_counter() - started
            seconds = time_steps(trainer, args.steps, args.warm_up)
        contexts = config.batch_size * config.grad_accum
        recipes[name] = {
            "contexts_per_step": contexts,
            "candidates_per_context": 1 + config.negatives + (config.density_copies if config.density_weight else 0),
            "median_ms_per_step": round(1000 * float(np.median(seconds)), 3),
            "p90_ms_per_step": round(1000 * float(np.quantile(seconds, 0.9)), 3),
            "contexts_per_second_fed": round(contexts / float(np.median(seconds))),
            "setup_seconds": round(setup, 1),
        }
        print(name, json.dumps(recipes[name]), file=sys.stderr)
    report = {
        "machine": machine_description("cpu"),
        "command": "python -m benchmarks.step_batches " + " ".join(argv if argv is not None else sys.argv[1:]),
        "what": "StepBatches.step alone (one step's draws, gathers and padding, on the host), the device command's "
        f"training arguments on the first {args.train_pairs} DailyDialog training pairs, float32; median over "
        f"{args.steps} steps of epoch 0 after {args.warm_up}",
        "recipes": recipes,
    }
    print(json.dumps(report, indent=2))
    if args.json:
        write_json(args.json, report)


if __name__ == "__main__":
    main()
