"""Output files: the file that writing a path replaces, a temporary name beside it, and the check that it
can be written.

An earlier output is never removed up front: every writer writes a temporary file beside the target and
renames it over the target when complete, so a run that fails or is stopped leaves the earlier file as it was.

:func:`replacing` is that one writer: :mod:`density_metric.io.tables` (``write_records``), ``compare --json`` and
the benchmarks' JSON reports (:func:`write_json`), ``train grounding-validation --out`` and the benchmarks'
Markdown (:func:`write_text`) go through it. The GPU-machine commands
(benchmarks/device_sections.py) keep a torch-free writer of their own: their report must be written where torch does
not import, and importing this package loads torch. For that reason too, the two torch-free benchmark scripts
(``train_host``, whose parent process only starts and reads its workers, and ``pilot_table``) write with
:meth:`pathlib.Path.write_text`.
"""

from __future__ import annotations

import contextlib
import json
import os
import secrets
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Any


def output_target(path: str | Path) -> Path:
    """The file that writing ``path`` replaces: for a symlink, the file it points to (written through, as a
    shell's ``>`` does, so the link stays), else ``path`` itself."""
    path = Path(path)
    return Path(os.path.realpath(path)) if path.is_symlink() else path


def same_file(a: str | Path, b: str | Path) -> bool:
    """Whether ``a`` and ``b`` name one file: by :func:`os.path.samefile` where both exist (so a symlink, a hard
    link or ``./a`` for ``a`` is caught), else by their resolved paths (an output that does not exist yet)."""
    try:
        return os.path.samefile(a, b)
    except OSError:
        return Path(a).resolve() == Path(b).resolve()


def temporary_path(path: Path) -> Path:
    """A fresh hidden name next to ``path``, so that the rename over it is atomic."""
    return path.with_name(f".{path.name}.{os.getpid()}.{secrets.token_hex(4)}.tmp")


def check_output_path(path: str | Path) -> None:
    """Fail now, before any work, where writing ``path`` (a temporary file beside it, renamed over it) would
    fail later; creates the parent directory, as the writers do. An earlier file at ``path`` is left as it is.

    Raises:
        ValueError: ``"cannot write PATH: ..."``: the path is a directory, an ancestor is a file, or the
            directory cannot be created or written to.
    """
    target = output_target(path)
    if target.is_dir():
        raise ValueError(f"cannot write {path}: it is a directory")
    for parent in target.parents:  # nearest first: the first that exists must be a directory
        if parent.exists():
            if not parent.is_dir():
                raise ValueError(f"cannot write {path}: {parent} is not a directory")
            break
    temporary = temporary_path(target)
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        try:  # what the writers do first: a read-only folder or file system fails here
            open(temporary, "x").close()
        finally:
            temporary.unlink(missing_ok=True)
    except OSError as err:
        raise ValueError(f"cannot write {path}: {err.strerror or err}") from None


def sync(handle) -> None:
    """Flush to the disk before the rename, so that a crash cannot leave a renamed but empty file."""
    handle.flush()
    os.fsync(handle.fileno())


@contextlib.contextmanager
def replacing(path: str | Path, mode: str = "x", **open_args: Any) -> Iterator[IO[Any]]:
    """A handle on a new hidden file beside ``path`` (``mode`` ``"x"`` or ``"xb"``, ``open_args`` as
    :func:`open`'s), renamed over ``path`` once the block ends without an exception: a reader or a kill sees
    the earlier file or the whole new one, never a part. The parent directory is created; a symlink at ``path``
    is written through (:func:`output_target`). On any exception, Ctrl-C included, the hidden file is removed
    and the earlier file stays as it was."""
    if mode not in ("x", "xb"):
        raise ValueError(f"mode must be 'x' or 'xb', got {mode!r}")
    target = output_target(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    temporary = temporary_path(target)
    try:
        with open(temporary, mode, **open_args) as handle:
            yield handle
            sync(handle)
        os.replace(temporary, target)
    except BaseException:
        temporary.unlink(missing_ok=True)
        raise


def write_text(path: str | Path, text: str) -> None:
    """``text`` (UTF-8) into ``path``, whole or not at all (:func:`replacing`)."""
    with replacing(path, encoding="utf-8") as handle:
        handle.write(text)


def write_json(path: str | Path, value: Any, indent: int = 2, default: Any = None) -> None:
    """``value`` as indented JSON and a final newline into ``path``, whole or not at all (:func:`write_text`);
    ``indent`` and ``default`` as :func:`json.dumps`'s."""
    write_text(path, json.dumps(value, indent=indent, default=default) + "\n")
