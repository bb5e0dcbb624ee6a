"""The model card, rendered from ``hub_card/model_card.md`` with the run's recipe and results."""

from __future__ import annotations

import re
from pathlib import Path
from string import Template

from density_metric.checkpoint.format import CheckpointError, load_checkpoint
from density_metric.errors import fail

from ..arguments import checkpoint_folder
from ..evaluation.grounding_validation import USES_LINES
from ..evaluation.model_selection import describe as describe_selection
from ..evaluation.validation import OVERLAP_MIN
from ..model import BACKBONE_HUB_IDS


def _card_folder() -> Path:
    """``hub_card/``: inside the installed package (the wheel ships it as ``density_train/hub_card``),
    else the checkout's top-level folder (``python -m train`` from a checkout, or an editable install)."""
    package = Path(__file__).resolve().parent.parent
    for folder in (package / "hub_card", package.parent / "hub_card"):
        if folder.is_dir():
            return folder
    return package.parent / "hub_card"


TEMPLATE = _card_folder() / "model_card.md"
DATASETS = {
    "dailydialog": (
        "li2017dailydialog/daily_dialog",
        "DailyDialog",
        "cc-by-nc-sa-4.0",
        "DailyDialog is licensed CC BY-NC-SA 4.0: non-commercial use only.",
    ),
    "self_dialogue": (
        "self_dialogue",
        "the Self-dialogue corpus",
        "bsd-3-clause",
        "The Self-dialogue corpus is licensed BSD-3-Clause.",
    ),
    "chitchat": (
        "chitchat-dataset",
        "the BYU Chit-Chat Challenge",
        "mit",
        "The BYU Chit-Chat Challenge data (chitchat-dataset 0.9.0) is licensed MIT.",
    ),
    "personachat": (
        "personachat",
        "a PersonaChat training subset (1,072 dialogues)",
        "other",
        "The PersonaChat subset's redistributor states no licence; upstream is ParlAI's PersonaChat / ConvAI2.",
    ),
    "topical_chat": (
        "topical_chat",
        "Topical-Chat (validation conversations)",
        "cdla-sharing-1.0",
        "Topical-Chat is licensed CDLA-Sharing-1.0; its Wikipedia text CC BY-SA 3.0.",
    ),
}
UNKNOWN_LICENCE = "Check the training corpus's licence before use."


def corpus_fields(corpus: str) -> tuple[str, str, str, str]:
    """The card's dataset id, name, licence and licence note for ``--corpus`` (one corpus or a weighted mix).

    A mix names every corpus with its weight; its licence is DailyDialog's non-commercial one when it holds
    DailyDialog (that binds the whole mix), ``other`` when a corpus's licence is unknown or two permissive ones
    differ, and its note joins its corpora's notes.
    """
    mix = _corpus_mix(corpus)
    entries = [DATASETS.get(name, (name, name, "other", UNKNOWN_LICENCE)) for name, _ in mix]
    if len(entries) == 1:
        return entries[0]
    licences = {licence for _, _, licence, _ in entries}
    if "other" in licences or len(licences) > 1 and "cc-by-nc-sa-4.0" not in licences:
        licence = "other"  # a corpus of unknown licence, or permissive ones that differ: say so in the note
    else:
        licence = "cc-by-nc-sa-4.0" if "cc-by-nc-sa-4.0" in licences else licences.pop()
    name = " + ".join(f"{entry[1]} (weight {weight:g})" for entry, (_, weight) in zip(entries, mix))
    notes = " ".join(dict.fromkeys(entry[3] for entry in entries))
    return entries[0][0], name, licence, notes


def corpus_ids(corpus: str) -> list[str]:
    """The dataset ids of every corpus of ``--corpus`` (one corpus or a weighted mix), for the card's ``datasets:``."""
    return list(dict.fromkeys(DATASETS.get(name, (name,))[0] for name, _ in _corpus_mix(corpus)))


def _corpus_mix(corpus: str) -> tuple[tuple[str, float], ...]:
    """``--corpus`` as (name, weight) pairs: a mix's, or the one corpus at weight 1."""
    from ..data.corpora import parse_corpus_mix

    try:
        return tuple(parse_corpus_mix(corpus))
    except ValueError:
        return ((corpus, 1.0),)


SELECTION_NAMES = {
    "recall_at_1": "Recall@1",
    "mrr": "MRR",
    "zhao_dev_spearman": "Spearman correlation with the human ratings of DailyDialog-Zhao's first 20 % (`dev`)",
    "zhao_dev_pearson": "Pearson correlation with the human ratings of DailyDialog-Zhao's first 20 % (`dev`)",
}


def _negatives_description(config) -> str:
    """The card's words for the run's negatives."""
    from ..negatives.mix import NegativeMix

    mix = NegativeMix.parse(config.negative_mix)
    if mix.random_only:
        mode = "resampled each epoch" if config.resample_negatives else f"sampled once, seed {config.negatives_seed}"
        return f"random negatives (utterances of the same split, never the gold nor a context turn; {mode})"
    curriculum = (
        f"; random negatives only for the first {config.hard_negatives_after:,} steps"
        if config.hard_negatives_after
        else ""
    )
    return (
        f"negatives drawn from the mix `{mix}` (kinds of `train/negatives/mix.py`; drawn afresh each epoch "
        f"from seed {config.negatives_seed} + epoch{curriculum})"
    )


FEATURES = {
    ("paper", "feature-token"): "this model's final-layer `[CLS]` feature of `[CLS] context [SEP] response [SEP]`",
    ("shared-context", "feature-token"): (
        "this model's final-layer state of the `[CLS]` that opens the response's block in "
        "`[CLS] context [SEP] [CLS] response [SEP]` (the block attends to the context and to itself)"
    ),
    ("shared-context", "mean"): (
        "the mean of this model's final-layer states over the response's block in "
        "`[CLS] context [SEP] [CLS] response [SEP]` (the block attends to the context and to itself)"
    ),
}
PRECISIONS = {"bf16": "bf16 autocast", "fp16": "fp16 autocast", "no": "float32"}


def compute_description(
    cost: dict, *, contexts_per_step: int, train_contexts: int, hardware: str, precision: str
) -> str:
    """The card's words for what the run cost: ``cost`` is :func:`density_train.loop.run_log.compute_summary`'s."""
    contexts = cost["steps"] * contexts_per_step
    chunks = cost["chunks"]
    where = (
        f"on {hardware}"
        if chunks == 1
        else f"in {chunks} chunks, each resumed from the last one's saved state; the last ran on {hardware}"
    )
    return (
        f"{cost['steps']:,} optimizer steps of {contexts_per_step} contexts ({contexts:,} contexts, "
        f"{contexts / train_contexts:.2f} passes over the {train_contexts:,} training contexts), "
        f"{cost['wall_seconds'] / 3600:.1f} hours of wall time {where}, in {PRECISIONS[precision]}; "
        f"{cost['evaluations']} validation runs took {cost['eval_seconds'] / 3600:.1f} hours of it"
    )


def local_start(init_from: str) -> Path:
    """The folder of the run's start, resolved as at the start of the run (``default``, a folder or a
    Hub repo id, from the Hub cache); ``init_from`` as a path where it no longer resolves."""
    try:
        return checkpoint_folder(init_from, "--init-from")
    except ValueError:
        return Path(init_from)


def _base_model(config) -> str:
    """The pretrained encoder under the model. A fine-tune loads its start, not ``--backbone``, so its
    base model is the start's own (the ``base_model`` of the start's card), else the start's path."""
    if not config.init_from:
        return BACKBONE_HUB_IDS.get(config.backbone, config.backbone)
    card = local_start(config.init_from) / "README.md"
    found = re.search(r"^base_model: *(\S+) *$", card.read_text(encoding="utf-8"), re.M) if card.is_file() else None
    return found.group(1) if found else config.init_from


def _init_description(config) -> str:
    """The card's words for a fine-tune's start (empty for a run from the backbone), with the start's
    revision (the sha256 of the files that decide its scores) read when the card is written: the end of
    the run, while ``init_from`` still holds what the run started from. A path such as
    ``density_metric/default`` alone would name the model that replaces it once it is bundled."""
    if not config.init_from:
        return ""
    try:
        revision = f" at revision `{load_checkpoint(local_start(config.init_from)).revision}`"
    except CheckpointError:  # moved or deleted since the run started: say only where it was
        revision = ""
    return (
        f", fine-tuned from the DEnsity checkpoint `{config.init_from}`{revision} (its encoder, head and pair format)"
    )


def _density_term_description(config) -> str:
    """The card's words for the density term of ``train/losses/density_term.py`` (empty when it is off)."""
    if not config.density_weight:
        return ""
    a = config.bank_shrinkage
    anchor = (
        f", plus {config.anchor_weight:g} x the Mahalanobis drift of the golds"
        f"{' and of the cross-entropy negatives' if config.anchor_negatives else ''} from the starting model's features"
        if config.anchor_weight
        else ""
    )
    return (
        f" Plus {config.density_weight:g} x the density term relu({config.density_margin:g} + d(gold) - d(copy)) "
        + ("with each copy against every gold of the bank (averaged) " if config.margin_against == "bank" else "")
        + f"over {config.density_copies} copies of the context per gold, drawn from the mix `{config.copy_mix}` "
        "(copies enter this term and the contrastive one, never the softmax), where d is the Mahalanobis "
        f"distance to the mean and the shrunk covariance {1 - a:g} S + {a:g} tr(S)/d I of the last "
        f"{config.bank_size:,} gold features (a bank renewed every step): copies of the context must lie "
        f"farther from the human Gaussian than golds{anchor}; every dropout off."
        + (
            f" {config.overlap_rows} of each batch's {config.batch_size} contexts were drawn from the pairs whose "
            + (
                f"gold uses its grounding lines (content-word overlap at least {USES_LINES:g} with them)."
                if config.overlap_source == "lines"
                else f"gold shares at least {OVERLAP_MIN:.0%} of its words with the last context turn."
            )
            if config.overlap_rows
            else ""
        )
    )


def kept_description(metrics: dict) -> str:
    """Which evaluation the kept checkpoint comes from, and its DailyDialog-Zhao ``dev`` numbers and
    density AUCs (gold against each validation kind) if logged."""
    if "step" not in metrics:
        return ""
    text = f"The kept checkpoint is the one evaluated after step {metrics['step']:,}"
    if "zhao_dev_spearman" in metrics:
        text += (
            f"; there, DailyDialog-Zhao `dev` (its first 20 %, with the in-run Gaussian) gave Pearson / "
            f"Spearman x100 {metrics['zhao_dev_pearson']:.2f} / {metrics['zhao_dev_spearman']:.2f}"
        )
    aucs = {key.split("/", 1)[1]: value for key, value in metrics.items() if key.startswith("auc_density/")}
    if aucs:
        text += "; the density's AUC of the gold against one negative of each kind per validation pair: " + ", ".join(
            f"{kind} {value:.3f}" for kind, value in aucs.items()
        )
    return text + "."


def check_template() -> None:
    """Fail before training, not after it, where the card's template cannot be read."""
    if not TEMPLATE.is_file():
        fail(
            f"{TEMPLATE}: the model card template is missing. `python -m train train` renders the "
            "card from hub_card/model_card.md, which the density-metric package ships: reinstall it"
        )


def render_card(fields: dict, template: Path = TEMPLATE) -> str:
    """Fill the template; every ``$name`` in it must be given (a missing field raises KeyError)."""
    return Template(template.read_text(encoding="utf-8")).substitute(fields)


def card_fields(
    *,
    config,
    corpus: str,
    name: str,
    repo_id: str,
    metrics: dict,
    train_pairs: int,
    valid_pairs: int,
    command: str,
    estimator: str = "pinv",
    compute: str = "not recorded",
) -> dict:
    dataset, dataset_name, license_, note = corpus_fields(corpus)
    period = "round" if config.max_steps_per_epoch else "epoch"
    return {
        "license": license_,
        "license_note": note,
        "base_model": _base_model(config),
        "dataset": dataset,
        "datasets": "\n".join(f"- {dataset_id}" for dataset_id in corpus_ids(corpus)),  # the YAML list's lines
        "dataset_name": dataset_name,
        "name": name,
        "repo_id": repo_id,
        "negatives": config.negatives,
        "valid_negatives": config.valid_negatives or config.negatives,
        "negatives_description": _negatives_description(config),
        "init_from": _init_description(config),
        "density_term": _density_term_description(config),
        "recall_at_1": f"{metrics['recall_at_1']:.4f}",
        "mrr": f"{metrics['mrr']:.4f}",
        "train_pairs": f"{train_pairs:,}",
        "valid_pairs": f"{valid_pairs:,}",
        "feature": FEATURES[(config.pair_format.layout, config.pair_format.pooling)],
        "compute": compute,
        "kept": kept_description(metrics),
        "turn_separator": config.pair_format.turn_separator,
        "max_length": config.pair_format.max_length,
        "contrastive_weight": config.contrastive_weight,
        "contrastive_average": {
            "gold-anchors": "averaged over the gold anchors as in the paper",
            "all-rows": "averaged over every row as in the authors' code",
        }[config.contrastive_average],
        "tau": config.tau,
        "contrastive_exclude": (
            f"; negatives of the kinds {config.contrastive_exclude} stay out of it" if config.excluded_kinds else ""
        ),
        "layout": {
            "paper": "the paper's layout (one row per context-response pair)",
            "shared-context": "the shared-context layout (one row per context, its candidates in blocks after it)",
        }[config.pair_format.layout]
        + (
            ""
            if config.pair_format.pooling == "feature-token"
            else ", features mean-pooled over each candidate's block"
        ),
        "selection": describe_selection(config.select_on, config.select_floor, SELECTION_NAMES),
        "lr": config.lr
        if config.lr_scaling == "none"
        else f"{config.lr:g} at 16 contexts a step, scaled {config.lr_scaling} with the contexts a step (--lr-scaling)",
        "schedule": (
            f"{config.epochs} epoch{'s' * (config.epochs != 1)}"
            if not config.max_steps_per_epoch
            else f"{config.epochs} round{'s' * (config.epochs != 1)} of at most {config.max_steps_per_epoch:,} steps (each round a fresh "
            "shuffle of the training pairs, not a full pass)"
        ),
        "eval_schedule": f"after each {period}"
        if config.evals_per_epoch == 1
        else f"{config.evals_per_epoch} times per {period}",
        "valid_scope": f"the first {config.valid_limit:,}" if config.valid_limit else "all",
        "batch_size": config.batch_size * config.grad_accum,
        "warmup_steps": config.warmup_steps,
        "command": command,
        "estimator": {
            "pinv": "maximum-likelihood covariance in float64, symmetric pseudo-inverse",
            "ledoit-wolf": "Ledoit-Wolf shrunk covariance in float64, symmetric pseudo-inverse",
            "oas": "OAS shrunk covariance in float64, symmetric pseudo-inverse",
        }[estimator],
    }
