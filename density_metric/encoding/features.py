"""Feature extraction g(c, r): the cross-encoder's final-layer state at the feature token ([CLS], or the first
token of the reply's block), or its mean over the reply's block, as the pair format's pooling says.

:class:`Encoder` is the face of :mod:`density_metric.encoding`: ``encode(contexts, responses) -> Packing``, then
``features(packing)``. Shared by scoring and by training and Gaussian fitting (``train/``). Rows run longest first,
so that each batch is padded only to its own longest row and an out-of-memory error shows up on the first batch;
the features come back in input order. :func:`rows_to_batch` and :func:`batch_features` are the two steps of a batch
(pad on the host, run the model), for the training loop and the benchmarks that time them apart.
"""

from __future__ import annotations

import contextlib
import os
import threading
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import torch
from tqdm.auto import tqdm

from ..backbone import load_backbone
from ..errors import CheckpointError, positive_int
from ..repetition import rep2
from .device import DTYPES, resolve_device, resolve_dtype
from .last_layer import compute_cls_only_in_last_layer, computes_features_only
from .length_options import with_lengths
from .packing import PackedRow, PackedRows, Packing, pack_pairs
from .pair_format import POOLINGS, PairFormat
from .text_ids import gather, input_ids

# Below this many pairs no progress bar is drawn unless asked for.
PROGRESS_MIN_PAIRS = 1024
# On CPU, batches of long pairs are cut to this many padded tokens: bigger batches of long
# pairs ran slower here (benchmarks/speed.py: 2048 and 4096 tokens 10-20 % below 1024).
CPU_MAX_TOKENS = 1024
# On CUDA a batch is as many rows as fit this many padded tokens (text-embeddings-inference's default budget).
# Measured on an H200 on the 6,740 DailyDialog test pairs: bf16 4,072 / 11,784 / 14,734 / 14,662 pairs/s at 4,096 /
# 16,384 / 32,768 / 65,536 tokens, float32 5,597 / 8,925 / 9,449 / 7,098 (benchmarks/device_check_h200.json); in a
# second call bf16 20,093 / 20,317 / 18,951 at 16,384 / 32,768 / 65,536 (benchmarks/gpu_split_h200.json). 32,768 was
# the best in both, by 1-25 %; the default stays 16,384 until a run with the host work overlapped measures again
# (docs/speed.md).
CUDA_MAX_TOKENS = 16384
# Pairs per forward pass on CPU when the caller sets none; on CUDA only the token budget bounds a batch.
CPU_BATCH_SIZE = 64
# Most candidates a shared-context row holds: a row's length grows with its candidates.
CANDIDATES_PER_ROW = 32


def rows_to_batch(
    rows: Sequence[PackedRow] | PackedRows,
    pad_token_id: int,
    pooling: str = "feature-token",
    index: np.ndarray | None = None,
    multiple: int = 1,
) -> dict[str, torch.Tensor]:
    """Model inputs of encoder rows (those of ``index``, all by default), right-padded to the longest, its length
    rounded up to ``multiple`` (:meth:`PackedRows.batch`, one gather per input).

    Rows of one pair (the paper layout) give ``input_ids`` and a (b, t) ``attention_mask``. Shared-context rows
    give ``input_ids``, ``position_ids`` and ``segments`` (b, t) (-1 on padding), ``feature_index`` (b, k) and
    ``feature_valid`` (b, k) for rows with fewer candidates than the most; with ``pooling="mean"`` also
    ``mean_pooling``, a 0-d True. The attention mask and the pooling weights are built from the segments where
    the model runs (:func:`segment_mask`, :func:`batch_features`), so nothing of size (b, t, t) crosses to it.
    """
    if pooling not in POOLINGS:
        raise ValueError(f"pooling must be one of {POOLINGS}, got {pooling!r}")
    batch = PackedRows.from_rows(rows).batch(index, pad_token_id, multiple)
    if pooling == "mean" and "segments" in batch:
        batch["mean_pooling"] = torch.tensor(True)
    return batch


def segment_mask(segments: torch.Tensor) -> torch.Tensor:
    """The shared-context layout's boolean attention mask (b, 1, t, t) from ``segments`` (b, t), on their device.

    A token attends to the context (segment 0) and to its own block, never to padding (-1). A padding position
    attends to the context, so that its softmax stays finite; its output is never read.
    """
    key = segments[:, None, :]
    return ((key == 0) | ((segments[:, :, None] == key) & (key > 0)))[:, None]


def batch_features(model, batch: dict[str, torch.Tensor]) -> torch.Tensor:
    """g(c, r) of every candidate of a :func:`rows_to_batch` batch, row after row: (n, d).

    The final-layer state of each feature token ([CLS] in the paper layout), never the pooler;
    or, where the batch has ``mean_pooling``, the mean of the final-layer states of each block.

    Raises:
        ValueError: mean pooling on a model whose last layer computes the feature tokens only.
    """
    if "feature_index" not in batch:  # the paper layout: last_hidden_state[:, 0], segment ids all 0
        ids, mask = batch["input_ids"], batch["attention_mask"]
        return model(input_ids=ids, attention_mask=mask, token_type_ids=torch.zeros_like(ids)).last_hidden_state[:, 0]
    index, segments, mean = batch["feature_index"], batch["segments"], "mean_pooling" in batch
    if mean and computes_features_only(model):
        raise ValueError("mean pooling needs the whole last layer; this model computes its feature tokens only")
    hidden = model(
        input_ids=batch["input_ids"],
        attention_mask=segment_mask(segments),
        token_type_ids=torch.zeros_like(batch["input_ids"]),
        position_ids=batch["position_ids"],
        **({} if mean else {"feature_index": index}),
    ).last_hidden_state
    if mean:
        blocks = torch.arange(1, index.shape[1] + 1, device=segments.device)
        in_block = segments[:, None, :] == blocks[None, :, None]  # (b, k, t)
        weights = in_block / in_block.sum(-1, keepdim=True).clamp(min=1)
        features = torch.einsum("bkt,btd->bkd", weights.to(hidden.dtype), hidden)
    else:
        features = torch.gather(hidden, 1, index[..., None].expand(-1, -1, hidden.shape[-1]))
    return features[batch["feature_valid"]]


def one_ahead(function, items, gate: threading.Event | None = None) -> Iterator:
    """``map(function, items)``, each call run on a worker thread while the caller uses the previous result.

    ``gate``: each call after the first waits until the caller sets it (training sets it just before its backward
    pass, a long call that holds no GIL, so that the worker's Python never takes the GIL from the caller's short work
    between the model's calls). It is set here when the caller asks for the next result and when it stops early, so
    nothing waits on a gate nobody opens."""

    def call(item, wait: bool):
        if wait:
            gate.wait()
        return function(item)

    with ThreadPoolExecutor(max_workers=1) as pool:
        try:
            pending = None
            for item in items:
                if pending is None:
                    pending = pool.submit(call, item, False)
                    continue
                if gate is not None:
                    gate.set()
                result = pending.result()
                if gate is not None:
                    gate.clear()
                pending = pool.submit(call, item, gate is not None)
                yield result
            if pending is not None:
                if gate is not None:
                    gate.set()
                yield pending.result()
        finally:  # closed early (an error in the caller's step): the pool's exit must not wait on a closed gate
            if gate is not None:
                gate.set()


def length_sorted_batches(
    lengths: Sequence[int], batch_size: int, max_tokens: int | None = None, sizes: Sequence[int] | None = None
) -> list[np.ndarray]:
    """Index batches, longest rows first: at most ``batch_size`` pairs and, if given, at most
    ``max_tokens`` padded tokens (rows x longest) each.

    ``sizes``: the pairs (candidates) each row holds, 1 each by default; a batch holds rows while
    their pairs add up to ``batch_size`` at most (a row of more pairs than that is a batch alone).
    """
    order = np.argsort(-np.asarray(lengths), kind="stable")
    sizes = np.ones(len(order), dtype=np.int64) if sizes is None else np.asarray(sizes, dtype=np.int64)
    batches, start = [], 0
    while start < len(order):
        most_rows = len(order) - start
        if max_tokens is not None:
            most_rows = max(1, min(most_rows, max_tokens // max(int(lengths[order[start]]), 1)))
        pairs = np.cumsum(sizes[order[start : start + most_rows]])
        size = max(1, int(np.searchsorted(pairs, batch_size, side="right")))
        batches.append(order[start : start + size])
        start += size
    return batches


class Encoder:
    """The cross-encoder g with its tokenizer and pair format: :meth:`encode` the pairs, then :meth:`features`.

    Args:
        model: a transformers BERT-style model without pooling layer.
        tokenizer: its fast tokenizer.
        pair_format: how a pair becomes token ids (:class:`~density_metric.encoding.pair_format.PairFormat`).
        device: ``"auto"`` (CUDA if present), ``"cpu"``, ``"cuda:1"``...
        dtype: autocast dtype: ``"auto"`` (bfloat16 on CUDA, float32 on CPU; see
            :func:`~density_metric.encoding.device.resolve_dtype`),
            ``"float32"``, ``"bfloat16"`` or ``"float16"`` (CUDA only).
        max_tokens: most padded tokens (rows x longest row) a batch holds; default :data:`CPU_MAX_TOKENS` on CPU,
            :data:`CUDA_MAX_TOKENS` on CUDA.
        cls_only_last_layer: compute the model's last layer for [CLS] only (BERT models;
            :mod:`density_metric.encoding.last_layer`).

    The model is prepared for inference in place: with a 16-bit dtype its Linear weights are
    cast to it, and its last BERT layer computes [CLS] only. Save weights from elsewhere.
    """

    def __init__(
        self,
        model,
        tokenizer,
        pair_format: PairFormat,
        *,
        device: str | torch.device | None = "auto",
        dtype: str | None = "auto",
        max_tokens: int | None = None,
        cls_only_last_layer: bool = True,
    ):
        self.device = resolve_device(device)
        self.dtype = resolve_dtype(dtype, self.device)
        if max_tokens is not None:
            positive_int(max_tokens, "max_tokens")
        cuda = self.device.type == "cuda"
        self.max_tokens = int(max_tokens) if max_tokens else CUDA_MAX_TOKENS if cuda else CPU_MAX_TOKENS
        self.model = model.to(self.device).eval()
        if self.dtype != "float32":
            # Autocast would cast these weights on every forward pass; casting once gives the
            # same numbers (the products run in that dtype anyway) about 5 % faster on CPU.
            for module in self.model.modules():
                if isinstance(module, torch.nn.Linear):
                    module.to(DTYPES[self.dtype])
        self.cls_only_last_layer = (
            cls_only_last_layer
            and not pair_format.needs_whole_last_layer
            and compute_cls_only_in_last_layer(self.model)
        )
        self.tokenizer = tokenizer
        self.pair_format = pair_format

    @classmethod
    def load(
        cls,
        path: os.PathLike | str,
        pair_format: PairFormat,
        *,
        device: str | torch.device | None = "auto",
        dtype: str | None = "auto",
        max_length: int | None = None,
        max_tokens: int | None = None,
        max_response_length: int | None = None,
    ) -> Encoder:
        """The encoder and tokenizer at ``path`` (float32 weights), reading pairs as ``pair_format`` says.

        ``max_length`` and ``max_response_length`` override the format's, within the encoder's positions
        (:func:`~density_metric.encoding.length_options.with_lengths`: ``max_length`` alone caps the response at half of it;
        ``max_response_length`` alone keeps the context's budget).

        Raises:
            CheckpointError: the turn separator is not in the tokenizer's vocabulary, or the
                format's ``max_length`` does not fit the encoder's positions.
            ValueError: an override does not fit them, or leaves no token for the response.
        """
        model, tokenizer = load_backbone(path)
        if not pair_format.knows_separator(tokenizer):
            raise CheckpointError(
                path, f"turn_separator {pair_format.turn_separator!r} is not a token of this tokenizer"
            )
        limit = model.config.max_position_embeddings
        specials = pair_format.special_tokens(tokenizer)
        pair_format = with_lengths(pair_format, max_length, max_response_length, specials, limit=limit)
        if pair_format.max_length > limit:
            raise CheckpointError(path, f"max_length {pair_format.max_length} exceeds the encoder's {limit} positions")
        return cls(model, tokenizer, pair_format, device=device, dtype=dtype, max_tokens=max_tokens)

    @property
    def dim(self) -> int:
        return self.model.config.hidden_size

    @property
    def max_length(self) -> int:
        return self.pair_format.max_length

    def rep2(self, responses: Sequence[str]) -> np.ndarray:
        """rep-2 of each reply's word pieces, without special tokens and untruncated: (n,) float64
        (:func:`density_metric.repetition.rep2`). A reply's special-token text (``[SEP]``) is its word pieces, as
        where the reply is encoded for its features (:mod:`density_metric.encoding.text_ids`)."""
        if not responses:
            return np.zeros(0)
        ids = input_ids(
            self.tokenizer, list(responses), add_special_tokens=False, split_special_tokens=True, verbose=False
        )
        return rep2(ids)

    def _autocast(self):
        if self.dtype == "float32":
            return contextlib.nullcontext()
        return torch.autocast(self.device.type, dtype=DTYPES[self.dtype])

    def encode(
        self,
        contexts: Sequence[Sequence[str]],
        responses: Sequence[str],
        *,
        group: bool = True,
        batch_size: int | None = None,
        per_row: int = CANDIDATES_PER_ROW,
    ) -> Packing:
        """The encoder rows of the pairs, with each pair's cuts and reply ids
        (:func:`~density_metric.encoding.packing.pack_pairs`).

        ``group``: in the shared-context layout, pairs that share a context (its exact list of turns) read it once
        per row of up to ``min(per_row, batch_size)`` of its responses, so that ``batch_size`` bounds the pairs of a
        forward pass as it does ungrouped; each pair's feature is the one it gets alone, to float32 rounding (the
        batches differ where contexts repeat; identical where none does). False: one row per pair, in input order
        (the paper layout always reads so).
        """
        per_row = min(per_row, self.pairs_per_batch(batch_size)) if group else None
        return pack_pairs(self.pair_format, self.tokenizer, contexts, responses, per_row)

    def features(
        self,
        packing: Packing,
        batch_size: int | None = None,
        progress: bool | tqdm | None = None,
        *,
        each_batch: Callable[[np.ndarray, np.ndarray], None] | None = None,
    ) -> np.ndarray | None:
        """g(c, r) of every pair of ``packing`` (:meth:`encode`), in input order: (n, d) float32.

        The rows run in length-sorted batches of at most :attr:`max_tokens` padded tokens and at most
        ``batch_size`` candidates (pairs; None: :data:`CPU_BATCH_SIZE` on CPU, no cap on CUDA); a row of more
        candidates or tokens than that is a batch alone. On CUDA the next batch is padded (into pinned memory) by a
        worker thread while the GPU runs the current one.

        ``progress``: None draws a bar of batches from :data:`PROGRESS_MIN_PAIRS` pairs on, a bool always or
        never; a caller's own bar (a tqdm, anything with ``update(n)``) is advanced by each batch's pairs
        instead, so that one bar can span many calls (the command line's, over a file's chunks).
        ``each_batch``: called with every batch's (pair indices (b,) int64, features (b, d) float32) as it comes
        back, instead of filling the (n, d) array, and None is returned: a caller that only reduces the features
        (the Gaussian's fit) holds none of them.
        """
        batch_size = self.pairs_per_batch(batch_size)
        rows = packing.rows
        sizes, offsets = rows.sizes, rows.feature_offsets
        batches = length_sorted_batches(rows.lengths, batch_size, self.max_tokens, sizes)
        outer = progress if hasattr(progress, "update") else None
        show = outer is None and (offsets[-1] >= PROGRESS_MIN_PAIRS if progress is None else progress)
        cuda = self.device.type == "cuda"
        out = None
        if each_batch is None:
            out = np.empty((len(packing.order), self.dim), dtype=np.float32)

            def each_batch(pairs: np.ndarray, features: np.ndarray) -> None:
                out[pairs] = features

        def prepare(index: np.ndarray) -> tuple[np.ndarray, dict[str, torch.Tensor]]:
            batch = rows_to_batch(rows, self.tokenizer.pad_token_id, self.pair_format.pooling, index)
            if cuda:
                batch = {name: value.pin_memory() for name, value in batch.items()}
            return gather(packing.order, offsets[index], sizes[index]), batch

        prepared = one_ahead(prepare, batches) if cuda else map(prepare, batches)
        pending = None  # the last batch launched: its features are copied back once the next one is queued
        with torch.inference_mode(), self._autocast():
            for pairs, batch in tqdm(prepared, total=len(batches), desc="DEnsity", unit="batch", disable=not show):
                inputs = {name: value.to(self.device, non_blocking=True) for name, value in batch.items()}
                launched = pairs, batch_features(self.model, inputs).float()
                if pending is not None:  # on CUDA the GPU has the next batch queued while this waits for the last
                    each_batch(*self._copied_back(pending, outer))
                pending = launched
            if pending is not None:
                each_batch(*self._copied_back(pending, outer))
        return out

    @staticmethod
    def _copied_back(launched: tuple[np.ndarray, torch.Tensor], outer) -> tuple[np.ndarray, np.ndarray]:
        pairs, features = launched
        features = features.cpu().numpy()  # one device-to-host copy a batch; it waits for the batch to finish
        if outer is not None:
            outer.update(len(pairs))
        return pairs, features

    def pairs_per_batch(self, batch_size: int | None) -> int:
        """Most pairs a batch holds: ``batch_size``, or where it is None :data:`CPU_BATCH_SIZE` on CPU and no cap
        on CUDA (the token budget alone)."""
        if batch_size is None:
            return CPU_BATCH_SIZE if self.device.type == "cpu" else np.iinfo(np.int64).max
        return positive_int(batch_size, "batch_size")
