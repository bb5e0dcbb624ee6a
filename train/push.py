"""Upload a checkpoint directory to a Hub model repo (``python -m train push DIR REPO_ID``)."""

from __future__ import annotations

import logging
from pathlib import Path

from density_metric.checkpoint import load_checkpoint

logger = logging.getLogger(__name__)


def push_checkpoint(
    directory: str | Path,
    repo_id: str,
    *,
    private: bool = False,
    message: str = "Upload DEnsity checkpoint",
    endpoint: str | None = None,
    token: str | None = None,
) -> str:
    """Create ``repo_id`` if needed, commit every file of the (validated) checkpoint, return the commit hash.

    Pin that hash: ``DensityScorer(repo_id, revision=<hash>)`` / ``evaluate.load("density",
    checkpoint=repo_id, revision=<hash>)``.
    """
    from huggingface_hub import CommitOperationAdd, HfApi

    directory = Path(directory)
    checkpoint = load_checkpoint(directory)  # refuse to upload something the metric cannot load
    if checkpoint.config.encoder_package is not None:
        raise ValueError(f"{directory} points to the installed package {checkpoint.config.encoder_package!r} "
                         "for its encoder; push a checkpoint that holds its own encoder files")  # fmt: skip
    api = HfApi(endpoint=endpoint, token=token)
    api.create_repo(repo_id, repo_type="model", private=private, exist_ok=True)
    files = sorted(p for p in directory.iterdir() if p.is_file())
    operations = [CommitOperationAdd(path_in_repo=file.name, path_or_fileobj=str(file)) for file in files]
    commit = api.create_commit(repo_id, operations, commit_message=message, repo_type="model")
    logger.info("pushed %d files to %s at %s", len(files), repo_id, commit.oid)
    return commit.oid
