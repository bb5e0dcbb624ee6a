"""The recipe of a training run (:class:`TrainConfig`) and its checks, and what may change when a run
is resumed. Each field carries its command-line flag (:func:`option`: help, group, choices);
:mod:`density_train.config.flags` builds ``python -m train train``'s recipe flags from them.

The run folder's ``state/trainer_state.json`` keeps the config the run started with; a resumed run
must give the same recipe (:func:`check_resumable`), except for the flags of :data:`RESUMABLE_FLAGS`.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field, fields

from density_metric.encoding.pair_format import PairFormat

from ..arguments import check_at_least
from ..data.grounding import GroundingSpec
from ..evaluation.grounding_validation import USES_LINES
from ..evaluation.model_selection import parse_floor, required_metrics
from ..evaluation.validation import OVERLAP_MIN
from ..losses.density_term import (
    DEFAULT_BANK_SIZE,
    DEFAULT_COPIES,
    DEFAULT_COPY_MIX,
    DEFAULT_MARGIN,
    DEFAULT_SHRINKAGE,
    MARGIN_AGAINST,
)
from ..losses.response_selection import CONTRASTIVE_AVERAGES
from ..negatives.kinds import GOLD_KINDS
from ..negatives.mix import KINDS, NegativeMix

LR_SCALINGS = ("none", "linear", "sqrt")  # how --lr follows the contexts a step (scaled_lr)
REFERENCE_CONTEXTS = 16  # the contexts a step --lr is given for when it is scaled: the paper's batch
MAX_CONTEXTS = 256  # the most contexts a step (--batch-size x --grad-accum x processes)
OVERLAP_SOURCES = ("last-turn", "lines")  # the golds --overlap-rows draws from
GROUNDED_CORPORA = ("personachat", "topical_chat")  # the corpora of train/data/grounded_corpora.py

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
MIXED_PRECISIONS = ("auto", "no", "bf16", "fp16")
COMPILE_BACKENDS = ("", "inductor", "aot_eager", "eager")  # torch.compile backends of --compile; "": none
COMPILE_MODES = ("default", "reduce-overhead", "max-autotune-no-cudagraphs")  # inductor's modes, --compile-mode


def option(default, help: str, group: str = "recipe", **flag):
    """A recipe field and its ``python -m train train`` flag, written once: ``default``, the ``help`` of --help
    (``%(default)s`` there is the default, as argparse writes it), the ``group`` of --help it is listed in (a key
    of :data:`density_train.config.flags.GROUPS`), and what else ``add_argument`` takes (``choices``, ``metavar``, ``aliases``),
    or ``flag``: its spelling where it is not ``--`` + the name with dashes. A bool field is a switch: it turns
    the field on (default False) or, with its own ``flag``, off (default True)."""
    return field(default=default, metadata={"help": help, "group": group, **flag})


@dataclass
class TrainConfig:
    """The recipe. The defaults are the authors' DailyDialog settings: bert-base-uncased, 1 + 15
    candidates at 256 tokens, negatives sampled once with seed 42, 10 epochs of 16 contexts per
    step, AdamW at 5e-5 with 1,000 warm-up steps, and the contrastive loss at tau 0.1 and weight 1
    averaged over the gold anchors (the paper's eq. 4). Each field's help is its flag's (:func:`option`),
    which :func:`density_train.config.flags.add_recipe_arguments` builds the command line from."""

    backbone: str = option(
        "bert-base-uncased", "encoder to fine-tune: a directory, a Hub id, or 'minilm' (offline all-MiniLM-L6-v2)"
    )
    pair_format: PairFormat = field(
        default_factory=PairFormat
    )  # its flags: density_train.config.flags.PAIR_FORMAT_FLAGS
    negatives: int = option(15, "random negatives per context (default: %(default)s)")
    resample_negatives: bool = option(
        False, "draw new negatives every epoch (default: sampled once, as the authors did)"
    )
    negatives_seed: int = option(42, "seed of the negatives (default: %(default)s)")
    epochs: int = option(10, "default: %(default)s")
    batch_size: int = option(
        16, "contexts per micro-batch and process, each with 1 + negatives candidates (default: %(default)s)"
    )
    grad_accum: int = option(1, "micro-batches per optimizer step (default: %(default)s)")
    lr: float = option(5e-5, "AdamW learning rate (default: 5e-5)")
    # How the learning rate follows the contexts a step C (scaled_lr); lr is then the rate at the paper's 16.
    lr_scaling: str = option(
        "none",
        "how the learning rate follows the contexts a step C (--batch-size x --grad-accum x processes, "
        f"{REFERENCE_CONTEXTS}-{MAX_CONTEXTS}): 'linear' trains at lr x C / {REFERENCE_CONTEXTS}, 'sqrt' at "
        f"lr x sqrt(C / {REFERENCE_CONTEXTS}), --lr being the rate at {REFERENCE_CONTEXTS} contexts; "
        "'none' (default): --lr as given",
        choices=LR_SCALINGS,
    )
    weight_decay: float = option(0.0, "default: 0")
    warmup_steps: int = option(1000, "linear warm-up steps (default: %(default)s)")
    max_grad_norm: float = option(1.0, "gradient clipping (default: %(default)s)")
    tau: float = option(0.1, "temperature of the contrastive loss (default: %(default)s)")
    contrastive_weight: float = option(
        1.0, "the paper's lambda: loss = CE + weight x contrastive loss (default: %(default)s)", aliases=("--lam",)
    )
    contrastive_average: str = option(
        "gold-anchors",
        "average the contrastive loss over the gold anchors (the paper, default) or over every row (the authors' code)",
        choices=CONTRASTIVE_AVERAGES,
    )
    contrastive_exclude: str = option(
        "",
        "negative kinds kept out of the contrastive term (still in the cross-entropy), comma-separated, "
        f"e.g. {','.join(kind for kind in KINDS if kind in GOLD_KINDS)}: the near-copies of the gold "
        "(default: none, the paper)",
        metavar="KINDS",
    )
    seed: int = option(42, "seed of the data order and the head (default: %(default)s)")
    eval_batch_size: int = option(32, "validation contexts per forward pass")
    valid_limit: int = option(0, "validation pairs scored for Recall@1 at each evaluation (default 0: all)")
    mixed_precision: str = option(
        "auto", "'auto' (default): bf16 on CUDA and on CPUs with native bf16, else none", choices=MIXED_PRECISIONS
    )
    max_steps_per_epoch: int = option(0, "cut every epoch to this many optimizer steps (default 0: whole epochs)")
    save_every: int = option(
        200, "optimizer steps between saves of state/ (default: %(default)s; also after every epoch)"
    )
    # Savings that leave the loss as it is, and a change to the model (attention_dropout: None, the backbone's own).
    feature_only_last_layer: bool = option(
        True,
        "compute the last layer for every token (default: for the feature tokens only; the same loss)",
        "speed",
        flag="--full-last-layer",
    )
    length_buckets: int = option(
        0,
        "sort each window of this many batches by context length, then shuffle the batches (default 0: off)",
        "speed",
    )
    compile: str = option(
        "",
        "torch.compile the encoder with this backend, shapes dynamic: inductor (fewer, fused kernels; its gain is "
        "not measured yet; its dropout masks are drawn by its own generator, so with dropout on the numbers differ "
        "from an uncompiled run's), or aot_eager / eager (checks: the same numbers); default '': not compiled. A run "
        "resumes with the --compile it began with",
        "speed",
        choices=COMPILE_BACKENDS,
    )
    compile_mode: str = option(
        "default",
        "with --compile inductor, torch.compile's mode: reduce-overhead replays CUDA graphs (one recorded per input "
        "shape: give --pad-multiple too), max-autotune-no-cudagraphs tunes kernels; default: inductor's own. Their "
        "GPU gain is not measured yet",
        "speed",
        choices=COMPILE_MODES,
    )
    pad_multiple: int = option(
        1,
        "pad each batch's token length up to a multiple of this, so that the encoder sees few distinct shapes (for "
        "--compile-mode reduce-overhead); the padding is masked, so without dropout the numbers stay as they are "
        "(dropout draws its masks over the padded shape: others); default 1: to the longest row",
        "speed",
    )
    attention_dropout: float | None = option(
        None, "attention-probability dropout (default: the backbone's, 0.1); 0 trains faster on CPU", "speed"
    )
    # Negatives (train/negatives/mix.py): with any mix but "random:1" every negative, hard or random, is drawn afresh
    # each epoch from negatives_seed + epoch; the curriculum's random ones from the same seeds.
    negative_mix: str = option(
        "random:1",
        "weights of the negative kinds, e.g. random:8,same-dialogue:2,echo:1,speaker:1,repeat:1,drop:1,"
        "retrieved:1 (default random:1: the authors' random negatives; any other mix draws every negative "
        "afresh each epoch)",
        "negatives",
    )
    hard_negatives_after: int = option(
        0,
        "a curriculum: random negatives only for the first STEPS optimizer steps, then the mix (default 0)",
        "negatives",
        metavar="STEPS",
    )
    retrieval_index: str = option("", "index of `python -m train retrieval-index`", "negatives")
    # Validation (train/evaluation/validation.py, train/evaluation/evaluators.py) and the choice of best/ (train/evaluation/model_selection.py).
    validation_kinds: str = option(
        "all",
        "negative kinds for per-kind validation AUCs, comma-separated; all (default) or '' for none",
        "negatives",
    )
    valid_fit_pairs: int = option(4000, "training pairs the evaluation Gaussian is fitted on", "negatives")
    evals_per_epoch: int = option(1, "validation runs per epoch (default %(default)s)", "negatives")
    select_on: str = option(
        "recall_at_1",
        "validation metric (higher is better) that picks best/, e.g. recall_at_1, zhao_dev_spearman, "
        "auc_density/echo, or several joined by + for their mean (default %(default)s)",
        "negatives",
    )
    select_floor: str = option(
        "",
        "METRIC=VALUE: evaluations whose METRIC is below VALUE are never kept in best/, "
        "e.g. zhao_dev_spearman=52.36; or METRIC=start-OFFSET, relative to the run's step-0 evaluation "
        "(with --eval-at-start), e.g. zhao_dev_spearman=start-1",
        "negatives",
    )
    valid_negatives: int = option(
        0, "random candidates beside each validation gold for Recall@1 (default 0: --negatives)", "negatives"
    )
    eval_at_start: bool = option(False, "evaluate the starting model too, logged as step 0", "negatives")
    # Fine-tuning and the density term (train/losses/density_term.py; weight 0: off). Each context also gets
    # density_copies negatives of copy_mix's kinds, for this term and the contrastive term, never the cross-entropy.
    init_from: str = option(
        "",
        "start from a DEnsity checkpoint's encoder, head and pair format (pair-format flags that "
        "contradict it are refused): 'default' (the bundled release), a folder or a Hub repo id",
        "density",
        metavar="CHECKPOINT",
    )
    dropout: bool = option(True, "turn every dropout off (default: the backbone's)", "density", flag="--no-dropout")
    density_weight: float = option(0.0, "weight of the density term's margin (default 0: off)", "density")
    density_margin: float = option(
        DEFAULT_MARGIN, f"how much farther out a copy must lie (default {DEFAULT_MARGIN:g})", "density"
    )
    margin_against: str = option(
        "gold",
        "gold: each copy must lie --density-margin beyond its own gold (default); bank: beyond every gold "
        "of the bank, averaged (a hinge form of 1 - AUC)",
        "density",
        choices=MARGIN_AGAINST,
    )
    density_copies: int = option(DEFAULT_COPIES, "copies per context (default %(default)s)", "density")
    copy_mix: str = option(
        DEFAULT_COPY_MIX,
        "kinds of the copies, weighted as --negative-mix (default %(default)s); a kind that "
        "cannot make a copy falls back to a random utterance, which the margin leaves out",
        "density",
    )
    bank_size: int = option(
        DEFAULT_BANK_SIZE, "recent gold features whose Gaussian the term uses (default %(default)s)", "density"
    )
    bank_shrinkage: float = option(
        DEFAULT_SHRINKAGE, f"shrinkage of the bank's covariance (default {DEFAULT_SHRINKAGE:g})", "density"
    )
    anchor_weight: float = option(
        1.0, "weight of the golds' Mahalanobis drift from the --init-from model (default 1; 0: none)", "density"
    )
    # Contexts per micro-batch drawn from the golds of overlap_source (which people do not punish; 0: none):
    # "last-turn", those sharing >= OVERLAP_MIN of their words with the last context turn, or "lines", those
    # whose content words overlap their context's grounding lines by >= USES_LINES (persona or knowledge).
    overlap_rows: int = option(
        0,
        f"contexts of each micro-batch drawn from pairs whose gold shares at least {OVERLAP_MIN:.0%}% of its words "
        "with the last context turn (default 0: the plain shuffle)",
        "density",
    )
    overlap_source: str = option(
        "last-turn",
        "the golds --overlap-rows draws from: those reusing the last turn's words (default), or 'lines': those "
        f"using their grounding lines (content-word overlap >= {USES_LINES:g} with them; persona or knowledge chats)",
        "density",
        choices=OVERLAP_SOURCES,
    )
    anchor_negatives: bool = option(
        False,
        "hold the cross-entropy's negatives near the --init-from model's features too, not only the golds",
        "density",
    )
    # Grounding (issue 50): grounded training contexts (train/data/grounding.py), the shared data folder whose benchmark
    # sentences they never use, and the ConvAI2 file whose seeded golds every evaluation scores for the grounding
    # signals (train/evaluation/grounding_validation.py). Grounded corpora (issue 55): their held-out splits too, and a second
    # evaluation Gaussian of one corpus's golds (plain/...), which tells a gain of the encoder from one of the
    # Gaussian. keep_lines: the oldest dialogue turns go before the grounding lines do (PairFormat.keep_lines).
    grounding: str = option(
        "",
        "grounded training contexts: 'your persona:' lines the gold uses (sentences of its corpus sharing "
        "its rare content words) and distractors, before a share of the contexts, e.g. "
        "rate=0.5,used=2,distractors=2 (default '': off); needs --grounding-exclude",
        "grounding",
        metavar="SPEC",
    )
    grounding_exclude: str = option(
        "",
        "shared data folder: grounding lines never use a sentence of its human-judgment sets or of "
        "DailyDialog's validation and test dialogues",
        "grounding",
        metavar="DIR",
    )
    grounding_valid: str = option(
        "",
        "ConvAI2 file (e.g. ../shared/data/convai2/valid_unused_by_benchmarks.txt): every evaluation logs "
        "grounding/* (persona and last-turn overlap Spearman, Recall@1, gold beats echo) on its seeded golds",
        "grounding",
        metavar="FILE",
    )
    grounding_valid_pairs: int = option(
        1200,
        "seeded golds of --grounding-valid, each scored with its echo and 4 distractors (default %(default)s)",
        "grounding",
    )
    grounded_valid: str = option(
        "",
        "grounded corpora (personachat, topical_chat; comma-separated) whose held-out split every evaluation "
        "scores like --grounding-valid, logged as grounding_<corpus>/*, up to --grounding-valid-pairs golds each; "
        "needs each corpus's folder flag (--personachat, --topical-chat)",
        "grounding",
        metavar="CORPORA",
    )
    keep_lines: bool = option(
        False,
        "read grounding lines (persona or knowledge lines, first in a context) whole where they fit: drop the "
        "oldest dialogue turns of a long context instead, never the last (training, validation and grounding "
        "contexts; the checkpoint's scorer does not know it yet)",
        "grounding",
    )
    plain_fit_corpus: str = option(
        "",
        "also log every density metric under a Gaussian of this corpus's training golds only, as plain/* "
        "(e.g. dailydialog in a mixed run: is a gain the encoder's or the Gaussian's?)",
        "grounding",
        metavar="CORPUS",
    )

    def __post_init__(self):
        if isinstance(self.pair_format, dict):  # as read back from trainer_state.json
            self.pair_format = PairFormat.from_dict(self.pair_format)
        self._check_counts()
        self._check_negatives()
        self._check_density_term()
        self._check_selection_and_grounding()
        self._check_speed()

    def _check_counts(self):
        """The counts' floors, and the contexts a step."""
        smallest = {"negatives": 1, "epochs": 1, "batch_size": 1, "grad_accum": 1, "eval_batch_size": 1}
        smallest |= {"save_every": 1, "valid_fit_pairs": 2, "valid_limit": 0, "pad_multiple": 1}  # a Gaussian: 2 golds
        for name, least in smallest.items():
            check_at_least(flag_of(name), getattr(self, name), least)
        check_contexts_per_step(self.batch_size * self.grad_accum, self.lr_scaling)

    def _check_negatives(self):
        """The contrastive term, the negatives' kinds and mix, the overlap rows, batching and dropout."""
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

    def _check_density_term(self):
        """The density term's weights and, where it is on, what it needs."""
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

    def _check_selection_and_grounding(self):
        """The model selection rule and the grounding flags."""
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

    def _check_speed(self):
        """The compiling, the padding and the precision."""
        if self.compile not in COMPILE_BACKENDS:
            raise ValueError(f"compile must be one of {COMPILE_BACKENDS}, got {self.compile!r}")
        if self.compile_mode not in COMPILE_MODES:
            raise ValueError(f"compile_mode must be one of {COMPILE_MODES}, got {self.compile_mode!r}")
        if self.compile_mode != "default" and self.compile != "inductor":
            raise ValueError(f"--compile-mode {self.compile_mode} is inductor's: it needs --compile inductor")
        max_length = self.pair_format.max_length
        if self.pair_format.layout == "paper" and max_length % self.pad_multiple:
            # A pair's row is at most --max-length long and its positions run along the padded row.
            raise ValueError(
                f"--pad-multiple {self.pad_multiple} must divide --max-length {max_length} in the paper layout: "
                "a padded row would be longer than --max-length"
            )
        if self.mixed_precision not in MIXED_PRECISIONS:
            raise ValueError(f"mixed_precision must be 'auto', 'no', 'bf16' or 'fp16', got {self.mixed_precision!r}")

    @property
    def cuda_graphs(self) -> bool:
        """Whether the compiled encoder replays CUDA graphs (``--compile-mode reduce-overhead``): each step, and each
        evaluation batch, then marks a new graph iteration."""
        return self.compile_mode == "reduce-overhead"

    @property
    def start_flag(self) -> str:
        """The flag that names the run's start: ``--init-from`` where it is set, else ``--backbone``."""
        return "--init-from" if self.init_from else "--backbone"

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


# The fields whose flag is not "--" + the name with dashes, and of those the switches that turn a field off.
_FLAGS = {f.name: f.metadata["flag"] for f in fields(TrainConfig) if "flag" in f.metadata}
_OFF_SWITCHES = {f.name for f in fields(TrainConfig) if f.default is True}


def flag_of(name: str) -> str:
    """The ``python -m train train`` flag of a TrainConfig (or PairFormat) field."""
    return _FLAGS.get(name, "--" + name.replace("_", "-"))


def _flag_value(name: str, value) -> str:
    if name in _OFF_SWITCHES:  # switches say when they are on: --full-last-layer on is feature_only_last_layer off
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
