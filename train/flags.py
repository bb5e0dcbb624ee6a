"""The command-line flags of a training recipe: their definitions (:func:`add_recipe_arguments`, with
the pair-format flags that ``fit`` shares), and the :class:`~train.config.TrainConfig` they give
(:func:`config_from_args`), keeping the pair format of an ``--init-from`` checkpoint.
"""

from __future__ import annotations

import argparse
from dataclasses import fields

from density_metric.pair_format import LAYOUTS, POOLINGS, PairFormat

from .arguments import checkpoint_folder
from .config import LR_SCALINGS, MAX_CONTEXTS, OVERLAP_SOURCES, REFERENCE_CONTEXTS, TrainConfig, flag_of
from .density_term import (
    DEFAULT_BANK_SIZE,
    DEFAULT_COPIES,
    DEFAULT_COPY_MIX,
    DEFAULT_MARGIN,
    DEFAULT_SHRINKAGE,
    MARGIN_AGAINST,
)
from .grounding_validation import USES_LINES
from .losses import CONTRASTIVE_AVERAGES
from .negative_kinds import GOLD_KINDS, KINDS
from .negatives import NegativeMix
from .validation import OVERLAP_MIN


def config_from_args(args: argparse.Namespace) -> TrainConfig:
    """The TrainConfig of ``python -m train train``'s flags; a ValueError names the flag."""
    try:
        NegativeMix.parse(args.negative_mix)
    except ValueError as err:
        raise ValueError(f"--negative-mix {args.negative_mix!r}: {err}") from None
    return TrainConfig(
        backbone=args.backbone,
        pair_format=pair_format_from(args, init_from_pair_format(args.init_from) if args.init_from else None),
        feature_only_last_layer=not args.full_last_layer,
        **{
            f.name: getattr(args, f.name)
            for f in fields(TrainConfig)
            if f.name not in ("backbone", "pair_format", "feature_only_last_layer")
        },
    )


def init_from_pair_format(directory: str, flag: str = "--init-from") -> PairFormat:
    """The pair format of the DEnsity checkpoint ``directory`` (given as ``flag``; ``default``, a folder
    or a Hub repo id, as :func:`train.arguments.checkpoint_folder` resolves it), which the run must keep; a
    ValueError names the folder or file."""
    from density_metric.checkpoint_format import CONFIG_FILE, DensityConfig
    from density_metric.errors import CheckpointError

    path = checkpoint_folder(directory, flag) / CONFIG_FILE
    if not path.is_file():
        raise ValueError(f"{flag} {directory}: no {CONFIG_FILE}; give a DEnsity checkpoint folder")
    try:
        return DensityConfig.from_file(path).pair_format
    except CheckpointError as err:
        raise ValueError(f"{flag}: {err}") from None


def pair_format_from(args, checkpoint: PairFormat | None = None, flag: str = "--init-from") -> PairFormat:
    """The PairFormat of the pair-format flags (a flag not given: the default, or ``checkpoint``'s
    value, the format of the folder given as ``flag``); a ValueError names a flag that contradicts
    ``checkpoint``, or a broken bound."""
    base = checkpoint or PairFormat()
    values = {name: getattr(args, name) for name in _PAIR_FORMAT_FIELDS}
    if checkpoint is not None:
        clashes = [
            f"{flag_of(name)} {value!r} (the checkpoint has {getattr(checkpoint, name)!r})"
            for name, value in values.items()
            if value is not None and value != getattr(checkpoint, name)
        ]
        if clashes:
            raise ValueError(f"{flag} keeps the checkpoint's pair format; drop {', '.join(clashes)}")
    return PairFormat(**{name: getattr(base, name) if value is None else value for name, value in values.items()})


_PAIR_FORMAT_FIELDS = ("turn_separator", "max_length", "max_response_length", "layout", "pooling")


def add_pair_format_arguments(parser) -> None:
    defaults = PairFormat()
    group = parser.add_argument_group("pair format (how a pair becomes token ids; stored in the checkpoint)")
    group.add_argument(
        "--turn-separator",
        default=None,
        help=f"token between context turns; a new one is added to the vocabulary (default: {defaults.turn_separator})",
    )
    group.add_argument(
        "--max-length",
        type=int,
        default=None,
        help=f"most tokens per pair; the oldest context tokens go first (default: {defaults.max_length})",
    )
    group.add_argument(
        "--layout",
        choices=LAYOUTS,
        default=None,
        help="paper (default, the published method: one row per pair) or shared-context (one row per "
        "context, a block per candidate; see density_metric/pair_format.py)",
    )
    group.add_argument(
        "--pooling",
        choices=POOLINGS,
        default=None,
        help="feature-token (default: the final-layer state of [CLS], or of each block's first token) or mean "
        "(the mean over each candidate's block; shared-context only, computes the whole last layer)",
    )
    group.add_argument(
        "--max-response-length",
        type=int,
        default=None,
        help=f"most response tokens (default: {defaults.max_response_length})",
    )


def add_recipe_arguments(parser: argparse.ArgumentParser) -> None:
    """The flags of :class:`TrainConfig`: pair format, recipe, negatives and validation, speed."""
    add_pair_format_arguments(parser)
    recipe = parser.add_argument_group("recipe (defaults: the authors' DailyDialog settings)")
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
    recipe.add_argument(
        "--lr-scaling",
        choices=LR_SCALINGS,
        default="none",
        help="how the learning rate follows the contexts a step C (--batch-size x --grad-accum x processes, "
        f"{REFERENCE_CONTEXTS}-{MAX_CONTEXTS}): 'linear' trains at lr x C / {REFERENCE_CONTEXTS}, 'sqrt' at "
        f"lr x sqrt(C / {REFERENCE_CONTEXTS}), --lr being the rate at {REFERENCE_CONTEXTS} contexts; "
        "'none' (default): --lr as given",
    )
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
    negatives = parser.add_argument_group("negatives and validation (train/negatives.py, train/validation.py)")
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
        "auc_density/echo, or several joined by + for their mean (default recall_at_1)",
    )
    negatives.add_argument(
        "--select-floor",
        default="",
        help="METRIC=VALUE: evaluations whose METRIC is below VALUE are never kept in best/, "
        "e.g. zhao_dev_spearman=52.36; or METRIC=start-OFFSET, relative to the run's step-0 evaluation "
        "(with --eval-at-start), e.g. zhao_dev_spearman=start-1",
    )
    negatives.add_argument(
        "--valid-negatives",
        type=int,
        default=0,
        help="random candidates beside each validation gold for Recall@1 (default 0: --negatives)",
    )
    negatives.add_argument(
        "--eval-at-start", action="store_true", help="evaluate the starting model too, logged as step 0"
    )
    negatives.add_argument(
        "--dev-judgments",
        default=None,
        help="shared data folder with zhao2020/: validate on DailyDialog-Zhao's first 20 %%",
    )
    grounding = parser.add_argument_group("grounding (train/grounding.py, train/grounding_validation.py)")
    grounding.add_argument(
        "--grounding",
        default="",
        metavar="SPEC",
        help="grounded training contexts: 'your persona:' lines the gold uses (sentences of its corpus sharing "
        "its rare content words) and distractors, before a share of the contexts, e.g. "
        "rate=0.5,used=2,distractors=2 (default '': off); needs --grounding-exclude",
    )
    grounding.add_argument(
        "--grounding-exclude",
        default="",
        metavar="DIR",
        help="shared data folder: grounding lines never use a sentence of its human-judgment sets or of "
        "DailyDialog's validation and test dialogues",
    )
    grounding.add_argument(
        "--grounding-valid",
        default="",
        metavar="FILE",
        help="ConvAI2 file (e.g. ../shared/data/convai2/valid_unused_by_benchmarks.txt): every evaluation logs "
        "grounding/* (persona and last-turn overlap Spearman, Recall@1, gold beats echo) on its seeded golds",
    )
    grounding.add_argument(
        "--grounding-valid-pairs",
        type=int,
        default=1200,
        help="seeded golds of --grounding-valid, each scored with its echo and 4 distractors (default 1200)",
    )
    grounding.add_argument(
        "--grounded-valid",
        default="",
        metavar="CORPORA",
        help="grounded corpora (personachat, topical_chat; comma-separated) whose held-out split every evaluation "
        "scores like --grounding-valid, logged as grounding_<corpus>/*, up to --grounding-valid-pairs golds each; "
        "needs each corpus's folder flag (--personachat, --topical-chat)",
    )
    grounding.add_argument(
        "--keep-lines",
        action="store_true",
        help="read grounding lines (persona or knowledge lines, first in a context) whole where they fit: drop the "
        "oldest dialogue turns of a long context instead, never the last (training, validation and grounding "
        "contexts; the checkpoint's scorer does not know it yet)",
    )
    grounding.add_argument(
        "--plain-fit-corpus",
        default="",
        metavar="CORPUS",
        help="also log every density metric under a Gaussian of this corpus's training golds only, as plain/* "
        "(e.g. dailydialog in a mixed run: is a gain the encoder's or the Gaussian's?)",
    )
    density = parser.add_argument_group(
        "fine-tuning and the density term (train/density_term.py: copies of the context must lie farther "
        "out than golds under the Gaussian of the current golds)"
    )
    density.add_argument(
        "--init-from",
        default="",
        metavar="CHECKPOINT",
        help="start from a DEnsity checkpoint's encoder, head and pair format (pair-format flags that "
        "contradict it are refused): 'default' (the bundled release), a folder or a Hub repo id",
    )
    density.add_argument(
        "--no-dropout", dest="dropout", action="store_false", help="turn every dropout off (default: the backbone's)"
    )
    density.add_argument(
        "--density-weight", type=float, default=0.0, help="weight of the density term's margin (default 0: off)"
    )
    density.add_argument(
        "--density-margin",
        type=float,
        default=DEFAULT_MARGIN,
        help=f"how much farther out a copy must lie (default {DEFAULT_MARGIN:g})",
    )
    density.add_argument(
        "--margin-against",
        choices=MARGIN_AGAINST,
        default="gold",
        help="gold: each copy must lie --density-margin beyond its own gold (default); bank: beyond every gold "
        "of the bank, averaged (a hinge form of 1 - AUC)",
    )
    density.add_argument(
        "--density-copies", type=int, default=DEFAULT_COPIES, help=f"copies per context (default {DEFAULT_COPIES})"
    )
    density.add_argument(
        "--copy-mix",
        default=DEFAULT_COPY_MIX,
        help=f"kinds of the copies, weighted as --negative-mix (default {DEFAULT_COPY_MIX}); a kind that "
        "cannot make a copy falls back to a random utterance, which the margin leaves out",
    )
    density.add_argument(
        "--bank-size",
        type=int,
        default=DEFAULT_BANK_SIZE,
        help=f"recent gold features whose Gaussian the term uses (default {DEFAULT_BANK_SIZE})",
    )
    density.add_argument(
        "--bank-shrinkage",
        type=float,
        default=DEFAULT_SHRINKAGE,
        help=f"shrinkage of the bank's covariance (default {DEFAULT_SHRINKAGE:g})",
    )
    density.add_argument(
        "--anchor-weight",
        type=float,
        default=1.0,
        help="weight of the golds' Mahalanobis drift from the --init-from model (default 1; 0: none)",
    )
    density.add_argument(
        "--overlap-rows",
        type=int,
        default=0,
        help=f"contexts of each micro-batch drawn from pairs whose gold shares at least {OVERLAP_MIN:.0%}% of its words with "
        "the last context turn (default 0: the plain shuffle)",
    )
    density.add_argument(
        "--overlap-source",
        choices=OVERLAP_SOURCES,
        default="last-turn",
        help="the golds --overlap-rows draws from: those reusing the last turn's words (default), or 'lines': those "
        f"using their grounding lines (content-word overlap >= {USES_LINES:g} with them; persona or knowledge chats)",
    )
    density.add_argument(
        "--anchor-negatives",
        action="store_true",
        help="hold the cross-entropy's negatives near the --init-from model's features too, not only the golds",
    )
    speed = parser.add_argument_group("speed")
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
