"""Where a checkpoint comes from: the bundled default, a local directory, or a Hub model repo.

What a checkpoint holds and how it is checked is :mod:`density_metric.checkpoint.format`;
this module only finds the directory and says where it came from (``source``, ``revision``).
"""

from __future__ import annotations

import logging
import os
from pathlib import Path

from .format import CHECKPOINT_FILES, Checkpoint, CheckpointError, load_checkpoint

logger = logging.getLogger(__name__)

BUNDLED_DIR = Path(__file__).resolve().parent.parent / "default"
BUNDLED = "bundled"  # the checkpoint's name on the command line, and the prefix of its source in signatures


def resolve_checkpoint(
    checkpoint: str | os.PathLike | None = None,
    revision: str | None = None,
    *,
    cache_dir: str | os.PathLike | None = None,
    local_files_only: bool | None = None,
) -> Checkpoint:
    """Find and load a checkpoint: a local directory, else a Hub repo id, else the bundled default.

    Args:
        checkpoint: ``None``, ``"bundled"`` or ``"default"`` for the bundled default (also
            ``"bundled:<its name>"``, as its signature names it); a directory; or a Hub model repo id
            such as ``"org/density-dailydialog"``. These names come before a directory of that name.
        revision: Hub branch, tag or (best) commit hash. Ignored for directories.
        cache_dir: Hub cache to use instead of ``HF_HUB_CACHE``.
        local_files_only: only read the Hub cache. ``HF_HUB_OFFLINE=1`` does the same.
    """
    if checkpoint is None or str(checkpoint) in ("default", BUNDLED) or str(checkpoint).startswith(f"{BUNDLED}:"):
        return _load_bundled(None if checkpoint is None else str(checkpoint))
    path = Path(checkpoint)
    if path.is_dir():
        return load_checkpoint(checkpoint)
    if path.exists():
        raise ValueError(f"checkpoint {str(checkpoint)!r} is a file; give its directory, or a Hub repo id")
    # Before any Hub call or warning: a path that does not exist is not a repo id either (those are name or org/name).
    if looks_like_path(checkpoint):
        raise ValueError(f"checkpoint {str(checkpoint)!r}: no such directory{_nearby(path)}")
    if not is_repo_id(str(checkpoint)):
        raise ValueError(
            f"checkpoint {str(checkpoint)!r} is neither a local directory nor a valid Hub repo id: no such directory"
        )
    return _load_from_hub(str(checkpoint), revision, cache_dir, bool(local_files_only))


def looks_like_path(checkpoint: str | os.PathLike) -> bool:
    """Whether ``checkpoint`` is meant as a local folder, though none is there: a ``Path``, a name that starts with
    ``.``, ``~`` or a path separator, that holds this system's own separator where it is not ``/`` (Windows' ``\\``),
    or whose folder exists here (``runs/quikc`` beside a ``runs`` folder). A Hub id (``org/name``) has none of these,
    unless a folder named like its org is where it is asked for."""
    text = str(checkpoint)
    if isinstance(checkpoint, os.PathLike) or text.startswith((".", "~", "/", os.sep)):
        return True
    if os.sep != "/" and os.sep in text:
        return True
    parent = Path(text).parent
    return str(parent) not in ("", ".") and parent.is_dir()


def _nearby(path: Path) -> str:
    """``" (did you mean 'runs/quick'?)"``: the closest name in the folder ``path`` would be in, where one is close."""
    import difflib

    folder = path.expanduser().parent
    try:
        names = [entry.name for entry in folder.iterdir() if entry.is_dir()]
    except OSError:
        return ""
    close = difflib.get_close_matches(path.name, names, n=1)
    return f" (did you mean {str(path.parent / close[0])!r}?)" if close else ""


def _load_bundled(name: str | None) -> Checkpoint:
    """The bundled checkpoint, for ``name`` None, ``"default"``, ``"bundled"`` or ``"bundled:<its name>"``."""
    loaded = load_checkpoint(BUNDLED_DIR)
    loaded.source = f"{BUNDLED}:{loaded.config.name or 'default'}"
    if name is not None and ":" in name and name != loaded.source:
        raise ValueError(
            f"checkpoint {name!r} is not bundled: the bundled checkpoint is {loaded.source.partition(':')[2]!r} "
            f"(checkpoint {BUNDLED!r} or {loaded.source!r})"
        )
    return loaded


def is_repo_id(value: str) -> bool:
    """Whether ``value`` is a valid Hub repo id (``name`` or ``org/name``), by huggingface_hub's own rule."""
    from huggingface_hub.errors import HFValidationError
    from huggingface_hub.utils import validate_repo_id

    try:
        validate_repo_id(value)
    except HFValidationError:
        return False
    return True


def _load_from_hub(repo_id: str, revision: str | None, cache_dir, local_files_only: bool) -> Checkpoint:
    from huggingface_hub import snapshot_download
    from huggingface_hub.errors import HFValidationError, LocalEntryNotFoundError

    try:
        path = snapshot_download(
            repo_id,
            revision=revision,
            cache_dir=cache_dir,
            local_files_only=local_files_only,
            allow_patterns=CHECKPOINT_FILES,
        )
    except HFValidationError:
        raise ValueError(f"checkpoint {repo_id!r} is neither a local directory nor a valid Hub repo id") from None
    except LocalEntryNotFoundError as err:
        cause = next((line.strip() for line in str(err).splitlines() if line.strip()), type(err).__name__)
        raise CheckpointError(  # one line: huggingface_hub's own message runs over several
            repo_id,
            f"revision {revision or 'main'!r} is not in the local Hub cache and downloads are off "
            f"(HF_HUB_OFFLINE=1 or local_files_only=True), or the Hub cannot be reached ({cause})",
        ) from None
    # The snapshot folder is named after the commit, whatever branch or tag was asked for.
    commit = Path(path).name
    if revision is None:  # after the download, so that a path or id that fails is not also told to pin
        logger.warning(
            "Loaded %s without a pinned revision (main is commit %s now); pass revision=%r for reproducible scores.",
            repo_id,
            commit,
            commit,
        )
    return load_checkpoint(path, source=repo_id, revision=commit)
