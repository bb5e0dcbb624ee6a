"""The recipe of a training run (:class:`TrainConfig`), its command-line flags, and what may change
when a run is resumed.

The run folder's ``state/trainer_state.json`` keeps the config the run started with; a resumed run
must give the same recipe (:func:`check_resumable`), except for the flags of :data:`RESUMABLE_FLAGS`.
"""

from __future__ import annotations

import argparse
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path

from density_metric.pair_format import LAYOUTS, POOLINGS, PairFormat

from .density_term import (
    DEFAULT_BANK_SIZE,
    DEFAULT_COPIES,
    DEFAULT_COPY_MIX,
    DEFAULT_MARGIN,
    DEFAULT_SHRINKAGE,
    MARGIN_AGAINST,
)
from .losses import CONTRASTIVE_AVERAGES
from .negatives import GOLD_KINDS, KINDS, NegativeMix
from .selection import parse_floor, required_metrics
from .validation import OVERLAP_MIN

# Flags of `python -m train train` that a resumed run may change: they set how fast or how long the
# run goes, or act after the loop (the final fit and the card), so the trained weights stay those of
# one recipe. Every other flag of the recipe is compared with the one the run started with.
RESUMABLE_FLAGS = (
    "--max-minutes",
    "--eval-batch-size",
    "--save-every",
    "--name",
    "--repo-id",
    "--fit-batch-size",
    "--fit-pairs",
    "--estimator",
    "--weights-dtype",
)
# Fields whose flag is not "--" + the field's name with dashes (store_true flags say when they are on).
_FLAGS = {"feature_only_last_layer": "--full-last-layer", "dropout": "--no-dropout"}


@dataclass
class TrainConfig:
    """The recipe. The defaults are the authors' DailyDialog settings: bert-base-uncased, 1 + 15
    candidates at 256 tokens, negatives sampled once with seed 42, 10 epochs of 16 contexts per
    step, AdamW at 5e-5 with 1,000 warm-up steps, and the contrastive loss at tau 0.1 and weight 1
    averaged over the gold anchors (the paper's eq. 4)."""

    backbone: str = "bert-base-uncased"
    pair_format: PairFormat = field(default_factory=PairFormat)
    negatives: int = 15
    resample_negatives: bool = False
    negatives_seed: int = 42
    epochs: int = 10
    batch_size: int = 16  # contexts per micro-batch and process, each with 1 + negatives candidates
    grad_accum: int = 1
    lr: float = 5e-5
    weight_decay: float = 0.0
    warmup_steps: int = 1000
    max_grad_norm: float = 1.0
    tau: float = 0.1  # temperature of the supervised contrastive loss
    contrastive_weight: float = 1.0  # the paper's lambda: loss = CE + contrastive_weight * SCL
    contrastive_average: str = "gold-anchors"  # "gold-anchors" (the paper) or "all-rows" (the authors' code)
    # Negative kinds kept out of the contrastive term (still in the cross-entropy), e.g.
    # "speaker,repeat,drop,shuffle": comma-separated; "" (the paper): none.
    contrastive_exclude: str = ""
    seed: int = 42
    eval_batch_size: int = 32  # validation contexts per forward pass
    valid_limit: int = 0  # validation pairs scored for Recall@1 after each epoch; 0: all
    mixed_precision: str = "auto"  # "auto": bf16 on CUDA and on CPUs with native bf16, else "no"; or "no"/"bf16"/"fp16"
    max_steps_per_epoch: int = 0  # 0: the whole epoch
    save_every: int = 200  # optimizer steps between saves of state/ (also saved after every epoch)
    # Savings that leave the loss as it is:
    feature_only_last_layer: bool = True  # last layer computed for the feature tokens only
    length_buckets: int = 0  # >0: windows of this many batches sorted by context length, batches shuffled
    # A change to the model: attention-probability dropout (None: the backbone's own, 0.1 for BERTs).
    attention_dropout: float | None = None
    # Negatives (train/negatives.py): "random:1" is the authors' random negatives. With any other
    # mix every negative, hard or random, is drawn afresh each epoch from negatives_seed + epoch.
    negative_mix: str = "random:1"
    # A curriculum: the first this-many optimizer steps draw random negatives only (from the same
    # seed + epoch as the mix's random ones), then the mix. 0: the mix from the first step.
    hard_negatives_after: int = 0
    retrieval_index: str = ""  # safetensors from `python -m train retrieval-index`, for "retrieved"
    # Validation (train/validation.py): kinds for per-kind AUCs ("all": every kind the data allows,
    # "": none), training pairs the evaluation Gaussian is fitted on, evaluations per epoch, and
    # the metric (higher is better) that picks best/.
    validation_kinds: str = "all"
    valid_fit_pairs: int = 4000
    evals_per_epoch: int = 1
    select_on: str = "recall_at_1"  # one metric, or several joined by "+" (their mean): train/selection.py
    select_floor: str = ""  # "METRIC=VALUE": evaluations with METRIC below VALUE are never kept
    valid_negatives: int = 0  # random candidates beside each validation gold for Recall@1; 0: ``negatives``
    eval_at_start: bool = False  # evaluate the starting model too (logged as step 0): a fine-tune's baseline
    # Fine-tuning: a DEnsity checkpoint (or a run's best/) whose encoder and head the run starts from.
    init_from: str = ""
    dropout: bool = True  # False: every dropout off (the density term wants features without it)
    # The density term (train/density_term.py); weight 0: off. Each context also gets density_copies
    # negatives of copy_mix's kinds, for this term and the contrastive term, never the cross-entropy.
    density_weight: float = 0.0
    density_margin: float = DEFAULT_MARGIN
    margin_against: str = "gold"  # each copy against its own gold, or "bank": against every gold of the bank
    density_copies: int = DEFAULT_COPIES
    copy_mix: str = DEFAULT_COPY_MIX
    bank_size: int = DEFAULT_BANK_SIZE
    bank_shrinkage: float = DEFAULT_SHRINKAGE
    anchor_weight: float = 1.0  # drift of the golds from the starting model's features (needs init_from)
    anchor_negatives: bool = False  # the drift also of the cross-entropy's negatives, not only of the golds
    # contexts per micro-batch drawn from the pairs whose gold shares >= OVERLAP_MIN of its words with the
    # last context turn (replies that reuse the question's words, which people do not punish); 0: none
    overlap_rows: int = 0

    def __post_init__(self):
        if isinstance(self.pair_format, dict):  # as read back from trainer_state.json
            self.pair_format = PairFormat.from_dict(self.pair_format)
        smallest = {"negatives": 1, "epochs": 1, "batch_size": 1, "grad_accum": 1, "eval_batch_size": 1}
        smallest |= {"save_every": 1, "valid_fit_pairs": 2, "valid_limit": 0}  # a Gaussian needs 2 golds
        for name, least in smallest.items():
            if getattr(self, name) < least:
                flag = "--" + name.replace("_", "-")
                raise ValueError(f"{flag} must be at least {least}, got {getattr(self, name)}")
        if self.contrastive_average not in CONTRASTIVE_AVERAGES:
            raise ValueError(
                f"contrastive_average must be one of {CONTRASTIVE_AVERAGES}, got {self.contrastive_average!r}"
            )
        NegativeMix.parse(self.negative_mix)  # a ValueError names a bad kind or weight
        unknown = [kind for kind in self.excluded_kinds if kind not in KINDS]
        if unknown:
            raise ValueError(f"contrastive_exclude: unknown kind(s) {unknown}; kinds: {', '.join(KINDS)}")
        if self.hard_negatives_after < 0:
            raise ValueError(f"hard_negatives_after must be >= 0, got {self.hard_negatives_after}")
        if self.evals_per_epoch < 1:
            raise ValueError(f"evals_per_epoch must be >= 1, got {self.evals_per_epoch}")
        if not 0 <= self.overlap_rows < self.batch_size:
            raise ValueError(f"overlap_rows must be in [0, --batch-size {self.batch_size}), got {self.overlap_rows}")
        if self.overlap_rows and not self.density_weight:
            raise ValueError("--overlap-rows chooses golds for the density term; it needs --density-weight")
        if self.length_buckets < 0:
            raise ValueError(f"length_buckets must be >= 0, got {self.length_buckets}")
        if self.attention_dropout is not None and not 0 <= self.attention_dropout < 1:
            raise ValueError(f"attention_dropout must be in [0, 1), got {self.attention_dropout}")
        if self.density_weight < 0 or self.anchor_weight < 0:
            raise ValueError(
                f"density_weight and anchor_weight must be >= 0, got {self.density_weight} and {self.anchor_weight}"
            )
        if self.margin_against not in MARGIN_AGAINST:
            raise ValueError(f"margin_against must be one of {MARGIN_AGAINST}, got {self.margin_against!r}")
        if self.density_weight:
            if self.dropout:
                raise ValueError(
                    "a density term (--density-weight) needs --no-dropout: dropout alone moves a feature by about "
                    "a gold's distance from the mean, which would swamp the margin"
                )
            if self.anchor_weight and not self.init_from:
                raise ValueError(
                    "the density term's anchor (--anchor-weight, default 1) needs --init-from, the model whose "
                    "features the golds stay near; or give --anchor-weight 0"
                )
            if self.anchor_negatives and not self.anchor_weight:
                raise ValueError("--anchor-negatives widens the anchor's drift term; it needs --anchor-weight > 0")
            if self.density_copies < 1:
                raise ValueError(f"density_copies must be >= 1 with a density term, got {self.density_copies}")
            if self.bank_size < 2 or not 0 < self.bank_shrinkage <= 1:
                raise ValueError(
                    f"bank_size must be >= 2 and bank_shrinkage in (0, 1], got {self.bank_size}, {self.bank_shrinkage}"
                )
            try:
                NegativeMix.parse(self.copy_mix)
            except ValueError as err:
                raise ValueError(f"copy_mix {self.copy_mix!r}: {err}") from None
        required_metrics(self.select_on, self.select_floor)  # a ValueError names the flag
        floor = parse_floor(self.select_floor)
        if floor and floor.from_start and not self.eval_at_start:
            raise ValueError(
                f"--select-floor {self.select_floor!r} is relative to the run's step-0 evaluation: add --eval-at-start"
            )
        if self.mixed_precision not in ("auto", "no", "bf16", "fp16"):
            raise ValueError(f"mixed_precision must be 'auto', 'no', 'bf16' or 'fp16', got {self.mixed_precision!r}")

    @property
    def excluded_kinds(self) -> frozenset[str]:
        """The kinds of ``contrastive_exclude``."""
        return frozenset(kind.strip() for kind in self.contrastive_exclude.split(",") if kind.strip())


def flag_of(name: str) -> str:
    """The ``python -m train train`` flag of a TrainConfig (or PairFormat) field."""
    return _FLAGS.get(name, "--" + name.replace("_", "-"))


def _flag_value(name: str, value) -> str:
    if name in ("feature_only_last_layer", "dropout"):  # flags that turn something off
        return "off" if value else "on"
    if isinstance(value, bool):
        return "on" if value else "off"
    return repr(value) if isinstance(value, str) else str(value)


def _flat(config: dict) -> dict:
    """A config dict (``asdict(TrainConfig)``) with the pair format's fields beside the others."""
    flat = {name: value for name, value in config.items() if name != "pair_format"}
    flat.update(config.get("pair_format") or {})
    return flat


def check_resumable(saved: dict, config: TrainConfig, where: str) -> None:
    """Refuse to resume a run started with ``saved`` (``asdict`` of its TrainConfig) with another
    recipe: a ValueError naming ``where`` (the state file) and each changed flag, its value now and
    the run's. Fields missing from ``saved`` (added since the run began) count as their defaults."""
    defaults, now = _flat(asdict(TrainConfig())), _flat(asdict(config))
    saved = {**defaults, **_flat(saved)}
    changed = [
        f"{flag_of(name)} {_flag_value(name, now[name])} (the run has {_flag_value(name, saved[name])})"
        for name in now
        if flag_of(name) not in RESUMABLE_FLAGS and now[name] != saved[name]
    ]
    if changed:
        raise ValueError(
            f"{where}: the run was started with other flags, so it cannot resume with: {', '.join(changed)}; "
            "give the run's flags again, or a new --out to start another run"
        )


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
    """The pair format of the DEnsity checkpoint ``directory`` (given as ``flag``; ``default``: the
    bundled release), which the run must keep; a ValueError names the folder or file."""
    from density_metric.checkpoint_format import CONFIG_FILE, DensityConfig
    from density_metric.errors import CheckpointError

    path = Path(directory) / CONFIG_FILE
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
    density = parser.add_argument_group(
        "fine-tuning and the density term (train/density_term.py: copies of the context must lie farther "
        "out than golds under the Gaussian of the current golds)"
    )
    density.add_argument(
        "--init-from",
        default="",
        metavar="CHECKPOINT",
        help="start from a DEnsity checkpoint folder's encoder, head and pair format (pair-format flags that "
        "contradict it are refused), e.g. density_metric/default, the bundled release",
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
