"""The retrieval index behind the ``retrieved`` hard negatives: each utterance's nearest neighbours.

An utterance's neighbours are the other utterances of the same pool (a split's unique turns,
``SelectionData.pool``) whose all-MiniLM-L6-v2 embeddings (untuned; mean-pooled over the
non-padding tokens, L2-normalised) are closest by cosine similarity. Following GRADE (Huang
et al. 2020), such look-alikes make harder negatives than random utterances. Left out, because
they would be false negatives: the utterance itself, its normalised copies (same text once
lowercased with punctuation and whitespace removed, see :func:`density_train.data.text.normalise`) and
every neighbour above a similarity ceiling (near-duplicates and paraphrases).

The index is computed once per pool and cached as safetensors (never pickle)::

    python -m train retrieval-index --data-dir ../shared/data/dailydialog --out runs/cache/retrieval-dailydialog.safetensors

with tensors ``neighbours`` (n, k) int32 (rows of the sorted pool, -1 where fewer than k
remain) and ``similarities`` (n, k) float32 (-inf there), and the pool's sha256
(:func:`pool_sha256`) in its metadata: loading it for another pool raises
:class:`PoolMismatchError`.

**The ceiling, measured** (DailyDialog train: 72,257 unique utterances, k = 20, the index built
once without a ceiling; self and normalised copies left out). Of its 1,445,140 neighbour pairs,
by cosine similarity, with how many of the pairs read (drawn at random in the band) were
paraphrases or otherwise interchangeable replies, i.e. false negatives (examples: I
interchangeable, D different):

============  =========  ==============  =====================================================
band          pairs      interchangeable examples read (similarity: utterance || neighbour)
============  =========  ==============  =====================================================
0.65 - 0.70   137,517    5 of 20         I 0.690 "What time shall we go ?" || "What time should
                                         we meet ?"; D 0.663 "I came here from PCC ." || "Do you
                                         like it better here or at PCC ?"
0.70 - 0.75   75,913     7 of 20         I 0.748 "Ok ... Here you are ." || "Here you are .";
                                         D 0.744 "I think the price is a little high , can't you
                                         reduce it" || "I'm afraid that there is no room for any
                                         reduction in price ."
0.75 - 0.80   40,632     22 of 32        I 0.755 "What's the fare for a single ticket ?" || "How
                                         much is the fare ?"; I 0.797 "Sorry . I didn't know ." ||
                                         "I'm sorry . I did not know that ."; D 0.771 "Next
                                         Wednesday ." || "This Saturday ."
0.80 - 0.85   22,319     20 of 32        I 0.801 "No idea ." || "I have no idea ."; I 0.848 "May I
                                         get a large order of curly fries ?" || "Let me get some
                                         large curly fries ."; D 0.847 "In an hour ." || "In about
                                         2 hours ."
0.85 - 0.90   11,470     27 of 32        I 0.859 "Do you accept credit cards ?" || "Do you take
                                         credit cards ?"; I 0.871 "No , it is not ." || "No , it's
                                         not ."; D 0.861 "3.00 Yuan ." || "Thirty-five yuan ."
0.90 - 0.95   5,786      12 of 12        I 0.940 "I need to find this newspaper article ." || "I
                                         am looking for a newspaper article ."
> 0.95        3,152      12 of 12        I 0.976 "What is your nationality ?" || "What ’ s your
                                         nationality ?"; I 0.951 "Thank you for you help ." ||
                                         "Thank you for your help ."
============  =========  ==============  =====================================================

Interchangeable replies are the majority from 0.75 up and a minority below, so
:data:`DEFAULT_CEILING` is 0.75: it drops 83,359 of the pairs (5.8 %); every utterance still
gets its 20 neighbours, from below the ceiling. The median utterance's nearest neighbour has
similarity 0.70 and its 20th 0.52; two random utterances have 0.08 (median of 20,000 pairs). DailyDialog is formulaic, so even below 0.75 about a third of the pairs read could replace
each other: retrieved negatives are noisier than the perturbations, and deserve a small weight.
"""

from __future__ import annotations

import hashlib
import logging
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ..data.text import normalise

logger = logging.getLogger(__name__)

FORMAT_VERSION = "1"
DEFAULT_K = 20
DEFAULT_CEILING = 0.75
CACHE_DIR = Path("runs/cache")  # ignored by git
ENCODER = "minilm"  # density_train.model.BACKBONE_ALIASES: the offline all-MiniLM-L6-v2
MAX_TOKENS = 256  # all-MiniLM-L6-v2's own max_seq_length


def split_path(train_index: str | Path, split: str) -> Path:
    """Where the index of ``split`` lies: the training split's own path, or beside it as ``NAME-<split>.EXT``."""
    train_index = Path(train_index)
    return train_index if split == "train" else train_index.with_name(f"{train_index.stem}-{split}{train_index.suffix}")


class PoolMismatchError(ValueError):
    """A cached index was built for another utterance pool."""


def pool_sha256(pool: Sequence[str]) -> str:
    """sha256 of the sorted pool: each utterance's UTF-8 bytes, length-prefixed (so no separator is ambiguous)."""
    digest = hashlib.sha256()
    for text in sorted(pool):
        data = text.encode("utf-8")
        digest.update(len(data).to_bytes(8, "little"))
        digest.update(data)
    return digest.hexdigest()


def embed(
    texts: Sequence[str],
    encoder: str = ENCODER,
    *,
    batch_size: int = 256,
    device: str = "auto",
    dtype: str = "float32",
    max_tokens: int = MAX_TOKENS,
    batch_tokens: int = 16_384,
    progress: bool = False,
    pooling: str = "mean",
    normalize: bool = True,
) -> np.ndarray:
    """(n, d) float32 embeddings: the last layer pooled over non-padding tokens (``pooling`` "mean",
    the default, or "max"), L2-normalised unless ``normalize`` is False.

    Texts are encoded in length-sorted batches (little padding) of at most ``batch_size`` texts
    and ``batch_tokens`` padded tokens (which bounds the attention's memory), under
    ``torch.inference_mode``; ``dtype`` "bfloat16" autocasts, "float32" does not.
    """
    import torch

    from density_metric.backbone import load_backbone

    from ..model import backbone_path

    if pooling not in ("mean", "max"):
        raise ValueError(f"pooling must be 'mean' or 'max', got {pooling!r}")
    if device == "auto":
        device = "cuda" if torch.cuda.is_available() else "cpu"
    model, tokenizer = load_backbone(backbone_path(encoder))
    model.to(device).eval()
    ids = tokenizer(list(texts), add_special_tokens=True, truncation=True, max_length=max_tokens)["input_ids"]
    order = np.argsort([len(row) for row in ids], kind="stable")
    batches, start = [], 0
    while start < len(order):  # sorted by length: a batch's longest is its last
        stop = start + 1
        while (
            stop < len(order)
            and stop - start < batch_size
            and (stop + 1 - start) * len(ids[order[stop]]) <= batch_tokens
        ):
            stop += 1
        batches.append(order[start:stop])
        start = stop
    out = np.zeros((len(texts), model.config.hidden_size), dtype=np.float32)
    autocast = torch.autocast(device_type=torch.device(device).type, dtype=torch.bfloat16, enabled=dtype == "bfloat16")
    if progress:
        from tqdm.auto import tqdm

        batches = tqdm(batches, desc="embedding", unit="batch")
    with torch.inference_mode(), autocast:
        for rows in batches:
            longest = max(len(ids[i]) for i in rows)
            input_ids = torch.full((len(rows), longest), tokenizer.pad_token_id, dtype=torch.long)
            mask = torch.zeros((len(rows), longest), dtype=torch.long)
            for j, i in enumerate(rows):
                input_ids[j, : len(ids[i])] = torch.tensor(ids[i])
                mask[j, : len(ids[i])] = 1
            hidden = model(input_ids=input_ids.to(device), attention_mask=mask.to(device)).last_hidden_state.float()
            weights = mask.to(device).unsqueeze(-1).float()
            if pooling == "mean":
                pooled = (hidden * weights).sum(1) / weights.sum(1).clamp(min=1)
            else:
                pooled = hidden.masked_fill(weights == 0, float("-inf")).max(1).values
            out[rows] = (torch.nn.functional.normalize(pooled, dim=-1) if normalize else pooled).cpu().numpy()
    return out


def top_neighbours(
    embeddings: np.ndarray,
    k: int,
    ceiling: float | None = DEFAULT_CEILING,
    keys: Sequence[str] | None = None,
    *,
    chunk_rows: int = 256,
) -> tuple[np.ndarray, np.ndarray]:
    """Each row's ``k`` most similar other rows by dot product (cosine for unit rows), best first.

    Excluded: the row itself, rows with the same ``keys`` entry (normalised copies), and rows
    whose similarity is above ``ceiling`` (``None``: no ceiling). Rows with fewer than ``k``
    others left are padded with index -1 and similarity -inf. The (rows, n) similarity block is
    computed ``chunk_rows`` rows at a time, so memory stays at ``chunk_rows * n`` floats.

    Returns ``(indices (n, k) int32, similarities (n, k) float32)``.
    """
    embeddings = np.ascontiguousarray(embeddings, dtype=np.float32)
    n = len(embeddings)
    if keys is not None and len(keys) != n:
        raise ValueError(f"keys has {len(keys)} entries for {n} embeddings")
    groups: dict[str, list[int]] = {}
    for row, key in enumerate(keys or ()):
        groups.setdefault(key, []).append(row)
    copies = {row: members for members in groups.values() if len(members) > 1 for row in members}
    width = min(k, max(n - 1, 0))
    indices = np.full((n, k), -1, dtype=np.int32)
    similarities = np.full((n, k), -np.inf, dtype=np.float32)
    if width == 0:
        return indices, similarities
    for start in range(0, n, chunk_rows):
        stop = min(start + chunk_rows, n)
        block = embeddings[start:stop] @ embeddings.T
        block[np.arange(stop - start), np.arange(start, stop)] = -np.inf
        if ceiling is not None:
            block[block > ceiling] = -np.inf
        for row in range(start, stop):
            if row in copies:
                block[row - start, copies[row]] = -np.inf
        top = np.argpartition(-block, width - 1, axis=1)[:, :width]
        values = np.take_along_axis(block, top, axis=1)
        order = np.argsort(-values, axis=1, kind="stable")
        top, values = np.take_along_axis(top, order, axis=1), np.take_along_axis(values, order, axis=1)
        kept = np.isfinite(values)
        indices[start:stop, :width] = np.where(kept, top, -1)
        similarities[start:stop, :width] = np.where(kept, values, -np.inf)
    return indices, similarities


@dataclass
class RetrievalIndex:
    """Neighbours of every utterance of ``texts`` (a sorted pool); see the module docstring."""

    texts: list[str]
    neighbours: np.ndarray  # (n, k) int32, -1: none
    similarities: np.ndarray  # (n, k) float32, -inf: none
    ceiling: float | None
    encoder: str = ENCODER

    def __post_init__(self):
        self.texts = list(self.texts)
        if self.neighbours.shape != self.similarities.shape or len(self.neighbours) != len(self.texts):
            raise ValueError(
                f"neighbours {self.neighbours.shape} and similarities {self.similarities.shape} "
                f"do not fit {len(self.texts)} texts"
            )
        self._row = {text: row for row, text in enumerate(self.texts)}
        self.pool_hash = pool_sha256(self.texts)
        self._checked_pool = self.texts  # the last pool check_pool accepted

    @property
    def k(self) -> int:
        return self.neighbours.shape[1]

    @classmethod
    def from_embeddings(
        cls, texts: Sequence[str], embeddings: np.ndarray, k: int = DEFAULT_K, ceiling: float | None = DEFAULT_CEILING
    ) -> RetrievalIndex:
        """The index of ``texts`` given their unit embeddings (rows in the order of ``texts``)."""
        neighbours, similarities = top_neighbours(embeddings, k, ceiling, [normalise(t) for t in texts])
        return cls(list(texts), neighbours, similarities, ceiling)

    @classmethod
    def build(
        cls,
        pool: Sequence[str],
        k: int = DEFAULT_K,
        ceiling: float | None = DEFAULT_CEILING,
        **embed_options,
    ) -> RetrievalIndex:
        """Embed the pool's unique utterances (sorted) and find their neighbours."""
        texts = sorted(set(pool))
        started = time.perf_counter()
        embeddings = embed(texts, **embed_options)
        logger.info("embedded %d utterances in %.0f s", len(texts), time.perf_counter() - started)
        return cls.from_embeddings(texts, embeddings, k, ceiling)

    def neighbours_of(self, text: str) -> list[str]:
        """The texts of ``text``'s neighbours, most similar first; [] if ``text`` is not in the pool."""
        row = self._row.get(text)
        if row is None:
            return []
        return [self.texts[i] for i in self.neighbours[row] if i >= 0]

    def check_pool(self, pool: Sequence[str]) -> None:
        """Raise :class:`PoolMismatchError` unless the index was built for exactly this pool."""
        if pool is self._checked_pool:
            return
        if sorted(set(pool)) != self.texts:
            raise PoolMismatchError(
                f"the retrieval index was built for another pool ({len(self.texts)} utterances, "
                f"sha256 {self.pool_hash[:12]}, not {len(set(pool))} utterances, sha256 {pool_sha256(set(pool))[:12]}); "
                "rebuild it with `python -m train retrieval-index`"
            )
        self._checked_pool = pool

    def save(self, path: str | Path) -> None:
        from density_metric.checkpoint.tensors import write_tensors

        path = Path(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        metadata = {
            "format_version": FORMAT_VERSION,
            "pool_sha256": self.pool_hash,
            "pool_size": str(len(self.texts)),
            "k": str(self.k),
            "ceiling": "none" if self.ceiling is None else repr(float(self.ceiling)),
            "encoder": self.encoder,
            "pooling": "mean, L2-normalised",
        }
        tensors = {
            "neighbours": np.ascontiguousarray(self.neighbours, dtype=np.int32),
            "similarities": np.ascontiguousarray(self.similarities, dtype=np.float32),
        }
        write_tensors(tensors, str(path), metadata)  # sorted metadata: the same index, the same bytes

    @classmethod
    def load(cls, path: str | Path, pool: Sequence[str]) -> RetrievalIndex:
        """The cached index at ``path`` for ``pool``; :class:`PoolMismatchError` if it was built for another pool."""
        from safetensors import safe_open

        texts = sorted(set(pool))
        with safe_open(str(path), framework="numpy") as handle:
            metadata = handle.metadata() or {}
            tensors = {name: handle.get_tensor(name) for name in handle.keys()}
        if metadata.get("format_version") != FORMAT_VERSION or set(tensors) != {"neighbours", "similarities"}:
            raise ValueError(f"{path} is not a retrieval index (format {FORMAT_VERSION})")
        expected = pool_sha256(texts)
        if metadata.get("pool_sha256") != expected:
            raise PoolMismatchError(
                f"{path} was built for another pool (sha256 {metadata.get('pool_sha256', '?')[:12]}, "
                f"{metadata.get('pool_size', '?')} utterances), not this one (sha256 {expected[:12]}, "
                f"{len(texts)} utterances); rebuild it with `python -m train retrieval-index`"
            )
        ceiling = None if metadata.get("ceiling") == "none" else float(metadata["ceiling"])
        return cls(texts, tensors["neighbours"], tensors["similarities"], ceiling, metadata.get("encoder", ENCODER))

    @classmethod
    def load_or_build(cls, path: str | Path, pool: Sequence[str], **build_options) -> RetrievalIndex:
        """The cache at ``path`` if it exists (and fits ``pool``), else built and written there."""
        if Path(path).is_file():
            return cls.load(path, pool)
        index = cls.build(pool, **build_options)
        index.save(path)
        return index


def similarity_bands(
    index: RetrievalIndex, edges: Sequence[float] = (-1.0, 0.5, 0.6, 0.7, 0.75, 0.8, 0.85, 0.9, 0.95, 1.0 + 1e-6)
) -> dict[str, int]:
    """How many stored neighbour pairs fall in each [low, high) similarity band."""
    values = index.similarities[index.neighbours >= 0]
    return {
        f"{max(low, -1.0):.2f}-{min(high, 1.0):.2f}": int(((values >= low) & (values < high)).sum())
        for low, high in zip(edges, edges[1:])
    }


# --- python -m train retrieval-index -----------------------------------------------------------


def retrieved_negative(
    gold: str, context: Sequence[str], retrieval: RetrievalIndex, rng: np.random.Generator
) -> str | None:
    """One of the gold's top-k neighbours in ``retrieval``, uniformly, skipping context turns
    (verbatim or normalised) and copies of the gold; ``None`` if none is left or the gold is not indexed."""
    banned = {normalise(turn) for turn in context} | {normalise(gold)}
    neighbours = [text for text in retrieval.neighbours_of(gold) if normalise(text) not in banned]
    return neighbours[rng.integers(len(neighbours))] if neighbours else None
