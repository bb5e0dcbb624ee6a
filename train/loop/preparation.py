"""What :class:`density_train.loop.trainer.Trainer` prepares before its first step, as functions of the recipe: the pairs the run
reads (:func:`run_pairs`, :func:`lines_kept`), the model it starts from (:func:`load_model`), the golds that
``--overlap-rows`` draws (:func:`overlap_pool`) and the retrieval index of a split (:func:`retrieval_index`).
"""

from __future__ import annotations

import logging
from pathlib import Path

import numpy as np
import torch

from ..arguments import checkpoint_folder, encoder_folder
from ..config.recipe import TrainConfig
from ..data.examples import SelectionData
from ..data.grounding import GroundingSpec, benchmark_sentences, ground_pairs
from ..evaluation.grounding_validation import USES_LINES, line_use
from ..evaluation.validation import OVERLAP_MIN, last_turn_overlap
from ..model import DensityModel, set_attention_dropout, set_dropout

logger = logging.getLogger(__name__)


def run_pairs(config: TrainConfig, train: SelectionData, valid: SelectionData) -> tuple[SelectionData, SelectionData]:
    """The pairs the run reads: the first ``valid_limit`` validation pairs, and with ``--grounding`` the training
    contexts grounded (before the data's fingerprint: a resumed run grounds the same contexts again)."""
    if config.valid_limit:
        valid = valid.select(range(min(config.valid_limit, len(valid))))
    spec = GroundingSpec.parse(config.grounding)
    if spec is not None:
        train, grounded = ground_pairs(train, spec, config.seed, benchmark_sentences(config.grounding_exclude))
        logger.info("--grounding %s: %d of %d training contexts have grounding lines", spec, grounded, len(train))
    return train, valid


def lines_kept(config: TrainConfig, tokenizer, data: SelectionData) -> SelectionData:
    """``data`` with its contexts cut by :meth:`PairFormat.keep_lines`: a pair's grounding lines are the turns
    before its dialogue's (``len(context) - turn_index``; none without dialogues)."""
    lines = data.line_counts()
    if lines is None:
        return data
    kept = data.with_contexts(config.pair_format.keep_lines(tokenizer, data.contexts, lines))
    changed = sum(new != old for new, old in zip(kept.contexts, data.contexts))
    logger.info("--keep-lines: %d of %d contexts drop old turns to keep their grounding lines", changed, len(data))
    return kept


def load_model(config: TrainConfig, state_dir: Path | None) -> tuple[DensityModel, object, str | Path]:
    """The model and its tokenizer (from ``state_dir`` when resuming, else the start), seeded by the recipe and
    with its dropout, and the start's folder (``--init-from``'s or ``--backbone``'s), which the density term's
    anchor reads; a ValueError names the folder or flag of a model that cannot be loaded."""
    torch.manual_seed(config.seed)
    flag = config.start_flag
    start = checkpoint_folder(config.init_from, flag) if config.init_from else encoder_folder(config.backbone, flag)
    try:
        model, tokenizer = DensityModel.load(state_dir or start, config.pair_format, config.feature_only_last_layer)
    except OSError as err:  # a Hub id that cannot be fetched, a folder without the model's files
        where = state_dir or f"{flag} {start}"
        raise ValueError(f"{where}: cannot load the model ({str(err).splitlines()[0]})") from None
    if config.attention_dropout is not None:
        set_attention_dropout(model.encoder, config.attention_dropout)
    if not config.dropout:
        set_dropout(model.encoder, 0.0)
    if config.compile:  # in place: the module, its parameters and their names stay as they are
        mode = {"mode": config.compile_mode} if config.compile == "inductor" else {}  # the others take no mode
        model.encoder.compile(backend=config.compile, dynamic=True, **mode)
    return model, tokenizer, start


def overlap_pool(config: TrainConfig, train: SelectionData) -> np.ndarray | None:
    """The rows of the training golds that ``--overlap-rows`` draws from (None without it): those using their
    grounding lines (``--overlap-source lines``) or reusing the last turn's words; a ValueError where none does."""
    if not config.overlap_rows:
        return None
    if config.overlap_source == "lines":  # golds that use their persona or knowledge
        counts = train.line_counts() or [0] * len(train)
        pool = np.flatnonzero(line_use(train.contexts, train.responses, counts) >= USES_LINES)
        if not len(pool):
            raise ValueError(f"--overlap-source lines: no training gold uses its grounding lines ({USES_LINES:g})")
        return pool
    # golds that reuse the last turn's words, as people's good replies often do
    pool = np.flatnonzero(last_turn_overlap(train.contexts, train.responses) >= OVERLAP_MIN)
    if not len(pool):
        raise ValueError(f"--overlap-rows: no training gold shares {OVERLAP_MIN:.0%} of its words with its last turn")
    return pool


def retrieval_index(config: TrainConfig, pool, split: str = "train"):
    """The retrieval index of ``pool``: ``config.retrieval_index`` for train, the file beside it for another split
    (``density_train.negatives.retrieval.split_path``); a missing file says the command that builds it."""
    from ..negatives.retrieval import RetrievalIndex, split_path

    if not config.retrieval_index:
        raise ValueError("negative kind 'retrieved' needs --retrieval-index (python -m train retrieval-index)")
    path = split_path(config.retrieval_index, split)
    if not path.is_file():
        raise ValueError(f"{path}: no retrieval index; build it with python -m train retrieval-index (--split {split})")
    return RetrievalIndex.load(path, pool)
