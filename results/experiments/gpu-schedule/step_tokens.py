"""How much arithmetic a step of the paper's recipe holds, counted on the CPU from the run's own micro-batches, and what
share of the H200's bf16 peak E1's measured step time makes of it (issue 67's "share of bf16 peak").

    PYTHONPATH=. python results/experiments/gpu-schedule/step_tokens.py --steps 300 > results/experiments/gpu-schedule/E1/STEP_TOKENS.md

Builds the E1 command's ``Trainer`` (benchmarks/device_recipes.py's ``paper`` flags, the published DailyDialog
training split) over a random 2-layer encoder with all-MiniLM-L6-v2's tokenizer, so that its micro-batches are
E1's (the draws depend on the seeds and the data only), and reads the padded shape and the real tokens of the first
``--steps`` steps. The forward FLOPs of all-MiniLM-L6-v2 (6 layers, 384 wide, 1,536 inner) on those shapes: the
matrix products of every token (4 d^2 + 2 d inner multiply-adds a layer) and the attention over the padded row
(2 L^2 d a layer: scores and values), both x2 for multiply-adds; a training step is 3 forwards (the backward
twice the forward). The time per step comes from E1's log (``log.jsonl.gz`` beside it, its train records' clock).
"""

from __future__ import annotations

import argparse
import gzip
import json
import tempfile
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
D, LAYERS, INNER = 384, 6, 1536  # all-MiniLM-L6-v2
PEAK = 790e12  # the H200's dense bf16, FLOP/s, as the GPU machine's notes give it (NVIDIA's H200 SXM sheet: 989e12)


def step_times(log: Path) -> np.ndarray:
    """Seconds between consecutive train records of the same chunk, evaluation steps left out."""
    rows = [json.loads(line) for line in gzip.open(log, "rt")]
    out, last = [], None
    for row in rows:
        if row["type"] != "train":
            last = None  # the evaluation's seconds are not a step's
            continue
        if last is not None and row["elapsed"] > last:
            out.append(row["elapsed"] - last)
        last = row["elapsed"]
    return np.array(out)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, default=300)
    parser.add_argument("--data-dir", default="../shared/data/dailydialog")
    args = parser.parse_args()

    import torch

    from benchmarks.device_recipes import PAPER_RECIPE
    from benchmarks.train_host import build_encoder
    from density_train.commands import build_parser
    from density_train.config.flags import config_from_args
    from density_train.data.corpora import load_selection_data
    from density_train.loop.step_batches import StepBatches
    from density_train.loop.trainer import Trainer

    scratch = Path(tempfile.mkdtemp())
    build_encoder(scratch / "encoder")
    argv = ["train", *PAPER_RECIPE, "--data-dir", args.data_dir, "--backbone", str(scratch / "encoder")]
    argv += ["--out", str(scratch / "run"), "--mixed-precision", "no"]
    parsed = build_parser().parse_args(argv)
    config = config_from_args(parsed)
    trainer = Trainer(config, *load_selection_data(parsed), scratch / "run")
    batches = StepBatches(trainer)
    plan = batches.epoch(0)
    pad = trainer.tokenizer.pad_token_id
    padded, real, flops = [], [], []
    for step in range(args.steps):
        (micro,) = batches.step(plan, 0, step, step)
        ids = micro.inputs["input_ids"]
        rows, length = ids.shape
        tokens = int((ids != pad).sum())
        padded.append(rows * length)
        real.append(tokens)
        per_token = 2 * (4 * D * D + 2 * D * INNER)
        flops.append(3 * LAYERS * (rows * length * per_token + rows * 2 * 2 * length * length * D))
    torch.set_num_threads(1)
    seconds = step_times(HERE / "E1" / "log.jsonl.gz")
    median = float(np.median(seconds))
    print(f"# A step of the paper's recipe: tokens, FLOPs and the share of the H200's bf16 peak ({args.steps} steps)\n")
    print(f"Written by `PYTHONPATH=. python results/experiments/gpu-schedule/step_tokens.py --steps {args.steps}`.\n")
    print("| per step (16 contexts x 16 candidates, shared-context rows) | median | mean |")
    print("| --- | --- | --- |")
    print(f"| padded tokens (rows x longest row) | {np.median(padded):,.0f} | {np.mean(padded):,.0f} |")
    print(f"| real tokens | {np.median(real):,.0f} | {np.mean(real):,.0f} |")
    print(
        f"| training FLOPs on the padded rows (3 forwards) | {np.median(flops) / 1e12:.3f} T | {np.mean(flops) / 1e12:.3f} T |"
    )
    mean_flops = float(np.mean(flops))
    print(
        f"\nE1's step on the H200 (its log, {len(seconds):,} intervals between train records, each read to 0.01 s): "
        f"mean {1000 * seconds.mean():.1f} ms ({16 / seconds.mean():.0f} contexts/s), median {1000 * median:.0f} ms. "
        f"{mean_flops / 1e12:.3f} T a step is {mean_flops / seconds.mean() / 1e12:.1f} TFLOP/s at the mean step, "
        f"{100 * mean_flops / seconds.mean() / PEAK:.1f} % of the bf16 dense peak (790 TFLOP/s), and "
        f"{mean_flops / median / 1e12:.1f} TFLOP/s ({100 * mean_flops / median / PEAK:.1f} %) at the median step."
    )


if __name__ == "__main__":
    main()
