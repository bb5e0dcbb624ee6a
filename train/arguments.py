"""What every ``python -m train`` command checks of its arguments before any work, one rule for all:
where it reads a model, where it writes, and its counts (:func:`check_at_least`).

Reading. A checkpoint argument (``train --init-from``, ``interpolate``'s START and END, ``calibrate``,
``repetition-term``) is what ``density-metric score`` takes, resolved as
:func:`density_metric.checkpoint.sources.resolve_checkpoint` resolves it: ``default`` (the bundled
release), a folder, or a Hub model repo id. An encoder argument (``train --backbone``, ``fit
--encoder``) is a folder, a Hub id, ``minilm`` or ``default`` (the bundled release's folder).

Writing. :func:`check_out` refuses, before any work, an ``--out`` that is a file or lies below one,
the folder of a checkpoint the command reads, and (for the commands that write a checkpoint folder
from others: ``interpolate``, ``calibrate``, ``repetition-term``) a non-empty folder holding anything
but the files the command writes: a command never writes over a file that is not its own kind of
output.
"""

from __future__ import annotations

import os
from collections.abc import Collection, Mapping, Sequence
from pathlib import Path

from density_metric.checkpoint.format import CARD_FILE, CHECKPOINT_FILES, GAUSSIAN_FILE, RATING_FILE
from density_metric.checkpoint.sources import BUNDLED_DIR, is_repo_id, resolve_checkpoint

from .model import BACKBONE_ALIASES, backbone_path

# The words of a refused non-empty --out, for the error and the commands' --help.
OUT_RULE = (
    "a new or empty folder, or one holding only files this command writes (its earlier output, which is "
    "replaced); never the folder of a checkpoint it reads"
)


def check_at_least(flag: str, value: float, least: float) -> None:
    """The one check of a count or amount flag (the recipe's in :mod:`density_train.config.recipe`, ``--limit``, ``--max-minutes``,
    ``retrieval-index --k``): a ValueError naming ``flag`` unless ``value`` >= ``least`` (NaN too)."""
    if not value >= least:
        raise ValueError(f"{flag} must be at least {least}, got {value}")


# Several training processes on CPU: accelerate launch starts several there only with an MPI hostfile.
CPU_PROCESSES_RECIPE = "ACCELERATE_USE_CPU=1 torchrun --nproc_per_node N -m train train ..."


def check_processes(num_processes: int, environ: Mapping[str, str] = os.environ) -> str | None:
    """The processes that Accelerate sees (``num_processes``) against what launched them, before any work.

    A ValueError where a launcher started several processes (``WORLD_SIZE``) that Accelerate runs each alone
    (torchrun on CPU without ``ACCELERATE_USE_CPU=1``): they would train the same run side by side into one
    ``--out``. A warning, returned, where ``accelerate launch --num_processes N --cpu`` started this one process
    alone: it sets ``MASTER_ADDR`` as for several processes, but no ``WORLD_SIZE``."""
    launched = int(environ.get("WORLD_SIZE") or 1)
    if launched > 1 and num_processes != launched:
        raise ValueError(
            f"{launched} processes were launched (WORLD_SIZE={launched}), but Accelerate sees {num_processes}, so "
            f"each would train the run alone into the same --out; on CPU, run {CPU_PROCESSES_RECIPE}"
        )
    by_accelerate = "ACCELERATE_DYNAMO_BACKEND" in environ  # set by accelerate launch only
    if num_processes == 1 and by_accelerate and "MASTER_ADDR" in environ and "WORLD_SIZE" not in environ:
        return (
            "accelerate launch asked for several processes but started this one alone (on CPU it starts several "
            f"only with --mpirun_hostfile): this run trains in one process; for several, run {CPU_PROCESSES_RECIPE}"
        )
    return None


def local_checkpoint_folder(value: str | Path) -> Path | None:
    """The folder of the checkpoint argument ``value`` when it needs no download: the bundled release
    for ``default``, else ``value`` itself if it is a folder; ``None`` for a Hub repo id."""
    if str(value) == "default":
        return BUNDLED_DIR
    path = Path(value)
    return path if path.is_dir() or not is_repo_id(str(value)) else None


def checkpoint_folder(value: str | Path, flag: str) -> Path:
    """The folder of the checkpoint argument ``value`` (given as ``flag``), resolved as ``score`` and
    ``calibrate`` resolve theirs: ``default``, a folder, or a Hub repo id (downloaded, or read from the
    Hub cache); a ValueError names ``flag``. A folder is not checked here: the caller reads what it needs."""
    folder = local_checkpoint_folder(value)
    if folder is not None:
        return folder
    try:
        return resolve_checkpoint(str(value)).path
    except ValueError as err:  # CheckpointError is a ValueError
        raise ValueError(f"{flag} {value}: {err}") from None


def encoder_folder(value: str, flag: str) -> str:
    """The encoder argument ``value`` (given as ``flag``) as the loader takes it: ``minilm`` is the
    installed all-MiniLM-L6-v2, ``default`` the bundled release's folder, else a folder or a Hub id. A
    ValueError names ``flag`` for a value that is neither an existing folder nor a Hub id (a missing
    path, or a file), before anything is read or written."""
    if value == "default":
        return str(BUNDLED_DIR)
    if value in BACKBONE_ALIASES:
        try:
            return backbone_path(value)
        except ValueError as err:
            raise ValueError(f"{flag} {err}") from None
    path = Path(value).expanduser()
    if path.is_dir():
        return value
    if path.exists():
        raise ValueError(f"{flag} {value}: a file, not a model folder or a Hub id")
    if not is_repo_id(value):
        raise ValueError(f"{flag} {value}: no such folder (and not a Hub id)")
    return value


def check_out(
    out: Path,
    *,
    inputs: Sequence[Path | None] = (),
    writes: Collection[str] | None = None,
    file: bool = False,
    flag: str = "--out",
) -> None:
    """Refuse the output ``out`` of a command before any work, with a ValueError naming ``flag``.

    ``out`` is a folder (``file``: a file, such as a retrieval index): it must not be a file (a folder),
    nor lie below a file. It must not be the folder of one of ``inputs`` (checkpoint folders the command
    reads; ``None``: one that is not local). With ``writes`` (the file names the command writes), a
    non-empty folder must hold nothing else.
    """
    out = Path(out)
    if file and out.is_dir():
        raise ValueError(f"{flag} {out}: a folder; give the file to write")
    if not file and out.exists() and not out.is_dir():
        raise ValueError(f"{flag} {out}: a file, not a folder")
    above = next((parent for parent in out.absolute().parents if parent.exists()), None)
    if above is not None and not above.is_dir():
        raise ValueError(f"{flag} {out}: {above} is a file, not a folder")
    for source in inputs:
        if source is not None and out.resolve() == Path(source).resolve():
            raise ValueError(f"{flag} {out}: the checkpoint this command reads; write to a new folder")
    if writes is not None and out.is_dir():
        others = sorted(entry.name + ("/" if entry.is_dir() else "") for entry in out.iterdir())
        others = [name for name in others if name not in writes]
        if others:
            raise ValueError(
                f"{flag} {out} holds files this command does not write ({', '.join(others[:3])}"
                f"{', ...' if len(others) > 3 else ''}); give {OUT_RULE}"
            )


# What ``interpolate`` writes: an encoder folder with its head and pair format, no Gaussian, card or rating.
ENCODER_FOLDER_FILES = tuple(name for name in CHECKPOINT_FILES if name not in (GAUSSIAN_FILE, RATING_FILE, CARD_FILE))
