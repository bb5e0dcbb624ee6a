"""Each optimizer step's micro-batches, drawn and assembled one step ahead of the loop.

A micro-batch is what the model and the losses read (:class:`MicroBatch`): the padded model inputs of every
(context, candidate), the rows the contrastive term keeps, which of the density term's copies are real copies,
and the anchor's inputs. :class:`StepBatches` makes them as a function of (epoch, step) only, from the run's seeds:

- The rows: the epoch's seeded shuffle (:func:`density_train.data.examples.epoch_batches`).
- The negatives: with the authors' mix ``random:1``, the epoch's table (:func:`density_train.data.examples.epoch_negatives`,
  drawn once for the run, or once an epoch with ``--resample-negatives``) held as positions in the token store,
  so that a step gathers its rows' negatives by index. With any other mix, and for the density term's copies,
  the texts of :func:`density_train.negatives.mix.draw_labelled_negatives` and :func:`density_train.losses.density_term.draw_copies`,
  looked up in the store (a ``bland`` reply is a training gold, :mod:`density_train.negatives.bland`). Either way the draws are
  those of the text loop this replaced, row for row.
- The inputs: :meth:`density_train.loop.token_store.TokenStore.batch`, gathers over ids tokenised before the first step.
  A micro-batch with a text the store lacks (``span``, ``repeat``, ``drop``, ``shuffle``, ``grounding`` and
  ``retrieved`` negatives and copies, which are made or found afresh) is encoded from its texts instead
  (:func:`density_train.evaluation.evaluators.encode_groups`, the same rows, more slowly).

:func:`one_ahead` prepares step s + 1 in a background thread while step s runs; on CUDA its tensors are pinned
and copied without blocking (:meth:`MicroBatch.to`).
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, fields, replace

import numpy as np
import torch

from density_metric.encoding.features import one_ahead as prefetch

from ..data.examples import epoch_batches, epoch_negatives
from ..evaluation.evaluators import encode_groups
from ..losses.density_term import draw_copies
from ..negatives.bland import bland_list
from ..negatives.mix import NegativeMix
from .token_store import TokenStore, speaker_joins


@dataclass
class MicroBatch:
    """One micro-batch of ``contexts`` contexts with ``group_size`` candidates each (the gold first).

    Attributes:
        inputs: the model inputs of every (context, candidate), group after group.
        keep: (contexts * group_size,) bool, the rows the contrastive term keeps; None: all.
        real: (contexts, copies) bool, the density term's copies that are copies (not random fallbacks).
        anchor_inputs: the golds (with ``--anchor-negatives`` also the negatives) alone, for the anchor.
    """

    inputs: dict[str, torch.Tensor]
    contexts: int
    group_size: int
    keep: torch.Tensor | None = None
    real: torch.Tensor | None = None
    anchor_inputs: dict[str, torch.Tensor] | None = None

    def map(self, move: Callable[[torch.Tensor], torch.Tensor]) -> MicroBatch:
        """This micro-batch with ``move`` applied to each of its tensors."""
        changed = {}
        for field in fields(self):
            value = getattr(self, field.name)
            if isinstance(value, dict):
                changed[field.name] = {name: move(tensor) for name, tensor in value.items()}
            elif isinstance(value, torch.Tensor):
                changed[field.name] = move(value)
        return replace(self, **changed)

    def pinned(self) -> MicroBatch:
        return self.map(lambda tensor: tensor.pin_memory())

    def to(self, device: torch.device) -> MicroBatch:
        """On ``device``, copied without blocking (from pinned memory on CUDA)."""
        return self.map(lambda tensor: tensor.to(device, non_blocking=True))


def micro_batch(inputs, anchor_inputs, kinds: list[list[str]], config, has_copies: bool) -> MicroBatch:
    """A :class:`MicroBatch` of inputs built already; ``kinds``: per context the kind of each negative and copy."""
    contexts, group_size = len(kinds), 1 + len(kinds[0])
    keep = real = None
    excluded = config.excluded_kinds
    if config.contrastive_weight and excluded:
        keep = torch.from_numpy(np.array([[True, *(kind not in excluded for kind in row)] for row in kinds]).ravel())
    if has_copies:
        real = torch.from_numpy(np.array([[kind != "random" for kind in row[config.negatives :]] for row in kinds]))
    return MicroBatch(inputs, contexts, group_size, keep, real, anchor_inputs)


def text_micro_batch(tokenizer, config, contexts, candidates, kinds, anchored: int = 0) -> MicroBatch:
    """The micro-batch of texts: ``candidates`` per context (gold first), encoded by ``encode_groups``;
    ``anchored``: how many candidates of each group the anchor reads (0: no anchor)."""
    inputs = encode_groups(tokenizer, config, contexts, candidates)
    anchor = (
        encode_groups(tokenizer, config, contexts, [group[:anchored] for group in candidates]) if anchored else None
    )
    return micro_batch(inputs, anchor, kinds, config, config.density_weight > 0)


@dataclass
class EpochPlan:
    """An epoch's micro-batches of rows, and with ``random:1`` its negatives (texts, and store positions)."""

    batches: np.ndarray
    negatives: list[list[str]] | None = None
    positions: np.ndarray | None = None


class StepBatches:
    """The micro-batches of a :class:`density_train.loop.trainer.Trainer`'s steps (the module docstring says how they are made).

    ``trainer`` gives the data, recipe, tokenizer and draws (``_draw``), its process layout and
    ``anchored`` (candidates per context the density term's anchor reads, 0 without one)."""

    def __init__(self, trainer, anchored: int = 0):
        self.trainer, self.anchored = trainer, anchored
        config, data = trainer.config, trainer.train_data
        texts = [*data.pool, *data.responses, *(turn for context in data.contexts for turn in context)]
        kinds = {*trainer.mix.kinds, *(NegativeMix.parse(config.copy_mix).kinds if config.density_weight else ())}
        if "speaker" in kinds:
            texts += [
                join for context, gold in zip(data.contexts, data.responses) for join in speaker_joins(context, gold)
            ]
        if "bland" in kinds:  # training golds, so in the store already; a list given to the data may hold others
            texts += bland_list(data)
        self.store = TokenStore(trainer.tokenizer, config.pair_format, data.contexts, texts)
        self.golds = self.store.positions(data.responses)
        self._table: tuple[int, list[list[str]], np.ndarray] | None = None
        self._plans: dict = {}  # epoch -> the future of its plan
        self._ahead = ThreadPoolExecutor(max_workers=1, thread_name_prefix="next-epoch")

    def epoch(self, epoch: int) -> EpochPlan:
        """The rows (and with ``random:1`` the negatives) of ``epoch``; the next epoch's are then drawn in a
        background thread (its tables are Python loops over every training pair, seconds on a whole corpus)."""
        pending = self._plans.pop(epoch, None)
        plan = pending.result() if pending is not None else self._plan(epoch)
        if epoch + 1 < self.trainer.config.epochs:
            self._plans[epoch + 1] = self._ahead.submit(self._plan, epoch + 1)
        return plan

    def _plan(self, epoch: int) -> EpochPlan:
        trainer, config = self.trainer, self.trainer.config
        batches = epoch_batches(
            len(trainer.train_data),
            config.batch_size,
            config.seed + epoch,
            trainer.context_lengths,
            config.length_buckets,
            trainer.overlap_pool,
            config.overlap_rows,
        )
        if config.density_weight:  # the copies' fallback table of the epoch, kept on the data (draw_copies)
            draw_copies(trainer.train_data, batches[0], config, epoch)
        if not trainer.mix.random_only:
            return EpochPlan(batches)
        seed = config.negatives_seed + epoch if config.resample_negatives else config.negatives_seed
        if self._table is None or self._table[0] != seed:  # the authors' way: one table for the run
            table = epoch_negatives(
                trainer.train_data, config.negatives, config.negatives_seed, epoch, config.resample_negatives
            )
            positions = self.store.positions([text for row in table for text in row])
            self._table = seed, table, positions.reshape(len(table), config.negatives)
        return EpochPlan(batches, self._table[1], self._table[2])

    def step(self, plan: EpochPlan, epoch: int, step: int, global_step: int) -> list[MicroBatch]:
        """The micro-batches of ``step`` of ``epoch`` on this process; ``global_step``: steps taken before it."""
        trainer, config = self.trainer, self.trainer.config
        world, rank = trainer.accelerator.num_processes, trainer.accelerator.process_index
        out = []
        for micro in range(config.grad_accum):
            rows = plan.batches[(step * world + rank) * config.grad_accum + micro]
            out.append(self._micro_batch(plan, rows, epoch, global_step))
        return out

    def _micro_batch(self, plan: EpochPlan, rows: np.ndarray, epoch: int, global_step: int) -> MicroBatch:
        trainer, config, data = self.trainer, self.trainer.config, self.trainer.train_data
        if plan.negatives is not None:
            drawn = {int(row): [("random", text) for text in plan.negatives[row]] for row in rows}
        else:
            hard = global_step >= config.hard_negatives_after
            drawn = trainer._draw(rows, epoch, trainer.mix if hard else trainer.random_mix)
        if config.density_weight:
            for row, copies in draw_copies(data, rows, config, epoch).items():
                drawn[row] = [*drawn[row], *copies]
        kinds = [[kind for kind, _ in drawn[int(row)]] for row in rows]
        if plan.positions is not None and not config.density_weight:  # the paper's recipe: no text at all
            positions = np.concatenate([self.golds[rows, None], plan.positions[rows]], axis=1)
        else:
            texts = [text for row in rows for text in (data.responses[row], *(text for _, text in drawn[int(row)]))]
            positions = self.store.positions(texts)
        if positions is None:  # a text made afresh: the slower way, from the texts
            candidates = [[data.responses[row], *(text for _, text in drawn[int(row)])] for row in rows]
            contexts = [data.contexts[row] for row in rows]
            return text_micro_batch(trainer.tokenizer, config, contexts, candidates, kinds, self.anchored)
        positions = positions.reshape(len(rows), -1)
        inputs = self.store.batch(rows, positions, config.pad_multiple)
        anchor = self.store.batch(rows, positions[:, : self.anchored]) if self.anchored else None  # not compiled
        return micro_batch(inputs, anchor, kinds, config, config.density_weight > 0)


def one_ahead(make: Callable, items: Iterable, pin: bool = False, gate: threading.Event | None = None) -> Iterator:
    """``(item, make(item))`` for each of ``items``, ``make`` of the next item running in a background thread
    while the caller works on the current one (:func:`density_metric.encoding.features.one_ahead`, whose ``gate``
    the loop opens just before its backward pass); ``pin``: ``make``'s micro-batches come back in pinned memory."""
    items = list(items)

    def made(item):
        result = make(item)
        return [micro.pinned() for micro in result] if pin else result

    ahead = prefetch(made, items, gate)
    try:
        yield from zip(items, ahead)
    finally:  # the batches closed early: so is the worker, and its gate opened
        ahead.close()
