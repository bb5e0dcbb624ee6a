"""Scoring: the stateful :class:`DensityScorer` and the one-call :func:`score`."""

from __future__ import annotations

import contextlib
import logging
import numbers
from collections.abc import Sequence
from typing import Any

import numpy as np

from .checkpoint.sources import resolve_checkpoint
from .encoding.features import PROGRESS_MIN_PAIRS, Encoder
from .errors import positive_int
from .gaussian import calibrate
from .io.inputs import as_context, check_dialogues, check_pairs, dialogue_pairs
from .process_switch import ProcessSwitch
from .results import DensityResult, score_columns, score_features
from .row_flags import FLOOR_POLICY, floor_distances, packing_flags, reply_flags, row_flags, warn_flags
from .signature import Signature

logger = logging.getLogger(__name__)

DIALOGUE_AGGREGATES = ("mean", "rms")


class DensityScorer:
    """Keeps a DEnsity checkpoint loaded and scores (context, response) pairs.

    Args:
        checkpoint: ``None`` for the bundled default, a local directory, or a Hub repo id.
        revision: Hub revision (a commit hash pins the scores). Ignored for directories.
        device: ``"auto"`` (CUDA if present, else CPU), ``"cpu"``, ``"cuda"``, ``"cuda:1"``...
        dtype: autocast dtype: ``"auto"`` (bfloat16 on CUDA, float32 on CPU, where scores then do not
            depend on the batch), ``"float32"``, ``"bfloat16"`` (about 2x faster on a CPU with native bf16,
            scores within a few 1e-2 relative across batchings; ``benchmarks/speed_cpu_release.json``) or ``"float16"``
            (CUDA only).
        batch_size: most pairs per forward pass; ``None`` (the default): 64 on CPU, and on CUDA as many as
            ``max_tokens`` allows.
        max_tokens: most padded tokens per forward pass (rows x longest row); ``None``: 1,024 on CPU (larger
            batches of long pairs ran slower there), 16,384 on CUDA (:mod:`density_metric.encoding.features`).
        max_length: most tokens per pair (default: the checkpoint's; 256 for the bundled one). Longer input
            loses its oldest context tokens first.
        max_response_length: most reply tokens read (default: the checkpoint's; 64 for the bundled one); the rest
            of a longer reply is not read, and its row is flagged ``truncated_reply``. Given alone, the context
            keeps its budget, so a shorter reply scores as with the checkpoint's cap; the largest value is what the
            encoder's positions leave beside the context (320 for the bundled model;
            :mod:`density_metric.encoding.length_options`).
        progress: progress bar: ``None`` shows it for 1,024 pairs or more; a caller's own tqdm bar is
            advanced by each batch's pairs instead (one bar over many calls, as the command line's).
        cache_dir, local_files_only: passed to the Hub download.

    One scorer may serve several threads at once (the demo's requests): its calls to the tokenizer, whose options
    are set at every call, take turns (:func:`density_metric.encoding.text_ids.input_ids`), and its forward passes
    change nothing.

    Example:
        >>> scorer = DensityScorer()  # doctest: +SKIP
        >>> scorer.score([["How are you?"]], ["Fine, thanks. And you?"]).scores  # doctest: +SKIP
    """

    def __init__(
        self,
        checkpoint: str | None = None,
        revision: str | None = None,
        *,
        device: str | None = "auto",
        dtype: str | None = "auto",
        batch_size: int | None = None,
        max_tokens: int | None = None,
        max_length: int | None = None,
        max_response_length: int | None = None,
        progress: bool | None = None,
        cache_dir: str | None = None,
        local_files_only: bool | None = None,
    ):
        if batch_size is not None:
            positive_int(batch_size, "batch_size")
        if max_length is not None and (isinstance(max_length, bool) or not isinstance(max_length, numbers.Integral)):
            raise ValueError(f"max_length must be an integer number of tokens or None, got {max_length!r}")
        self.checkpoint = resolve_checkpoint(
            checkpoint, revision, cache_dir=cache_dir, local_files_only=local_files_only
        )
        self.encoder = Encoder.load(
            self.checkpoint.encoder_path,
            self.checkpoint.config.pair_format,
            device=device,
            dtype=dtype,
            max_length=max_length,
            max_response_length=max_response_length,
            max_tokens=max_tokens,
        )
        self.stats = self.checkpoint.stats
        self.batch_size = None if batch_size is None else int(batch_size)
        self.progress = progress

    @property
    def signature(self) -> str:
        """Reproducibility signature, e.g. ``density_metric=0.1.0|checkpoint=org/name@3f2a...|max_length=256|...``;
        ``floor=v2`` names the policy for replies without a word (:mod:`density_metric.row_flags`), and
        ``specials=text`` says that special-token text in a turn or reply (``[SEP]``) is read as text, not as the
        token (:mod:`density_metric.encoding.text_ids`); a signature without it read such text as the token, and scored
        every other pair alike. ``max_response_length=N`` follows ``max_length`` where the reply's cap is not the
        checkpoint's (``max_response_length`` or a short ``max_length`` changed it). Written, read back and compared
        by :class:`density_metric.signature.Signature`."""
        cap = self.encoder.pair_format.max_response_length
        return Signature.scorer(
            f"{self.checkpoint.source}@{self.checkpoint.revision}",
            self.encoder.max_length,
            None if cap == self.checkpoint.config.pair_format.max_response_length else cap,
            self.encoder.dtype,
            FLOOR_POLICY,
        ).format()

    # ------------------------------------------------------------------ pairs

    def features_and_flags(
        self, contexts: list[list[str]], responses: list[str], *, progress: bool | None = None
    ) -> tuple[np.ndarray, list[list[str]]]:
        """:meth:`features` (n, d) and :meth:`flags` (n lists) of checked pairs, from one packing of the pairs
        (``Encoder.encode``): the flags read the replies' tokens and the cuts of the rows the features were computed
        from. ``progress``: the scorer's own by default.

        In one pass, on every device: scoring in chunks, with the next chunk packed on a thread while the GPU ran
        this one, was slower on an H200 (12,449 pairs/s at chunks of 2,048 against 16,824 in one pass;
        ``benchmarks/gpu_chunks_h200.json``): smaller chunks fill fewer, shorter batches.
        """
        packing = self.encoder.encode(contexts, responses, batch_size=self.batch_size)
        features = self.encoder.features(packing, self.batch_size, self.progress if progress is None else progress)
        return features, packing_flags(packing, contexts, responses, self.encoder.tokenizer.unk_token_id)

    def features(self, contexts, responses) -> np.ndarray:
        """g(c, r) for checked input: (n, d) float32.

        Pairs that share a context are scored together (``Encoder.encode``'s grouping): with a
        shared-context checkpoint each distinct context is read once per 32 of its responses, as in
        :meth:`rank`, with the scores of scoring each pair alone; the paper layout reads every pair.
        """
        packing = self.encoder.encode(contexts, responses, batch_size=self.batch_size)
        return self.encoder.features(packing, self.batch_size, self.progress)

    def distances(
        self,
        contexts: Sequence,
        responses: Sequence,
        *,
        first_row: int = 0,
        allow_empty: bool = False,
        fields: tuple[str, str] = ("contexts", "responses"),
    ) -> np.ndarray:
        """The score's distance of every pair (:meth:`distances_of`: Mahalanobis, with the repetition term where
        the checkpoint has one, at least the floor for an empty, unreadable or punctuation-only reply): (n,) float64. ``first_row``
        and ``fields`` name bad rows in errors (as :func:`~density_metric.io.inputs.check_pairs`)."""
        contexts, responses = check_pairs(
            contexts, responses, first_row=first_row, allow_empty=allow_empty, fields=fields
        )
        if not responses:
            return np.zeros(0)
        return self.distances_of(self.features(contexts, responses), responses)

    def distances_of(
        self, features: np.ndarray, responses: Sequence[str], flags: Sequence[Sequence[str]] | None = None
    ) -> np.ndarray:
        """The score's distance from already computed features (n, d) of checked pairs and their replies:
        the Mahalanobis distance, with the repetition term where the checkpoint has one
        (:mod:`density_metric.repetition`), and at least the floor for an empty, unreadable or punctuation-only
        reply (:data:`~density_metric.row_flags.FLOORED`; ``flags``: the rows' flags, if already known)."""
        rep2 = self.encoder.rep2(responses) if self.stats.repetition is not None else None
        if flags is None:
            flags = reply_flags(self.encoder.tokenizer, responses)
        return floor_distances(self.stats.distances(features, rep2), flags, self.stats.quantiles)

    def flags(self, contexts: Sequence[Sequence[str]], responses: Sequence[str]) -> list[list[str]]:
        """Per checked pair, the flags that say its score means little (``empty``, ``unreadable``,
        ``punctuation``, ``non-latin``, ``truncated``: :mod:`density_metric.row_flags`): n lists, most of them empty."""
        return row_flags(self.encoder.pair_format, self.encoder.tokenizer, contexts, responses)

    def classifier_scores(self, contexts: Sequence, responses: Sequence) -> np.ndarray:
        """The response-selection score f(c, r) = w . g(c, r) + b of a trained checkpoint: (n,) float64.

        A baseline, not DEnsity: the paper shows it is overconfident on unseen responses.
        """
        contexts, responses = check_pairs(contexts, responses)
        return self.classifier_from_features(self.features(contexts, responses))

    def euclidean_scores(self, contexts: Sequence, responses: Sequence) -> np.ndarray:
        """Minus the Euclidean distance of g(c, r) to the Gaussian's mean, -||g - mu||: (n,) float64.

        The paper's Table 2 ablation (Mahalanobis against Euclidean against the classifier), not DEnsity: raw, not
        calibrated and without the floor. From features already computed: ``-self.stats.euclidean(features)``.
        """
        contexts, responses = check_pairs(contexts, responses)
        return -self.stats.euclidean(self.features(contexts, responses))

    def classifier_from_features(self, features: np.ndarray) -> np.ndarray:
        """f(c, r) from already computed features (n, d): (n,) float64."""
        if self.checkpoint.head is None:
            raise ValueError(
                f"checkpoint {self.checkpoint.source} has no classification head (density_head.safetensors)"
            )
        weight, bias = self.checkpoint.head
        return np.asarray(features, dtype=np.float64) @ weight + bias

    def rank(self, context: Sequence[str] | str, candidates: Sequence[str]) -> DensityResult:
        """Score many candidate responses to one context; the scores equal :meth:`score`'s.

        With a shared-context checkpoint the context is read once for up to 32 candidates
        (``Encoder.encode``'s grouping), so ranking k candidates costs little more than one
        pair; with the paper's layout every candidate is its own pair. :meth:`score` groups
        the pairs of a repeated context the same way.

        Args:
            context: the turns before the responses, oldest first (a string is one turn).
            candidates: k strings.

        Returns:
            The k candidates' scores, in input order; ``np.argsort(-result.scores)`` ranks them.
        """
        if isinstance(candidates, (str, bytes)) or not hasattr(candidates, "__len__"):
            raise ValueError(f"candidates must be a list of strings, got {type(candidates).__name__}")
        if len(candidates) == 0:
            raise ValueError("candidates is empty; give at least one candidate")
        context = as_context(context, None, "context")
        _, responses = check_pairs([context] * len(candidates), candidates, fields=("context", "candidates"))
        features, flags = self.features_and_flags([context] * len(responses), responses, progress=False)
        warn_flags(flags)
        return self.result(self.distances_of(features, responses, flags), features, flags)

    def result(
        self,
        distances: np.ndarray,
        features: np.ndarray | None = None,
        flags: Sequence[Sequence[str]] | None = None,
    ) -> DensityResult:
        """Raw and calibrated scores from distances (:meth:`distances_of`'s, floored), the predicted ratings if the
        checkpoint has a rating head (which needs the ``features`` too), and the rows' ``flags`` (None: unknown,
        given as none)."""
        return DensityResult(
            -distances,
            calibrate(distances, self.stats.quantiles),
            self.signature,
            self.ratings(distances, features),
            flags=None if flags is None else [list(row) for row in flags],
        )

    def ratings(self, distances: np.ndarray, features: np.ndarray | None) -> np.ndarray | None:
        """Predicted human ratings from the checkpoint's rating head; None without one (or features)."""
        rating = self.checkpoint.rating
        if rating is None or features is None:
            return None
        classifier = self.classifier_from_features(features) if rating.uses_classifier else None
        return rating.predict(distances, classifier, features)

    def score(self, contexts: Sequence, responses: Sequence, *, warn: bool = True) -> DensityResult:
        """Score responses against their contexts.

        Empty, blank and unreadable replies get the floor score, below every held-out human reply
        (:mod:`density_metric.row_flags`); ``DensityResult.flags`` says which rows' scores mean little.

        Args:
            contexts: n rows, each a list of turns (oldest first) or one string (one turn).
            responses: n strings.
            warn: log one warning with the counts of flagged rows, if any (callers that score a run in
                chunks pass False and warn once for the run).

        Raises:
            ValueError: naming the field and row of a bad value, or for mismatched lengths.
        """
        result = self._score_checked(*check_pairs(contexts, responses))
        if warn:
            warn_flags(result.flags)
        return result

    def _score_checked(self, contexts: list[list[str]], responses: list[str]) -> DensityResult:
        """:meth:`score` of pairs that ``check_pairs`` has checked (the ratings too, which need the features),
        without the warning."""
        features, flags = self.features_and_flags(contexts, responses)
        return self.result(self.distances_of(features, responses, flags), features, flags)

    def compare(self, contexts: Sequence, systems: dict[str, Sequence[str]], **options: Any):
        """Score several systems' responses to the same contexts and test which is better.

        Args:
            contexts: n rows, each a list of turns (oldest first) or one string.
            systems: ``{name: n responses}``, at least 2.
            options: :func:`density_metric.compare`'s: ``test`` (``"ar"``, default, or ``"bs"``),
                ``resamples`` (1,000), ``trials`` (10,000), ``seed`` (12345), ``baseline`` (a system's name:
                each other system is tested against it alone; default None, every pair).

        Returns:
            A :class:`~density_metric.ComparisonResult`: per system the mean score, its
            95 % interval, the mean calibrated score and the degenerate and truncated rows; per pair tested the
            difference, its interval and p-values, raw and Holm-corrected over the pairs tested.
        """
        from .comparison.systems import compare_responses

        return compare_responses(self, contexts, systems, **options)

    # ------------------------------------------------------------------ dialogues

    def score_dialogues(self, dialogues: Sequence[Sequence[str]], aggregate: str = "mean") -> list[dict[str, Any]]:
        """Dialogue-level DEnsity: every turn from the second on is scored against its prefix.

        Args:
            dialogues: m dialogues, each a list of at least 2 turns.
            aggregate: ``"mean"`` (the paper's text: mean of the turn scores) or
                ``"rms"`` (the authors' code: ``-sqrt(mean(d^2))``).

        Returns:
            One dict per dialogue: ``score`` (the aggregate), ``turn_scores``, ``turn_calibrated`` and
            ``turn_flags`` (one per turn from the second on; :meth:`flags`). An empty, unreadable or
            punctuation-only turn scores the floor, which pulls its dialogue's score down; one warning per call counts the
            flagged turns.
        """
        if aggregate not in DIALOGUE_AGGREGATES:
            raise ValueError(f"aggregate must be one of {DIALOGUE_AGGREGATES}, got {aggregate!r}")
        dialogues = check_dialogues(dialogues)
        contexts, responses = check_pairs(*dialogue_pairs(dialogues))
        features, flags = self.features_and_flags(contexts, responses)
        distances = self.distances_of(features, responses, flags)
        warn_flags(flags)
        results, start = [], 0
        for turns in dialogues:
            turn_distances = distances[start : start + len(turns) - 1]
            turn_flags = flags[start : start + len(turns) - 1]
            start += len(turns) - 1
            results.append(
                {
                    "score": dialogue_score(turn_distances, aggregate),
                    "turn_scores": (-turn_distances).tolist(),
                    "turn_calibrated": calibrate(turn_distances, self.stats.quantiles).tolist(),
                    "turn_flags": turn_flags,
                }
            )
        return results

    def score_dialogue(self, turns: Sequence[str], aggregate: str = "mean") -> dict[str, Any]:
        """Dialogue-level DEnsity of one dialogue; see :meth:`score_dialogues`."""
        return self.score_dialogues([turns], aggregate)[0]

    # ------------------------------------------------------------------ datasets

    def score_dataset(
        self,
        dataset,
        context_column: str = "context",
        response_column: str = "response",
        output_column: str = "density",
        chunk_size: int = 1024,
    ):
        """Add ``output_column`` (raw score), ``{output_column}_calibrated``, ``{output_column}_flags`` (the rows'
        :attr:`DensityResult.flags`) and ``{output_column}_signature`` (:attr:`signature`; a rating head adds
        ``{output_column}_rating``) to a ``datasets`` dataset. A ``Dataset`` logs one warning with the counts of
        flagged rows once scored; an ``IterableDataset``, scored as it is read, none.

        Rows are read and scored ``chunk_size`` at a time through ``Dataset.map``, so
        memory does not grow with the number of rows; an ``IterableDataset`` is scored
        lazily as it is iterated. ``Dataset.map``'s progress bar follows ``progress`` (None: from 1,024 rows).

        Raises:
            ValueError: for a ``DatasetDict`` (pass one split: ``ds["train"]``); anything else that is not a
                ``datasets`` dataset (a pandas DataFrame: ``datasets.Dataset.from_pandas(df)``); a missing column
                (for an ``IterableDataset`` whose columns are unknown until it is read: when it is
                iterated); a bad row, named by its column and dataset row, e.g. ``response[21]``.
        """
        import datasets

        if isinstance(dataset, (datasets.DatasetDict, datasets.IterableDatasetDict)):
            splits = list(dataset)
            example = f"dataset[{splits[0]!r}]" if splits else "dataset[split]"
            raise ValueError(
                f"score_dataset scores one split; got a {type(dataset).__name__} with splits "
                f"{', '.join(map(repr, splits))}: pass one, e.g. {example}"
            )
        if not isinstance(dataset, (datasets.Dataset, datasets.IterableDataset)):
            kind = type(dataset).__name__
            hint = "datasets.Dataset.from_pandas(dataset)" if kind == "DataFrame" else "datasets.Dataset.from_dict(...)"
            raise ValueError(
                f"dataset must be a datasets.Dataset or IterableDataset, got {kind}: pass {hint}, or score the "
                f"columns as lists with score(contexts, responses)"
            )
        columns = (context_column, response_column)
        if dataset.column_names is not None:
            _check_columns(dataset.column_names, columns)
        score_chunk = _ScoreDatasetChunk(self, context_column, response_column, output_column)
        kwargs = dict(batched=True, batch_size=chunk_size, with_indices=True)
        if dataset.features is not None:
            kwargs["features"] = score_features(dataset.features, output_column, self.checkpoint.rating is not None)
        if isinstance(dataset, datasets.IterableDataset):
            return dataset.map(score_chunk, **kwargs)
        # The scorer's rule (progress=None: a bar from PROGRESS_MIN_PAIRS rows on). Dataset.map has no switch of
        # its own; datasets' public global one is turned off for this call only, and put back as it was.
        show = len(dataset) >= PROGRESS_MIN_PAIRS if self.progress is None else self.progress
        with contextlib.nullcontext() if show else no_dataset_bars():
            scored = dataset.map(score_chunk, desc="DEnsity", **kwargs)
        flags = scored.with_format("arrow")[f"{output_column}_flags"]
        warn_flags(row for chunk in flags.chunks for row in chunk.to_pylist())
        return scored


def _hide_dataset_bars() -> bool:
    import datasets

    hidden = datasets.are_progress_bars_disabled()
    datasets.disable_progress_bars()
    return hidden


def _show_dataset_bars(hidden: bool) -> None:
    import datasets

    if not hidden:
        datasets.enable_progress_bars()


# datasets' progress bars, off while any thread's score_dataset needs them off (ProcessSwitch).
no_dataset_bars = ProcessSwitch(_hide_dataset_bars, _show_dataset_bars)


def dialogue_score(turn_distances: np.ndarray, aggregate: str) -> float:
    """A dialogue's score from its scored turns' distances: minus their mean (``"mean"``) or minus their root mean
    square (``"rms"``); see :meth:`DensityScorer.score_dialogues`."""
    if aggregate == "mean":
        return float(-turn_distances.mean())
    return float(-np.sqrt(np.mean(turn_distances**2)))


def _check_columns(names: Sequence[str], columns: Sequence[str]) -> None:
    """A ValueError naming the first of ``columns`` that a dataset with columns ``names`` lacks."""
    for column in columns:
        if column not in names:
            raise ValueError(f"dataset has no column {column!r}; columns: {list(names)}")


class _ScoreDatasetChunk:
    """The ``Dataset.map`` function of :meth:`DensityScorer.score_dataset`.

    ``datasets`` names the cached result after a hash of the pickled function. Pickled, this
    is only the scorer's signature and the column names, so the hash is cheap (the model is
    not hashed), stable across sessions, and changes whenever the checkpoint or options do.
    """

    # No private attribute of datasets is read. Dataset.map(new_fingerprint=...) is public, but a correct one must
    # derive from the input's fingerprint, which only the private Dataset._fingerprint holds; so datasets derives it
    # itself, from the input's and a hash of this transform, taken by pickling it (its documented caching), and
    # __getstate__, Python's pickle protocol, is what decides what that hash covers.

    def __init__(self, scorer: DensityScorer, context_column: str, response_column: str, output_column: str):
        self.scorer, self.columns = scorer, (context_column, response_column, output_column)

    def __getstate__(self) -> dict:
        return {"signature": self.scorer.signature, "columns": self.columns}

    def __call__(self, batch, indices):
        context_column, response_column, output_column = self.columns
        _check_columns(list(batch), (context_column, response_column))  # an IterableDataset's, known only now

        # The same step as for files (results.score_columns); errors name the column and the dataset row.
        def score_pairs(contexts, responses):
            checked = check_pairs(contexts, responses, first_row=indices[0], fields=(context_column, response_column))
            return self.scorer._score_checked(*checked)

        return score_columns(score_pairs, batch[context_column], batch[response_column], field=output_column)


def score(contexts: Sequence, responses: Sequence, checkpoint: str | None = None, **kwargs) -> DensityResult:
    """One-call scoring: load a checkpoint (see :class:`DensityScorer`) and score the pairs."""
    return DensityScorer(checkpoint, **kwargs).score(contexts, responses)
