"""Build a Hugging Face Hub cache by hand, in the layout huggingface_hub reads offline."""

from __future__ import annotations

import hashlib
import os
import shutil
from pathlib import Path


def build_hub_cache(cache_dir: Path, repo_id: str, source: Path, commit: str, ref: str = "main") -> Path:
    """Put ``source``'s files in ``cache_dir`` as snapshot ``commit`` of model ``repo_id``; ``ref`` points to it.

    Layout: models--org--name/{refs/<ref>, blobs/<sha256>, snapshots/<commit>/<file> -> ../../blobs/<sha256>}.
    """
    repo_dir = cache_dir / f"models--{repo_id.replace('/', '--')}"
    snapshot = repo_dir / "snapshots" / commit
    (repo_dir / "blobs").mkdir(parents=True, exist_ok=True)
    (repo_dir / "refs").mkdir(parents=True, exist_ok=True)
    snapshot.mkdir(parents=True, exist_ok=True)
    for file in sorted(p for p in source.iterdir() if p.is_file()):
        digest = hashlib.sha256(file.read_bytes()).hexdigest()
        blob = repo_dir / "blobs" / digest
        if not blob.exists():
            shutil.copyfile(file, blob)
        os.symlink(os.path.relpath(blob, snapshot), snapshot / file.name)
    (repo_dir / "refs" / ref).write_text(commit)
    return snapshot
