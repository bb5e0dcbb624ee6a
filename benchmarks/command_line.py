"""The checks of the benchmark command lines, made before any work: a bad argument is one ``error: ...`` line
(argparse's ``parser.error``, exit 2) that names the flag, and nothing is read, scored or written.

Each script calls, right after ``parse_args``: :func:`check_counts` for its count flags, :func:`check_output` or
:func:`check_out_folder` for its output, :func:`check_dailydialog` (or :func:`check_files`) and :func:`check_sets`
for its data, and last :func:`check_checkpoint`, which reads a checkpoint's config and statistics (not its encoder
weights).
"""

from __future__ import annotations

import argparse
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING

from density_train.data.judgments import JudgmentSet, load_named_sets

if TYPE_CHECKING:
    from density_metric.checkpoint.format import Checkpoint

# density_metric (and with it torch) is imported where a check needs it: the scripts that read only logs
# (pilot_table, learning_curve) start in a fraction of a second.


def add_dtype_argument(parser: argparse.ArgumentParser) -> None:
    """``--dtype``: DensityScorer's ``dtype``, ``auto`` or one of its names; another is argparse's error."""
    from density_metric.encoding.device import DTYPES

    parser.add_argument("--dtype", default="auto", choices=("auto", *DTYPES), help="default: auto")


def check_counts(parser: argparse.ArgumentParser, args: argparse.Namespace, *flags: str, least: int = 1) -> None:
    """Each flag's value (``--batch-size`` is ``args.batch_size``) at least ``least``; None (the default) passes."""
    for flag in flags:
        value = getattr(args, flag.lstrip("-").replace("-", "_"))
        if value is not None and value < least:
            parser.error(f"{flag} must be at least {least}, got {value}")


def check_output(
    parser: argparse.ArgumentParser, flag: str, path: str | Path | None, *, makes_folder: bool = False
) -> None:
    """An output file that can be written at the end: not a folder, and in a folder that exists unless the script
    ``makes_folder``. None (no output asked for) passes."""
    if path is None:
        return
    path = Path(path)
    if path.is_dir():
        parser.error(f"{flag} {path}: is a folder, not a file")
    if not makes_folder and not path.parent.is_dir():
        parser.error(f"{flag} {path}: the folder {path.parent} does not exist")


def check_out_folder(parser: argparse.ArgumentParser, flag: str, path: str | Path) -> None:
    """An output folder that the script makes (or writes into): not a file."""
    if Path(path).is_file():
        parser.error(f"{flag} {path}: is a file, not a folder")


def check_files(
    parser: argparse.ArgumentParser, flag: str, folder: str | Path, names: Iterable[str], why: str = ""
) -> None:
    """Each of ``names`` (paths relative to ``folder``, the value of ``flag``) is a file."""
    for name in names:
        if not (Path(folder) / name).is_file():
            parser.error(f"{flag} {folder}: no {name}" + (f" ({why})" if why else ""))


def check_dailydialog(parser: argparse.ArgumentParser, data_dir: str | Path, *splits: str, why: str = "") -> Path:
    """The DailyDialog folder below ``--data-dir``, which must hold ``dialogues_{split}.txt`` of each split."""
    check_files(parser, "--data-dir", data_dir, [f"dailydialog/dialogues_{split}.txt" for split in splits], why)
    return Path(data_dir) / "dailydialog"


def check_sets(
    parser: argparse.ArgumentParser, data_dir: str | Path, names: list[str] | None = None
) -> list[JudgmentSet]:
    """The human-judgment sets of ``--data-dir`` (those of ``names``, else all): at least one, and each name found."""
    try:
        return load_named_sets(data_dir, names)
    except ValueError as err:
        parser.error(str(err))


def check_checkpoint(
    parser: argparse.ArgumentParser, checkpoint: str | None, revision: str | None = None, flag: str = "--checkpoint"
) -> Checkpoint:
    """The checkpoint that ``flag`` names, loaded and checked as DensityScorer loads it (without the encoder)."""
    from density_metric.checkpoint.sources import resolve_checkpoint

    try:
        return resolve_checkpoint(checkpoint, revision)
    except (ValueError, OSError) as err:  # CheckpointError is a ValueError; OSError: Hub and file errors
        parser.error(f"{flag} {checkpoint}: {err}")
