"""The command lines of a device training run (benchmarks/device_train.py, benchmarks/device_profile.py): ``python
-m train train`` of a named recipe at the run's scale, checked through train's own parser, and how a subprocess of
one ended, for a report."""

from __future__ import annotations

import argparse
import contextlib
import io
import shlex
from pathlib import Path

from .device_recipes import RECIPES


def train_argv(
    args: argparse.Namespace, out: Path, minutes: float, recipe_name: str | None = None, start: str | None = None
) -> list[str]:
    """``python -m train`` arguments of the recipe (``args.recipe``, or ``recipe_name``) from ``args.start`` (or
    ``start``) at the scale of ``args``, into ``out``, guarded at ``minutes``; the arguments after ``--`` last (a
    repeated flag's last value wins)."""
    recipe_name = recipe_name or args.recipe
    recipe = RECIPES[recipe_name]
    data = Path(args.data_dir)
    argv = ["train", *recipe.flags, "--data-dir", str(data / "dailydialog"), "--out", str(out)]
    argv += ["--backbone" if recipe.starts_from == "backbone" else "--init-from", start or args.start]
    argv += ["--valid-limit", str(args.valid_limit), "--valid-fit-pairs", str(args.valid_fit_pairs)]
    argv += ["--fit-batch-size", str(args.fit_batch_size), "--mixed-precision", args.mixed_precision]
    argv += ["--name", f"density-minilm-{recipe_name}", "--max-minutes", f"{minutes:.4g}"]
    steps = recipe.steps_per_epoch if args.steps_per_epoch < 0 else args.steps_per_epoch
    argv += ["--max-steps-per-epoch", str(steps)] if steps else []
    argv += ["--epochs", str(args.epochs)] if args.epochs else []
    argv += ["--batch-size", str(args.batch_size)] if args.batch_size else []
    argv += ["--limit", str(args.train_limit)] if args.train_limit else []
    if (data / "zhao2020" / "dailydialog_zhao.normalized.jsonl").is_file():  # log the dev Spearman at each evaluation
        argv += ["--dev-judgments", str(data)]
    return argv + args.train_args


def parsed_train_args(argv: list[str], check_config: bool = True) -> argparse.Namespace:
    """The train command's arguments through its own parser, and (``check_config``) its recipe checked, which reads
    the folders it names (a ValueError names a flag)."""
    from density_train.commands import build_parser
    from density_train.config.flags import config_from_args

    printed = io.StringIO()
    try:
        with contextlib.redirect_stderr(printed):
            args = build_parser().parse_args(argv)
    except SystemExit:  # argparse's error, of the command or of its subcommand: its last line says what
        raise ValueError("python -m train: " + (printed.getvalue().strip().splitlines() or ["?"])[-1]) from None
    args.config = config_from_args(args) if check_config else None
    return args


def ended(process: dict) -> str:
    """How a subprocess of :func:`run_module` ended, for an error."""
    return f"was killed {process['killed']}" if process["exit_code"] is None else f"exited with {process['exit_code']}"


def shown(module: str, argv: list[str]) -> str:
    return f"python3 -m {module} " + shlex.join(argv)
