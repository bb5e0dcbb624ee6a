"""Upload a checkpoint directory to a Hub model repo (``python -m train push DIR REPO_ID``)."""

from __future__ import annotations

import logging
from pathlib import Path

from density_metric.checkpoint.format import CHECKPOINT_FILES, load_checkpoint
from density_metric.errors import fail

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
    """Create ``repo_id`` if needed, commit the (validated) checkpoint's files, return the commit hash.

    Only the files a checkpoint may hold (``CHECKPOINT_FILES``, the same list a download
    fetches) are uploaded; anything else in the folder stays local. A checkpoint file the repo holds and this
    checkpoint lacks (a rating head pushed before, say) is deleted in the same commit, so that a download at the new
    commit fetches this checkpoint and nothing of an earlier one; the repo's other files stay.

    Pin that hash: ``DensityScorer(repo_id, revision=<hash>)`` / ``evaluate.load("density",
    checkpoint=repo_id, checkpoint_revision=<hash>)``.
    """
    from huggingface_hub import HfApi

    directory = Path(directory)
    checkpoint = load_checkpoint(directory)  # refuse to upload something the metric cannot load
    if checkpoint.config.encoder_package is not None:
        raise ValueError(
            f"{directory} points to the installed package {checkpoint.config.encoder_package!r} "
            "for its encoder; push a checkpoint that holds its own encoder files"
        )
    api = HfApi(endpoint=endpoint, token=token)
    api.create_repo(repo_id, repo_type="model", private=private, exist_ok=True)
    commit = api.upload_folder(
        repo_id=repo_id,
        folder_path=directory,
        repo_type="model",
        commit_message=message,
        allow_patterns=CHECKPOINT_FILES,
        delete_patterns=CHECKPOINT_FILES,  # the files of an earlier checkpoint that this one lacks
    )
    logger.info("pushed %s to %s at %s", directory, repo_id, commit.oid)
    return commit.oid


def add_push_arguments(parser) -> None:
    """The flags of ``python -m train push``."""
    parser.add_argument("checkpoint", type=Path)
    parser.add_argument("repo_id")
    parser.add_argument("--private", action="store_true")
    parser.add_argument("--message", default="Upload DEnsity checkpoint")


def push_command(args) -> None:
    """``python -m train push``: prints the commit."""
    from huggingface_hub import constants, errors

    # The HTTP client's errors (a refused connection, a timeout), as huggingface_hub imports them: httpx's, or
    # httpx2's from huggingface_hub 2 on. Its answers with an error status are HfHubHTTPError, an OSError too.
    unreachable = getattr(errors, "HTTPError", OSError)
    try:
        commit = push_checkpoint(args.checkpoint, args.repo_id, private=args.private, message=args.message)
    except (ValueError, OSError) as err:  # CheckpointError is a ValueError naming the file
        fail(str(err))
    except unreachable as err:
        fail(f"{args.repo_id}: cannot reach the Hub at {constants.ENDPOINT} ({err}); nothing was committed")
    print(commit)
