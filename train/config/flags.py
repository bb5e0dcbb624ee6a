"""The command-line flags of a training recipe, built from :class:`~density_train.config.recipe.TrainConfig`'s fields, which
carry each flag's default, help and group (:func:`add_recipe_arguments`, with the pair-format flags that ``fit``
shares), and the TrainConfig they give (:func:`config_from_args`), keeping the pair format of an
``--init-from`` checkpoint.

One builder over ``dataclasses.fields`` rather than transformers' ``HfArgumentParser``: that parser would add
``--field_name`` spellings beside each flag, turn a switch into ``--flag [BOOL]`` with a ``--no_flag`` twin, list
every field in one group, and has no switch that turns a field off (``--full-last-layer``) nor a nested
dataclass (the pair format).
"""

from __future__ import annotations

import argparse
import typing
from dataclasses import fields

from density_metric.encoding.pair_format import LAYOUTS, POOLINGS, PairFormat

from ..arguments import checkpoint_folder
from ..negatives.mix import NegativeMix
from .recipe import TrainConfig, flag_of


def config_from_args(args: argparse.Namespace) -> TrainConfig:
    """The TrainConfig of ``python -m train train``'s flags; a ValueError names the flag."""
    try:
        NegativeMix.parse(args.negative_mix)
    except ValueError as err:
        raise ValueError(f"--negative-mix {args.negative_mix!r}: {err}") from None
    return TrainConfig(
        pair_format=pair_format_from(args, init_from_pair_format(args.init_from) if args.init_from else None),
        **{f.name: getattr(args, f.name) for f in fields(TrainConfig) if f.name != "pair_format"},
    )


def init_from_pair_format(directory: str, flag: str = "--init-from") -> PairFormat:
    """The pair format of the DEnsity checkpoint ``directory`` (given as ``flag``; ``default``, a folder
    or a Hub repo id, as :func:`density_train.arguments.checkpoint_folder` resolves it), which the run must keep; a
    ValueError names the folder or file."""
    from density_metric.checkpoint.format import CONFIG_FILE, DensityConfig
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


# The groups of --help the recipe's flags are listed in, in order (a field's group: density_train.config.recipe.option).
GROUPS = {
    "recipe": "recipe (defaults: the authors' DailyDialog settings)",
    "negatives": "negatives and validation (train/negatives/mix.py, train/evaluation/validation.py)",
    "grounding": "grounding (train/data/grounding.py, train/evaluation/grounding_validation.py)",
    "density": "fine-tuning and the density term (train/losses/density_term.py: copies of the context must lie farther "
    "out than golds under the Gaussian of the current golds)",
    "speed": "speed",
}
_PAIR_FORMAT_DEFAULTS = PairFormat()
# The pair format's flags (PairFormat's fields; shared with ``fit``): a flag not given is None, so that an
# --init-from checkpoint's value can stand in for the default (pair_format_from).
PAIR_FORMAT_FLAGS = {
    "turn_separator": {
        "help": "token between context turns; a new one is added to the vocabulary "
        f"(default: {_PAIR_FORMAT_DEFAULTS.turn_separator})"
    },
    "max_length": {
        "help": f"most tokens per pair; the oldest context tokens go first (default: {_PAIR_FORMAT_DEFAULTS.max_length})"
    },
    "layout": {
        "choices": LAYOUTS,
        "help": "paper (default, the published method: one row per pair) or shared-context (one row per "
        "context, a block per candidate; see density_metric/encoding/pair_format.py)",
    },
    "pooling": {
        "choices": POOLINGS,
        "help": "feature-token (default: the final-layer state of [CLS], or of each block's first token) or mean "
        "(the mean over each candidate's block; shared-context only, computes the whole last layer)",
    },
    "max_response_length": {"help": f"most response tokens (default: {_PAIR_FORMAT_DEFAULTS.max_response_length})"},
}
_PAIR_FORMAT_FIELDS = tuple(PAIR_FORMAT_FLAGS)


def add_field_argument(group, name: str, kind: type, default, metadata: dict) -> None:
    """The flag of the dataclass field ``name`` (of type ``kind``, with ``metadata`` as
    :func:`density_train.config.recipe.option` writes it): ``--name-with-dashes`` (or ``metadata["flag"]``) and its
    ``aliases``, storing the field's value under ``name``; a bool is a switch that turns it on (``default``
    False) or off (True)."""
    names = (flag_of(name), *metadata.get("aliases", ()))
    metadata = {key: value for key, value in metadata.items() if key not in ("group", "flag", "aliases")}
    if kind is bool:
        group.add_argument(*names, dest=name, action="store_false" if default else "store_true", **metadata)
    else:
        group.add_argument(*names, dest=name, type=None if kind is str else kind, default=default, **metadata)


def _flag_type(hint) -> type:
    """The type a flag converts its value to: ``float`` for ``float | None``."""
    kinds = [kind for kind in typing.get_args(hint) if kind is not type(None)] or [hint]
    return kinds[0]


def add_pair_format_arguments(parser) -> None:
    """The pair format's flags (:data:`PAIR_FORMAT_FLAGS`), for ``train`` and ``fit``."""
    group = parser.add_argument_group("pair format (how a pair becomes token ids; stored in the checkpoint)")
    hints = typing.get_type_hints(PairFormat)
    for name, metadata in PAIR_FORMAT_FLAGS.items():
        add_field_argument(group, name, hints[name], None, metadata)


def add_recipe_arguments(parser: argparse.ArgumentParser) -> None:
    """The flags of :class:`TrainConfig`, built from its fields (each carries its help, group and flag:
    :func:`density_train.config.recipe.option`): pair format, recipe, negatives and validation, grounding, fine-tuning and
    the density term, speed; and ``--dev-judgments``, which is the run's, not the recipe's."""
    add_pair_format_arguments(parser)
    hints = typing.get_type_hints(TrainConfig)
    for key, title in GROUPS.items():  # group by group, so that the usage line lists them in that order too
        group = parser.add_argument_group(title)
        for f in fields(TrainConfig):
            if f.metadata.get("group") == key:
                add_field_argument(group, f.name, _flag_type(hints[f.name]), f.default, f.metadata)
        if key == "negatives":  # the run's, not the recipe's
            group.add_argument(
                "--dev-judgments",
                default=None,
                help="shared data folder with zhao2020/: validate on DailyDialog-Zhao's first 20 %%",
            )
