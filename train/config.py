"""The recipe of a training run (:class:`TrainConfig`) and its checks, and what may change when a run
is resumed. The command-line flags that set it are in :mod:`train.flags`.

The run folder's ``state/trainer_state.json`` keeps the config the run started with; a resumed run
must give the same recipe (:func:`check_resumable`), except for the flags of :data:`RESUMABLE_FLAGS`.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field

from density_metric.pair_format import PairFormat

from .arguments import check_at_least
from .density_term import (
    DEFAULT_BANK_SIZE,
    DEFAULT_COPIES,
    DEFAULT_COPY_MIX,
    DEFAULT_MARGIN,
    DEFAULT_SHRINKAGE,
    MARGIN_AGAINST,
)
from .grounding import GroundingSpec
from .losses import CONTRASTIVE_AVERAGES
from .negatives import KINDS, NegativeMix
from .selection import parse_floor, required_metrics

LR_SCALINGS = ("none", "linear", "sqrt")  # how --lr follows the contexts a step (scaled_lr)
REFERENCE_CONTEXTS = 16  # the contexts a step --lr is given for when it is scaled: the paper's batch
MAX_CONTEXTS = 256  # the most contexts a step (--batch-size x --grad-accum x processes)
OVERLAP_SOURCES = ("last-turn", "lines")  # the golds --overlap-rows draws from
GROUNDED_CORPORA = ("personachat", "topical_chat")  # the corpora of train/grounded_corpora.py

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
    # How the learning rate follows the contexts a step C (scaled_lr): "none" (lr as given), "linear" (lr * C / 16)
    # or "sqrt" (lr * sqrt(C / 16)); lr is then the rate at the paper's 16 contexts a step.
    lr_scaling: str = "none"
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
    # Which golds those are: "last-turn" (as above) or "lines": golds whose content words overlap their context's
    # grounding lines by >= USES_LINES (train/grounding_validation.py), replies that use their persona or knowledge.
    overlap_source: str = "last-turn"
    # Grounding (issue 50): grounded training contexts (train/grounding.py, e.g. "rate=0.5,used=2,distractors=2";
    # "": off), the shared data folder whose benchmark sentences they never use, and the ConvAI2 file whose
    # seeded golds every evaluation scores for the grounding signals (train/grounding_validation.py; "": none).
    grounding: str = ""
    grounding_exclude: str = ""
    grounding_valid: str = ""
    grounding_valid_pairs: int = 1200
    # Grounded corpora (issue 55) whose held-out split every evaluation also scores as a grounding signal
    # (grounding_<corpus>/..., e.g. "personachat,topical_chat"; "": none), and the corpus whose training golds
    # fit a second evaluation Gaussian: every density metric is then also logged under it as plain/... ("": none),
    # so that a gain of the encoder is told apart from a gain of the Gaussian.
    grounded_valid: str = ""
    plain_fit_corpus: str = ""
    # Grounding lines read whole (PairFormat.keep_lines): in every training, validation and grounding context
    # whose first turns are grounding lines, the oldest dialogue turns go before the lines do.
    keep_lines: bool = False

    def __post_init__(self):
        if isinstance(self.pair_format, dict):  # as read back from trainer_state.json
            self.pair_format = PairFormat.from_dict(self.pair_format)
        smallest = {"negatives": 1, "epochs": 1, "batch_size": 1, "grad_accum": 1, "eval_batch_size": 1}
        smallest |= {"save_every": 1, "valid_fit_pairs": 2, "valid_limit": 0}  # a Gaussian needs 2 golds
        for name, least in smallest.items():
            check_at_least(flag_of(name), getattr(self, name), least)
        check_contexts_per_step(self.batch_size * self.grad_accum, self.lr_scaling)
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
        if self.overlap_source not in OVERLAP_SOURCES:
            raise ValueError(f"overlap_source must be one of {OVERLAP_SOURCES}, got {self.overlap_source!r}")
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
        if GroundingSpec.parse(self.grounding) is not None and not self.grounding_exclude:
            raise ValueError(
                "--grounding needs --grounding-exclude DIR: the shared data folder, whose benchmark sentences "
                "grounding lines never use"
            )
        check_at_least("--grounding-valid-pairs", self.grounding_valid_pairs, 1)
        unknown = [name for name in self.grounded_corpora if name not in GROUNDED_CORPORA]
        if unknown:
            raise ValueError(f"--grounded-valid: {unknown} are not grounded corpora; choose from {GROUNDED_CORPORA}")
        if self.mixed_precision not in ("auto", "no", "bf16", "fp16"):
            raise ValueError(f"mixed_precision must be 'auto', 'no', 'bf16' or 'fp16', got {self.mixed_precision!r}")

    @property
    def grounded_corpora(self) -> list[str]:
        """The corpora of ``grounded_valid``, in order."""
        return [name.strip() for name in self.grounded_valid.split(",") if name.strip()]

    @property
    def excluded_kinds(self) -> frozenset[str]:
        """The kinds of ``contrastive_exclude``."""
        return frozenset(kind.strip() for kind in self.contrastive_exclude.split(",") if kind.strip())


def check_contexts_per_step(contexts: int, lr_scaling: str, processes: int = 1) -> None:
    """A ValueError unless ``contexts`` a process (``--batch-size x --grad-accum``) times ``processes`` is at
    most :data:`MAX_CONTEXTS`, and, where the learning rate is scaled, at least :data:`REFERENCE_CONTEXTS`."""
    if lr_scaling not in LR_SCALINGS:
        raise ValueError(f"--lr-scaling must be one of {LR_SCALINGS}, got {lr_scaling!r}")
    total, where = contexts * processes, f" x {processes} processes" if processes > 1 else ""
    smallest = REFERENCE_CONTEXTS if lr_scaling != "none" else 1
    if not smallest <= total <= MAX_CONTEXTS:
        raise ValueError(
            f"--batch-size x --grad-accum{where} is {total} contexts a step; it must be in [{smallest}, {MAX_CONTEXTS}]"
            + (f" with --lr-scaling {lr_scaling}" if lr_scaling != "none" else "")
        )


def scaled_lr(lr: float, contexts: int, lr_scaling: str) -> float:
    """The learning rate of a step of ``contexts`` contexts: ``lr`` itself (``none``), or ``lr`` given for
    :data:`REFERENCE_CONTEXTS` contexts scaled linearly (``linear``: lr * C / 16) or by the square root
    (``sqrt``: lr * sqrt(C / 16))."""
    if lr_scaling == "linear":
        return lr * contexts / REFERENCE_CONTEXTS
    if lr_scaling == "sqrt":
        return lr * (contexts / REFERENCE_CONTEXTS) ** 0.5
    return lr


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
