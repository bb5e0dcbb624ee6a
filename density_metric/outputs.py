"""Output files: the file that writing a path replaces, a temporary name beside it, removing an earlier output.

Used by :mod:`density_metric.tables` (``write_records``, ``check_writable``) and the command line.
"""

from __future__ import annotations

import os
import secrets
from pathlib import Path


def output_target(path: str | Path) -> Path:
    """The file that writing ``path`` replaces: for a symlink, the file it points to (written through, as a
    shell's ``>`` does, so the link stays), else ``path`` itself."""
    path = Path(path)
    return Path(os.path.realpath(path)) if path.is_symlink() else path


def temporary_path(path: Path) -> Path:
    """A fresh hidden name next to ``path``, so that the rename over it is atomic."""
    return path.with_name(f".{path.name}.{os.getpid()}.{secrets.token_hex(4)}.tmp")


def remove_output(path: str | Path, keep: str | Path | None = None) -> None:
    """Remove an earlier output at ``path`` (through a symlink: the file it points to, not the link), unless
    it is the file ``keep`` (the input, scored in place). Nothing happens where there is no file.

    Raises:
        ValueError: ``"cannot write PATH: ..."``, naming why the file cannot be removed.
    """
    target = output_target(path)
    if not os.path.lexists(target) or (keep is not None and _same_file(keep, target)):
        return  # unlink(missing_ok=True) would still fail on a read-only file system
    try:
        target.unlink()
    except OSError as err:
        raise ValueError(f"cannot write {path}: cannot remove the earlier file ({err.strerror or err})") from None


def _same_file(a: str | Path, b: str | Path) -> bool:
    try:
        return os.path.samefile(a, b)
    except OSError:  # one does not exist
        return False


def sync(handle) -> None:
    """Flush to the disk before the rename, so that a crash cannot leave a renamed but empty file."""
    handle.flush()
    os.fsync(handle.fileno())
