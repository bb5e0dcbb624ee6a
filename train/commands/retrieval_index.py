"""``python -m train retrieval-index``: embed a split's utterances and cache their nearest neighbours, the index
behind the ``retrieved`` negatives (:mod:`density_train.negatives.retrieval`)."""

from __future__ import annotations

import json
import time
from pathlib import Path

from density_metric.errors import fail

from ..arguments import check_at_least, check_out
from ..data.corpora import add_corpus_arguments, load_corpus
from ..data.examples import SelectionData
from ..negatives.retrieval import CACHE_DIR, DEFAULT_CEILING, DEFAULT_K, RetrievalIndex, similarity_bands, split_path


def add_retrieval_index_arguments(parser) -> None:
    """The flags of ``python -m train retrieval-index``."""
    add_corpus_arguments(parser)
    parser.add_argument("--split", choices=("train", "validation"), default="train")
    parser.add_argument(
        "--out", type=Path, default=None, help="default: runs/cache/retrieval-<corpus>[-<split>].safetensors"
    )
    parser.add_argument(
        "--k", type=int, default=DEFAULT_K, help=f"neighbours kept per utterance (default: {DEFAULT_K})"
    )
    parser.add_argument(
        "--ceiling",
        type=float,
        default=DEFAULT_CEILING,
        help=f"leave out neighbours above this cosine similarity, paraphrases (default: {DEFAULT_CEILING}; 1: none)",
    )
    parser.add_argument("--encoder", default="minilm", help="embedding model (default: the untuned all-MiniLM-L6-v2)")
    parser.add_argument("--batch-size", type=int, default=256)
    parser.add_argument("--device", default="auto")
    parser.add_argument("--dtype", choices=("float32", "bfloat16"), default="float32")


def retrieval_index_command(args) -> None:
    """Embed a split's unique utterances and write their nearest neighbours (train/negatives/retrieval.py)."""
    started = time.perf_counter()
    out = args.out or split_path(CACHE_DIR / f"retrieval-{args.corpus}.safetensors", args.split)
    try:
        check_out(out, file=True)
        check_at_least("--k", args.k, 1)
        train_pairs, valid_pairs = load_corpus(args)
    except ValueError as err:
        fail(str(err))
    contexts, responses = (train_pairs if args.split == "train" else valid_pairs)[:2]
    pool = SelectionData.from_pairs(contexts, responses).pool
    index = RetrievalIndex.build(
        pool,
        k=args.k,
        ceiling=None if args.ceiling >= 1 else args.ceiling,
        encoder=args.encoder,
        batch_size=args.batch_size,
        device=args.device,
        dtype=args.dtype,
        progress=True,
    )
    index.save(out)
    found = index.neighbours >= 0
    report = {
        "out": str(out),
        "utterances": len(pool),
        "pool_sha256": index.pool_hash,
        "k": index.k,
        "ceiling": index.ceiling,
        "utterances_with_k_neighbours": int(found.all(axis=1).sum()),
        "utterances_without_neighbours": int((~found.any(axis=1)).sum()),
        "similarity_bands": similarity_bands(index),
        "seconds": round(time.perf_counter() - started, 1),
    }
    print(json.dumps(report, indent=2))
