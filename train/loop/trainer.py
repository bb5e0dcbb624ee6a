"""The training loop: response selection + supervised contrastive loss, resumable, multi-process.

Layout of ``out_dir``::

    state/        the latest state: model, tokenizer, head, optimizer.safetensors,
                  rng.safetensors, trainer_state.json (epoch, step, scheduler)
    best/         model, tokenizer and head at the evaluation with the best selection value (train/evaluation/model_selection.py)
    log.jsonl     one line per optimizer step (loss, ce, contrastive) and per evaluation; the steps' lines are
                  written in blocks (LOG_BLOCK steps, and at every save, evaluation and the end), their losses kept
                  on the device until then

A step does no work over texts: :mod:`density_train.loop.step_batches` draws and assembles the next step's micro-batches from
ids tokenised once (:mod:`density_train.loop.token_store`) in a background thread while this one runs.

A run interrupted at any step (even during a save) restarts from ``state/`` (:mod:`density_train.loop.state`) and continues with
the same data order and negatives; ``log.jsonl`` is first cut back to the saved step, so the
log of a resumed run equals an uninterrupted one's. The run must be resumed with the recipe it
began with (:func:`density_train.config.recipe.check_resumable`). Nothing is pickled: tensors are safetensors,
the rest JSON.

Several processes (``accelerate launch``) share each optimizer step: with P processes and
A accumulation steps, step s, process p, micro-step a reads micro-batch (s * P + p) * A + a
of the epoch's shuffled order, so P processes and one process with A = P see the same
micro-batches per step and take the same step.
"""

from __future__ import annotations

import contextlib
import json
import logging
import threading
import time
from collections.abc import Sequence
from dataclasses import asdict
from pathlib import Path

import numpy as np
import torch
from safetensors.torch import load_file, save_file
from tqdm.auto import tqdm

from density_metric.encoding.device import cpu_has_native_bf16

from ..config.recipe import TrainConfig, check_contexts_per_step, check_resumable, scaled_lr
from ..data.examples import SelectionData
from ..evaluation.evaluators import GaussianFits, ModelOutputs, build_evaluators, grounding_sets, validation_kinds
from ..evaluation.grounding_validation import GroundingSet
from ..evaluation.model_selection import check_selection, select
from ..evaluation.validation import DevJudgments
from ..losses.density_term import BANK_FILE, DensityTerm, start_density_term
from ..losses.response_selection import selection_loss, supervised_contrastive_loss
from ..negatives.bland import BLAND_FILE, require_bland_list, write_bland_list
from ..negatives.mix import NegativeMix, draw_labelled_negatives, validation_candidates
from .preparation import lines_kept, load_model, overlap_pool, retrieval_index, run_pairs
from .run_log import truncate_log
from .state import (
    STATE_FILE,
    check_same_data,
    check_same_start,
    data_summary,
    load_optimizer,
    read_trainer_state,
    recover_state,
    replace_state,
    save_optimizer,
    start_summary,
    write_trainer_state,
)
from .step_batches import MicroBatch, StepBatches, one_ahead, text_micro_batch

logger = logging.getLogger(__name__)
LOG_BLOCK = 100  # steps whose log lines wait on the device before they are written (and at every save and evaluation)


def resolve_mixed_precision(setting: str) -> str:
    """Accelerate's mixed_precision for ``setting``; "auto": bf16 on CUDA and on CPUs with native
    bf16 (1.6x per training step here), else none. Training does not need the scorer's
    batch-invariant float32: a step's batch is fixed by the seed."""
    if setting != "auto":
        return setting
    return "bf16" if torch.cuda.is_available() or cpu_has_native_bf16() else "no"


class Trainer:
    """Trains a :class:`DensityModel` on gold pairs with random negatives; evaluates it with the evaluators it holds
    (:mod:`density_train.evaluation.evaluators`) and keeps the best model in best/ (:mod:`density_train.evaluation.model_selection`).

    ``__init__`` takes its steps in an order that matters: the data is grounded before its fingerprint, the
    contexts cut (``--keep-lines``) before anything reads them, and the RNG restored last."""

    def __init__(
        self,
        config: TrainConfig,
        train: SelectionData,
        valid: SelectionData,
        out_dir: Path,
        accelerator=None,
        dev: DevJudgments | None = None,
        grounding_sets: Sequence[GroundingSet] = (),
    ):
        from accelerate import Accelerator

        self.config, self.out_dir = config, Path(out_dir)
        self.train_data, self.valid_data = run_pairs(config, train, valid)
        self.accelerator = accelerator or Accelerator(mixed_precision=resolve_mixed_precision(config.mixed_precision))
        state_dir, saved = self._saved_state(dev)
        model, self.tokenizer, start = load_model(config, state_dir if saved is not None else None)
        self.data_summary.update(start_summary(start))
        if saved is not None:
            check_same_start(saved, self.data_summary, str(state_dir / STATE_FILE), config.start_flag, start)
        self._cut_contexts()
        optimizer = self._schedule(model, state_dir, saved)
        self.model, self.optimizer = self.accelerator.prepare(model, optimizer)
        self.outputs = ModelOutputs(self.model, self.tokenizer, config, self.accelerator)
        kinds = self._negative_sources()
        kinds |= self._start_evaluators(dev, grounding_sets)
        self.density_term: DensityTerm | None = None
        if config.density_weight:
            bank = state_dir / BANK_FILE if saved is not None else None
            hidden = model.encoder.config.hidden_size
            self.density_term = start_density_term(
                config, start, self._gold_features, len(self.train_data), hidden, self.accelerator.device, bank
            )
        self._start_steps()
        if saved is not None:  # last, since loading the density term's anchor draws from the RNG (its head's init)
            torch.set_rng_state(load_file(str(state_dir / "rng.safetensors"))[f"rank{self.accelerator.process_index}"])
        self.out_dir.mkdir(parents=True, exist_ok=True)
        if self.accelerator.is_main_process and "bland" in kinds:
            write_bland_list(self.out_dir / BLAND_FILE, self.train_data)

    def _saved_state(self, dev: DevJudgments | None) -> tuple[Path, dict | None]:
        """The state folder (recovered from an interrupted save; ``out_dir`` itself is made last, once every check
        passed) and its trainer state, if any, checked against this recipe and data."""
        state_dir = recover_state(self.out_dir)
        saved = read_trainer_state(state_dir) if (state_dir / STATE_FILE).is_file() else None
        self.data_summary = data_summary(self.train_data, self.valid_data, dev)
        if saved is not None:
            check_resumable(saved["config"], self.config, str(state_dir / STATE_FILE))
            check_same_data(saved, self.data_summary, str(state_dir / STATE_FILE))
        return state_dir, saved

    def _cut_contexts(self) -> None:
        """``--keep-lines``' cut of every context, before anything reads them (overlap pool, lengths, validation
        kinds, fits); then what the steps draw from: ``--overlap-rows``' pool, the contexts' lengths."""
        config = self.config
        if config.keep_lines:
            kept = (lines_kept(config, self.tokenizer, data) for data in (self.train_data, self.valid_data))
            self.train_data, self.valid_data = kept
        self.overlap_pool = overlap_pool(config, self.train_data)
        self.context_lengths = None
        if config.length_buckets:
            self.context_lengths = config.pair_format.context_lengths(self.tokenizer, self.train_data.contexts)

    def _schedule(self, model, state_dir: Path, saved: dict | None) -> torch.optim.AdamW:
        """The optimizer, the learning-rate schedule and the run's position: the saved ones when resuming (the
        log then cut back to the saved step, whose later steps are taken again)."""
        from transformers import get_linear_schedule_with_warmup

        optimizer = self._optimizer(model)
        self.steps_per_epoch = self._steps_per_epoch()
        total = self.steps_per_epoch * self.config.epochs
        self.scheduler = get_linear_schedule_with_warmup(optimizer, self.config.warmup_steps, total)
        self.progress = {"epoch": 0, "step_in_epoch": 0, "global_step": 0, "best": -float("inf")}
        if saved is not None:
            load_optimizer(state_dir, optimizer)
            self.progress = saved["progress"]
            self.scheduler.load_state_dict({**saved["scheduler"], "lr_lambdas": [None] * len(optimizer.param_groups)})
            epoch, step = self.progress["epoch"], self.progress["step_in_epoch"]
            logger.info("resuming from %s at epoch %d, step %d", state_dir, epoch, step)
            if self.accelerator.is_main_process:
                truncate_log(self.out_dir / "log.jsonl", self.progress["global_step"])
        return optimizer

    def _negative_sources(self) -> set[str]:
        """The negative mixes (the run's, and random:1 before ``--hard-negatives-after``), the training pool's
        retrieval index, and the bland list where a mix draws it; the kinds the mixes draw."""
        config, train = self.config, self.train_data
        self.mix = NegativeMix.parse(config.negative_mix)
        self.random_mix = NegativeMix.parse("random:1")
        self.retrieval = retrieval_index(config, train.pool) if "retrieved" in self.mix.kinds else None
        copy_kinds = NegativeMix.parse(config.copy_mix).kinds if config.density_weight else ()
        for flag, kinds in (("--negative-mix", self.mix.kinds), ("--copy-mix", copy_kinds)):
            if "bland" in kinds:  # mined once from the training pairs, kept on them (train/negatives/bland.py)
                require_bland_list(train, flag)
        return {*self.mix.kinds, *copy_kinds}

    def _start_evaluators(self, dev: DevJudgments | None, given: Sequence[GroundingSet]) -> set[str]:
        """The evaluators (:func:`density_train.evaluation.evaluators.build_evaluators`) and the Gaussians they read; a selection that
        reads a metric no evaluator logs is refused before training. The kinds of the validation negatives."""
        config, valid = self.config, self.valid_data
        kinds = validation_kinds(config, self.train_data, valid)  # bland: the training list
        retrieval = retrieval_index(config, valid.pool, "validation") if "retrieved" in kinds else None
        candidates = validation_candidates(valid, kinds, seed=config.negatives_seed, retrieval=retrieval)
        self.gaussian_fits = GaussianFits.of(config, self.train_data)
        grounding = grounding_sets(config, given, self.tokenizer)
        processes = self.accelerator.num_processes
        self.evaluators = build_evaluators(config, valid, candidates, self.gaussian_fits, dev, grounding, processes)
        check_selection(config.select_on, config.select_floor, self.metric_names())
        return set(candidates)

    def _optimizer(self, model) -> torch.optim.AdamW:
        """AdamW at the recipe's learning rate for this run's contexts a step (``--lr-scaling``), fused on CUDA and
        on the CPU (one kernel for every tensor: on 2 CPU cores all-MiniLM-L6-v2's update takes 16 ms fused against 84
        ms in torch's default per-tensor loop, which also dispatches some 2,000 more operators a step)."""
        config = self.config
        self.contexts_per_step = config.batch_size * config.grad_accum * self.accelerator.num_processes
        check_contexts_per_step(
            config.batch_size * config.grad_accum, config.lr_scaling, self.accelerator.num_processes
        )
        self.lr = scaled_lr(config.lr, self.contexts_per_step, config.lr_scaling)
        fused = {"fused": True} if self.accelerator.device.type in ("cuda", "cpu") else {}
        return torch.optim.AdamW(model.parameters(), lr=self.lr, weight_decay=config.weight_decay, **fused)

    def _start_steps(self) -> None:
        """What the steps read: the candidates per context the anchor reads (the golds, with --anchor-negatives
        all 1 + N; 0 without an anchor), the log lines kept on the device, and the batches (every training text
        tokenised, once), and the optimizer a step calls."""
        self.anchored = 0
        if self.density_term is not None and self.density_term.anchor is not None:
            self.anchored = 1 + self.config.negatives if self.config.anchor_negatives else 1
        self._pending: list[tuple[dict, list[list[torch.Tensor]]]] = []
        self.batches = StepBatches(self, self.anchored)
        self._backward_started = threading.Event()  # opens the next step's batches to be made (one_ahead)
        # The optimizer a step calls: accelerate's wrapper only where it does something (a gradient scaler, XLA);
        # elsewhere it looks up optional packages at every call (about 1 ms a step).
        plain = getattr(self.optimizer, "scaler", None) is None and self.accelerator.distributed_type != "XLA"
        self.step_optimizer = getattr(self.optimizer, "optimizer", self.optimizer) if plain else self.optimizer
        # The model's parameters, listed once: the step clips them and clears their gradients itself (the
        # optimizer's zero_grad(set_to_none=True) does the same through a profiler scope and a compiler guard).
        self._parameters = list(self.model.parameters())

    def _gold_features(self, rows) -> np.ndarray:
        """Features (n, d) of the training golds at ``rows``, without dropout."""
        self.model.eval()
        features = self.outputs.golds(self.train_data, rows)
        self.model.train()
        return features

    def metric_names(self) -> list[str]:
        """The names :meth:`evaluate` logs in this run, in its order (the per-kind, dev and grounding ones on one
        process only)."""
        return [name for evaluator in self.evaluators for name in evaluator.metric_names()]

    def evaluator(self, kind: type):
        """The run's evaluator of class ``kind`` (:mod:`density_train.evaluation.evaluators`), or None."""
        return next((evaluator for evaluator in self.evaluators if isinstance(evaluator, kind)), None)

    @torch.no_grad()
    def evaluate(self) -> dict:
        """Every evaluator's metrics of the current model, in :meth:`metric_names`' order, with the evaluation
        Gaussians fitted now if an evaluator reads them."""
        self.model.eval()
        wanted = any(evaluator.needs_gaussians for evaluator in self.evaluators)
        gaussians = self.gaussian_fits(self.outputs) if wanted else {}
        metrics = {}
        for evaluator in self.evaluators:
            metrics.update(evaluator(self.outputs, gaussians))
        self.model.train()
        return metrics

    def _evaluate_and_select(self, epoch: int) -> None:
        """Evaluate, log, and keep the model in best/ if its selection value improved (:func:`select`)."""
        started = time.monotonic()
        metrics = self.evaluate()
        seconds = round(time.monotonic() - started, 1)
        self._log({"type": "eval", "epoch": epoch, "step": self.progress["global_step"], "seconds": seconds, **metrics})
        best = select(metrics, self.config.select_on, self.config.select_floor, self.progress)
        if best and self.accelerator.is_main_process:
            self.accelerator.unwrap_model(self.model).save(self.out_dir / "best", self.tokenizer)
        self.save_state()

    def _steps_per_epoch(self) -> int:
        micro_batches = len(self.train_data) // self.config.batch_size
        steps = micro_batches // (self.accelerator.num_processes * self.config.grad_accum)
        if self.config.max_steps_per_epoch:
            steps = min(steps, self.config.max_steps_per_epoch)
        if steps < 1:
            processes, accum = self.accelerator.num_processes, self.config.grad_accum
            raise ValueError(
                f"{len(self.train_data)} training pairs give no full step of {self.config.batch_size} x {accum} x "
                f"{processes} contexts (--batch-size x --grad-accum x processes): give a larger --limit "
                "or a smaller --batch-size"
            )
        return steps

    def _log(self, record: dict) -> None:
        if self.accelerator.is_main_process:
            with open(self.out_dir / "log.jsonl", "a", encoding="utf-8") as handle:
                handle.write(json.dumps(record) + "\n")

    def _micro_batch_loss(self, contexts, candidates, kinds) -> tuple[torch.Tensor, ...]:
        """:meth:`_loss` of the micro-batch of these texts (``candidates``: per context the gold, ``negatives``
        negatives, then the density term's copies; ``kinds``: per context the kind of each negative and copy)."""
        micro = text_micro_batch(self.tokenizer, self.config, contexts, candidates, kinds, self.anchored)
        return self._loss(micro.to(self.accelerator.device))

    def _loss(self, micro: MicroBatch) -> tuple[torch.Tensor, ...]:
        """The loss of one micro-batch, its parts (cross-entropy, contrastive term, the density
        term's margin and drift) and, with a density term, the golds' features (B, d), detached (else None). The
        cross-entropy reads the first 1 + ``negatives`` candidates of each group; rows ``micro.keep`` leaves out
        (negatives of an excluded kind) stay out of the contrastive term."""
        config, group_size, selection = self.config, micro.group_size, 1 + self.config.negatives
        device = self.accelerator.device
        with self._autocast():
            features, logits = self.model(micro.inputs)
        ce = selection_loss(logits.view(-1, group_size)[:, :selection].reshape(-1), selection)
        contrastive = torch.zeros((), device=device)
        if config.contrastive_weight:
            contrastive = supervised_contrastive_loss(
                features, group_size, config.tau, config.contrastive_average, keep=micro.keep
            )
        loss = ce + config.contrastive_weight * contrastive
        grouped = features.view(micro.contexts, group_size, -1)
        golds = grouped[:, 0]
        margin = drift = torch.zeros((), device=device)
        if self.density_term is not None:
            anchored = anchor_features = None
            if self.density_term.anchor is not None:  # the golds (and the negatives) as the start saw them
                with torch.no_grad(), self._anchor_autocast():
                    anchor_features, _ = self.density_term.anchor(micro.anchor_inputs)
                anchored = grouped[:, : self.anchored].reshape(-1, features.shape[-1])
            copies = grouped[:, selection:]
            term, margin, drift = self.density_term.loss(golds, copies, anchor_features, micro.real, anchored)
            loss = loss + term
        # Without a density term nothing reads the golds' features, and a view of them would keep the encoder's
        # whole last hidden state alive until the step ends.
        return loss, ce, contrastive, margin, drift, golds.detach() if self.density_term is not None else None

    def _anchor_autocast(self):
        """bf16 autocast for the frozen anchor's forward pass on CUDA (it needs no gradient, and bf16 halves
        its time there); elsewhere the run's own precision."""
        if self.accelerator.device.type == "cuda":
            return torch.autocast("cuda", dtype=torch.bfloat16)
        return self._autocast()

    def _autocast(self):
        """The run's autocast: accelerate's, or in float32 a context that does nothing, without the generator
        accelerate enters to find that out (5 us warm, 0.04 ms in the loop on this CPU, whose caches the model's
        arithmetic leaves cold)."""
        return contextlib.nullcontext() if self.accelerator.mixed_precision == "no" else self.accelerator.autocast()

    def train(self, stop_after_steps: int | None = None, stop_after_seconds: float | None = None) -> dict:
        """Run the remaining epochs, or stop (state saved) after ``stop_after_steps`` optimizer steps
        or once ``stop_after_seconds`` have passed (the host's clock), e.g. inside a time-limited command."""
        config = self.config
        taken, started = 0, time.monotonic()
        if config.eval_at_start and self.progress["global_step"] == 0:
            self._evaluate_and_select(0)
        while self.progress["epoch"] < config.epochs:
            epoch, first = self.progress["epoch"], self.progress["step_in_epoch"]
            evaluate_after = {
                round(self.steps_per_epoch * (j + 1) / config.evals_per_epoch) for j in range(config.evals_per_epoch)
            }
            self.model.train()
            bar = tqdm(
                total=self.steps_per_epoch,
                initial=first,
                desc=f"epoch {epoch + 1}/{config.epochs}",
                disable=not self.accelerator.is_main_process,
            )
            plan = self.batches.epoch(epoch)
            before = self.progress["global_step"] - first  # global steps taken before this epoch

            def make(step, plan=plan, epoch=epoch, before=before):
                return self.batches.step(plan, epoch, step, before + step)

            pin = self.accelerator.device.type == "cuda"
            steps = one_ahead(make, range(first, self.steps_per_epoch), pin, self._backward_started)
            with contextlib.closing(steps):
                for step, micro_batches in steps:
                    self._step(micro_batches, epoch, started)
                    bar.update(1)
                    taken += 1
                    last = step + 1 == self.steps_per_epoch
                    if last:  # the epoch's end, before any save: one save holds it
                        self.progress.update(epoch=epoch + 1, step_in_epoch=0)
                    stop = stop_after_steps is not None and taken >= stop_after_steps
                    stop = stop or self._out_of_time(started, stop_after_seconds)
                    if step + 1 in evaluate_after:  # before any stop, so that a resumed run never skips it
                        self._write_log(bar)
                        self._evaluate_and_select(epoch)  # which saves the state
                    elif stop or last or (config.save_every and self.progress["global_step"] % config.save_every == 0):
                        self.save_state()
                    elif len(self._pending) >= LOG_BLOCK:
                        self._write_log(bar)
                    if stop:
                        return self.progress
            if first == self.steps_per_epoch:  # a state saved at an epoch's last step before the epoch's end
                self.progress.update(epoch=epoch + 1, step_in_epoch=0)
                self.save_state()
        self._write_log()
        return self.progress

    def _step(self, micro_batches: list[MicroBatch], epoch: int, started: float) -> None:
        """One optimizer step over ``micro_batches`` (on the host, moved here); its log line waits on the device."""
        config, accelerator = self.config, self.accelerator
        losses, golds = [], []
        if config.cuda_graphs:
            # One CUDA-graph iteration a step: its micro-batches' graphs are children of one another, so the
            # gradients they accumulate and the golds the density term takes after them are not written over.
            torch.compiler.cudagraph_mark_step_begin()
        for index, micro in enumerate(micro_batches):
            if accelerator.device.type != "cpu":  # made on the host: on the CPU there is nothing to move
                micro = micro.to(accelerator.device)
            sync = index == len(micro_batches) - 1
            with contextlib.nullcontext() if sync else accelerator.no_sync(self.model):
                *parts, step_golds = self._loss(micro)
                self._backward_started.set()  # the next step's batches are made now, outside the loop's short work
                accelerator.backward(parts[0] / config.grad_accum)
            losses.append([part.detach() for part in parts])  # stacked once a block, in _write_log
            if step_golds is not None:
                golds.append(step_golds)
        accelerator.clip_grad_norm_(self._parameters, config.max_grad_norm)
        self.step_optimizer.step()
        self.scheduler.step()
        for parameter in self._parameters:
            parameter.grad = None
        if self.density_term is not None:  # after the step: a step's golds never measure themselves
            self.density_term.push(accelerator.gather(torch.cat(golds)).float())
        self.progress["step_in_epoch"] += 1
        self.progress["global_step"] += 1
        record = {
            "type": "train",
            "epoch": epoch,
            "step": self.progress["global_step"],
            "lr": self.scheduler.get_last_lr()[0],
            "elapsed": round(time.monotonic() - started, 2),  # seconds since this process began, on the host
        }
        self._pending.append((record, losses))

    def _write_log(self, bar=None) -> None:
        """The steps' log lines kept since the last write, in step order, with their losses: one copy from the
        device (and one collective over processes) for the block."""
        if not self._pending:
            return
        records, losses = zip(*self._pending)
        self._pending = []
        # One stack of every step's, micro-batch's and part's scalar: (steps, micro-batches, parts), meant over
        # the step's micro-batches in float32 (under bf16 autocast the parts may be bf16).
        shape = len(losses), len(losses[0]), len(losses[0][0])
        parts = torch.stack([part for step in losses for micro in step for part in micro]).float().view(shape).mean(1)
        means = self.accelerator.reduce(parts, "mean").tolist()
        names = ("loss", "ce", "contrastive", *(("margin", "drift") if self.density_term is not None else ()))
        for record, values in zip(records, means):
            head, tail = {k: record[k] for k in ("type", "epoch", "step")}, {k: record[k] for k in ("lr", "elapsed")}
            self._log({**head, **dict(zip(names, values)), **tail})
        if bar is not None:
            bar.set_postfix(loss=f"{means[-1][0]:.4f}")

    def _out_of_time(self, started: float, seconds: float | None) -> bool:
        """Whether ``seconds`` have passed on the host's clock; with several processes, whether they have on any
        (every process must stop at the same step)."""
        out = seconds is not None and time.monotonic() - started > seconds
        if self.accelerator.num_processes == 1:
            return out
        return bool(self.accelerator.reduce(torch.tensor(float(out), device=self.accelerator.device), "sum").item())

    def _draw(self, rows, epoch: int, mix: NegativeMix | None = None) -> dict[int, list[tuple[str, str]]]:
        """Negatives of ``rows`` from ``mix`` (default: the run's), as (kind, text): a function of
        (negatives_seed + epoch, row) only."""
        drawn = draw_labelled_negatives(
            self.train_data,
            rows,
            self.config.negatives,
            mix or self.mix,
            seed=self.config.negatives_seed + epoch,
            epoch=0,
            retrieval=self.retrieval,
        )
        return dict(zip((int(row) for row in rows), drawn))

    def save_state(self) -> None:
        """Everything a new process needs to continue: weights, optimizer, scheduler, RNG, position; the log
        lines of the steps it holds are written first."""
        self._write_log()
        accelerator = self.accelerator
        rng = accelerator.gather(torch.get_rng_state()[None].to(accelerator.device)).cpu()

        def write(state_dir: Path) -> None:
            accelerator.unwrap_model(self.model).save(state_dir, self.tokenizer)
            save_optimizer(
                state_dir, self.optimizer.optimizer if hasattr(self.optimizer, "optimizer") else self.optimizer
            )
            save_file({f"rank{r}": rng[r].contiguous() for r in range(len(rng))}, str(state_dir / "rng.safetensors"))
            if self.density_term is not None:
                save_file(self.density_term.bank.state_dict(), str(state_dir / BANK_FILE))
            scheduler = {k: v for k, v in self.scheduler.state_dict().items() if k != "lr_lambdas"}
            write_trainer_state(state_dir, self.progress, scheduler, asdict(self.config), self.data_summary)

        if accelerator.is_main_process:
            replace_state(self.out_dir, write)
        accelerator.wait_for_everyone()
