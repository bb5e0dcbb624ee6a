"""The training package's command line (``python -m train`` from a checkout, ``python -m density_train``
anywhere): one line per command, each command's code in a module of this folder.

python -m train train --corpus dailydialog --data-dir ../shared/data/dailydialog --backbone minilm --out runs/dd
python -m train fit --data-dir ../shared/data/dailydialog --encoder minilm --reference-package --out DIR
python -m train repetition-term default --data-dir ../shared/data/dailydialog --weight 6 --out runs/rep
python -m train interpolate density_metric/default runs/dd/checkpoint --weight 0.5 --out runs/mid
python -m train push runs/dd/checkpoint org/density-dailydialog
python -m train calibrate default --ratings ratings.jsonl --out runs/rated
python -m train grounding-validation --checkpoint default --out report.json

A user error (a bad flag value, a missing or damaged file) is one ``error: ...`` line on stderr
and exit code 2, as in ``python -m density_metric``.
"""

from __future__ import annotations

import argparse
import logging
import sys

from .calibrate import add_calibrate_arguments, calibrate_command
from .fit import add_fit_arguments, add_repetition_term_arguments, fit_command, repetition_term_command
from .grounding_validation import add_grounding_validation_arguments, grounding_validation_command
from .interpolate import add_interpolate_arguments, interpolate_command
from .push import add_push_arguments, push_command
from .retrieval_index import add_retrieval_index_arguments, retrieval_index_command
from .train import add_train_arguments, train_command

# name, help, flags, command
COMMANDS = (
    (
        "train",
        "train g and f on a corpus, then fit the Gaussian and write a checkpoint",
        add_train_arguments,
        train_command,
    ),
    (
        "fit",
        "fit the Gaussian on a corpus's gold pairs with an encoder and write a checkpoint",
        add_fit_arguments,
        fit_command,
    ),
    (
        "repetition-term",
        "copy a fitted checkpoint with the repetition term beside its density (weight 0 removes it), recalibrated",
        add_repetition_term_arguments,
        repetition_term_command,
    ),
    (
        "interpolate",
        "average two checkpoints' encoders and heads weight by weight (WiSE-FT), to fit with `fit --encoder`",
        add_interpolate_arguments,
        interpolate_command,
    ),
    (
        "calibrate",
        "fit a few-shot rating head on human ratings and write a copy of the checkpoint that predicts them",
        add_calibrate_arguments,
        calibrate_command,
    ),
    (
        "push",
        "upload a checkpoint directory to a Hub model repo; prints the commit",
        add_push_arguments,
        push_command,
    ),
    (
        "retrieval-index",
        "embed a split's utterances with the untuned all-MiniLM-L6-v2 and cache their nearest neighbours "
        "(for --negative-mix ...,retrieved:W)",
        add_retrieval_index_arguments,
        retrieval_index_command,
    ),
    (
        "grounding-validation",
        "measure a checkpoint's grounding signal on ConvAI2 gold replies (persona and last-turn overlap, echo wins)",
        add_grounding_validation_arguments,
        grounding_validation_command,
    ),
)


def _run_as() -> str:
    """The name the package was run as: ``train`` from a checkout, ``density_train`` anywhere (train/__main__.py)."""
    spec = getattr(sys.modules.get("__main__"), "__spec__", None)
    name = spec.name.rpartition(".")[0] if spec is not None else ""
    return name if name in ("train", "density_train") else "density_train"


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog=f"python -m {_run_as()}")
    commands = parser.add_subparsers(dest="command", required=True)
    for name, help, add_arguments, command in COMMANDS:
        subparser = commands.add_parser(name, help=help)
        add_arguments(subparser)
        subparser.set_defaults(func=command)
    return parser


def main(argv=None) -> None:
    args = build_parser().parse_args(argv)
    args.argv = list(sys.argv[1:] if argv is None else argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s: %(message)s")
    args.func(args)
