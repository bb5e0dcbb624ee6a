"""The training loop: response selection + supervised contrastive loss, resumable, multi-process.

Layout of ``out_dir``::

    state/        the latest state: model, tokenizer, head, optimizer.safetensors,
                  rng.safetensors, trainer_state.json (epoch, step, scheduler)
    best/         model, tokenizer and head at the evaluation with the best selection value (train/selection.py)
    log.jsonl     one line per optimizer step (loss, ce, contrastive) and per evaluation; the steps' lines are
                  written in blocks (LOG_BLOCK steps, and at every save, evaluation and the end), their losses kept
                  on the device until then

A step does no work over texts: :mod:`train.step_batches` draws and assembles the next step's micro-batches from
ids tokenised once (:mod:`train.token_store`) in a background thread while this one runs.

A run interrupted at any step (even during a save) restarts from ``state/`` (:mod:`train.state`) and continues with
the same data order and negatives; ``log.jsonl`` is first cut back to the saved step, so the
log of a resumed run equals an uninterrupted one's. The run must be resumed with the recipe it
began with (:func:`train.config.check_resumable`). Nothing is pickled: tensors are safetensors,
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
import time
from collections.abc import Sequence
from dataclasses import asdict
from pathlib import Path

import numpy as np
import torch
from safetensors.torch import load_file, save_file
from tqdm.auto import tqdm

from density_metric.encoding.device import cpu_has_native_bf16

from .arguments import checkpoint_folder, encoder_folder
from .bland import BLAND_FILE, require_bland_list, write_bland_list
from .config import TrainConfig, check_contexts_per_step, check_resumable, scaled_lr
from .data import SelectionData
from .density_term import BANK_FILE, DensityTerm, start_density_term
from .evaluation import Evaluation
from .grounding import GroundingSpec, benchmark_sentences, ground_pairs
from .grounding_validation import USES_LINES, GroundingSet, line_use
from .losses import selection_loss, supervised_contrastive_loss
from .model import DensityModel, set_attention_dropout, set_dropout
from .negatives import NegativeMix, draw_labelled_negatives
from .run_log import truncate_log
from .selection import required_metrics, selection_metrics
from .state import (
    STATE_FILE,
    check_same_data,
    data_summary,
    load_optimizer,
    read_trainer_state,
    recover_state,
    replace_state,
    save_optimizer,
    write_trainer_state,
)
from .step_batches import MicroBatch, StepBatches, one_ahead, text_micro_batch
from .validation import OVERLAP_MIN, DevJudgments, last_turn_overlap

logger = logging.getLogger(__name__)
LOG_BLOCK = 100  # steps whose log lines wait on the device before they are written (and at every save and evaluation)


def resolve_mixed_precision(setting: str) -> str:
    """Accelerate's mixed_precision for ``setting``; "auto": bf16 on CUDA and on CPUs with native
    bf16 (1.6x per training step here), else none. Training does not need the scorer's
    batch-invariant float32: a step's batch is fixed by the seed."""
    if setting != "auto":
        return setting
    return "bf16" if torch.cuda.is_available() or cpu_has_native_bf16() else "no"


class Trainer(Evaluation):
    """Trains a :class:`DensityModel` on gold pairs with random negatives; evaluates it as
    :class:`train.evaluation.Evaluation` does."""

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
        from transformers import get_linear_schedule_with_warmup

        if config.valid_limit:
            valid = valid.select(range(min(config.valid_limit, len(valid))))
        spec = GroundingSpec.parse(config.grounding)
        if spec is not None:  # before the data's fingerprint: a resumed run grounds the same contexts again
            train, grounded = ground_pairs(train, spec, config.seed, benchmark_sentences(config.grounding_exclude))
            logger.info("--grounding %s: %d of %d training contexts have grounding lines", spec, grounded, len(train))
        self.config, self.train_data, self.valid_data, self.out_dir = config, train, valid, Path(out_dir)
        self.accelerator = accelerator or Accelerator(mixed_precision=resolve_mixed_precision(config.mixed_precision))
        state_dir = recover_state(self.out_dir)  # out_dir itself is made last, once every check passed
        saved = read_trainer_state(state_dir) if (state_dir / STATE_FILE).is_file() else None
        self.data_summary = data_summary(train, valid)
        if saved is not None:
            check_resumable(saved["config"], config, str(state_dir / STATE_FILE))
            check_same_data(saved, self.data_summary, str(state_dir / STATE_FILE))
        resume = saved is not None
        torch.manual_seed(config.seed)
        flag = "--init-from" if config.init_from else "--backbone"
        start = checkpoint_folder(config.init_from, flag) if config.init_from else encoder_folder(config.backbone, flag)
        try:
            model, self.tokenizer = DensityModel.load(
                state_dir if resume else start, config.pair_format, config.feature_only_last_layer
            )
        except OSError as err:  # a Hub id that cannot be fetched, a folder without the model's files
            where = state_dir if resume else f"{flag} {start}"
            raise ValueError(f"{where}: cannot load the model ({str(err).splitlines()[0]})") from None
        if config.attention_dropout is not None:
            set_attention_dropout(model.encoder, config.attention_dropout)
        if not config.dropout:
            set_dropout(model.encoder, 0.0)
        if config.keep_lines:  # before anything reads the contexts (overlap pool, lengths, validation kinds, fits)
            train, valid = (self._lines_kept(data) for data in (train, valid))
            self.train_data, self.valid_data = train, valid
        self.context_lengths = self.overlap_pool = None
        if config.overlap_rows and config.overlap_source == "lines":  # golds that use their persona or knowledge
            counts = train.line_counts() or [0] * len(train)
            self.overlap_pool = np.flatnonzero(line_use(train.contexts, train.responses, counts) >= USES_LINES)
            if not len(self.overlap_pool):
                raise ValueError(f"--overlap-source lines: no training gold uses its grounding lines ({USES_LINES:g})")
        elif config.overlap_rows:  # golds that reuse the last turn's words, as people's good replies often do
            self.overlap_pool = np.flatnonzero(last_turn_overlap(train.contexts, train.responses) >= OVERLAP_MIN)
            if not len(self.overlap_pool):
                raise ValueError(
                    f"--overlap-rows: no training gold shares {OVERLAP_MIN:.0%} of its words with its last turn"
                )
        if config.length_buckets:
            self.context_lengths = config.pair_format.context_lengths(self.tokenizer, train.contexts)
        optimizer = self._optimizer(model)
        self.steps_per_epoch = self._steps_per_epoch()
        self.scheduler = get_linear_schedule_with_warmup(
            optimizer, config.warmup_steps, self.steps_per_epoch * config.epochs
        )
        self.progress = {"epoch": 0, "step_in_epoch": 0, "global_step": 0, "best": -float("inf")}
        if resume:
            load_optimizer(state_dir, optimizer)
            self.progress = saved["progress"]
            self.scheduler.load_state_dict({**saved["scheduler"], "lr_lambdas": [None] * len(optimizer.param_groups)})
            logger.info(
                "resuming from %s at epoch %d, step %d",
                state_dir,
                self.progress["epoch"],
                self.progress["step_in_epoch"],
            )
            if self.accelerator.is_main_process:  # the steps after the saved state are taken again
                truncate_log(self.out_dir / "log.jsonl", self.progress["global_step"])
        self.model, self.optimizer = self.accelerator.prepare(model, optimizer)
        self.valid_negatives = valid.negatives(config.valid_negatives or config.negatives, config.negatives_seed)
        self.mix = NegativeMix.parse(config.negative_mix)
        self.random_mix = NegativeMix.parse("random:1")  # before hard_negatives_after
        self.retrieval = self._retrieval_index(train.pool) if "retrieved" in self.mix.kinds else None
        copy_kinds = NegativeMix.parse(config.copy_mix).kinds if config.density_weight else ()
        for flag, kinds in (("--negative-mix", self.mix.kinds), ("--copy-mix", copy_kinds)):
            if "bland" in kinds:  # mined once from the training pairs, kept on them (train/bland.py)
                require_bland_list(train, flag)
        self.valid_kinds = self._validation_candidates(valid)  # bland: the training list
        fit = min(config.valid_fit_pairs, len(train))
        self.fit_rows = np.sort(np.random.default_rng(config.seed).choice(len(train), size=fit, replace=False))
        self.plain_fit_rows = None
        if config.plain_fit_corpus:  # the second evaluation Gaussian: golds of that corpus only, seeded
            own = np.flatnonzero(np.asarray(train.sources or [], dtype=object) == config.plain_fit_corpus)
            if len(own) < 2:
                raise ValueError(f"--plain-fit-corpus {config.plain_fit_corpus}: fewer than 2 training pairs of it")
            size = min(config.valid_fit_pairs, len(own))
            self.plain_fit_rows = np.sort(np.random.default_rng(config.seed).choice(own, size=size, replace=False))
        self.dev = dev
        self.grounding_sets = list(grounding_sets)  # the grounded corpora's held-out golds (run.py), after ConvAI2's
        if config.grounding_valid:
            try:
                convai2 = GroundingSet.load(config.grounding_valid, config.grounding_valid_pairs)
            except OSError as err:
                raise ValueError(f"--grounding-valid {config.grounding_valid}: {err.strerror or err}") from None
            self.grounding_sets.insert(0, convai2)
        if config.keep_lines:
            self.grounding_sets = [
                data.with_lines_kept(self.tokenizer, config.pair_format) for data in self.grounding_sets
            ]
        for name in required_metrics(config.select_on, config.select_floor):  # before training, not later
            if name not in self.metric_names():
                flag = "--select-on" if name in selection_metrics(config.select_on) else "--select-floor"
                raise ValueError(
                    f"{flag} {name!r} is not a validation metric of this run; metrics: {', '.join(self.metric_names())}"
                )
        self.density_term: DensityTerm | None = None
        if config.density_weight:
            self.density_term = start_density_term(
                config,
                start,
                self._gold_features,
                len(train),
                model.encoder.config.hidden_size,
                self.accelerator.device,
                state_dir / BANK_FILE if resume else None,
            )
        self._start_steps()
        if resume:  # last, since loading the density term's anchor draws from the RNG (its head's init)
            torch.set_rng_state(load_file(str(state_dir / "rng.safetensors"))[f"rank{self.accelerator.process_index}"])
        self.out_dir.mkdir(parents=True, exist_ok=True)
        if self.accelerator.is_main_process and "bland" in {*self.mix.kinds, *copy_kinds, *self.valid_kinds}:
            write_bland_list(self.out_dir / BLAND_FILE, train)

    def _optimizer(self, model) -> torch.optim.AdamW:
        """AdamW at the recipe's learning rate for this run's contexts a step (``--lr-scaling``), fused on CUDA."""
        config = self.config
        self.contexts_per_step = config.batch_size * config.grad_accum * self.accelerator.num_processes
        check_contexts_per_step(
            config.batch_size * config.grad_accum, config.lr_scaling, self.accelerator.num_processes
        )
        self.lr = scaled_lr(config.lr, self.contexts_per_step, config.lr_scaling)
        fused = {"fused": True} if self.accelerator.device.type == "cuda" else {}  # one kernel for every tensor
        return torch.optim.AdamW(model.parameters(), lr=self.lr, weight_decay=config.weight_decay, **fused)

    def _start_steps(self) -> None:
        """What the steps read: the candidates per context the anchor reads (the golds, with --anchor-negatives
        all 1 + N; 0 without an anchor), the log lines kept on the device, and the batches (every training text
        tokenised, once), and the optimizer a step calls."""
        self.anchored = 0
        if self.density_term is not None and self.density_term.anchor is not None:
            self.anchored = 1 + self.config.negatives if self.config.anchor_negatives else 1
        self._pending: list[tuple[dict, torch.Tensor]] = []
        self.batches = StepBatches(self, self.anchored)
        # The optimizer a step calls: accelerate's wrapper only where it does something (a gradient scaler, XLA);
        # elsewhere it looks up optional packages at every call (about 1 ms a step).
        plain = getattr(self.optimizer, "scaler", None) is None and self.accelerator.distributed_type != "XLA"
        self.step_optimizer = getattr(self.optimizer, "optimizer", self.optimizer) if plain else self.optimizer

    @torch.no_grad()
    def _gold_features(self, rows) -> np.ndarray:
        """Features (n, d) of the training golds at ``rows``, without dropout."""
        self.model.eval()
        data = self.train_data
        features, _ = self._outputs([data.contexts[i] for i in rows], [[data.responses[i]] for i in rows])
        self.model.train()
        return features

    def _retrieval_index(self, pool, split: str = "train"):
        """The retrieval index of ``pool``: ``config.retrieval_index`` for train, the file beside it
        for another split (``train.retrieval.split_path``); a missing file says the command that builds it."""
        from .retrieval import RetrievalIndex, split_path

        if not self.config.retrieval_index:
            raise ValueError("negative kind 'retrieved' needs --retrieval-index (python -m train retrieval-index)")
        path = split_path(self.config.retrieval_index, split)
        if not path.is_file():
            raise ValueError(
                f"{path}: no retrieval index; build it with python -m train retrieval-index (--split {split})"
            )
        return RetrievalIndex.load(path, pool)

    def _lines_kept(self, data: SelectionData) -> SelectionData:
        """``data`` with its contexts cut by :meth:`PairFormat.keep_lines`: a pair's grounding lines are the turns
        before its dialogue's (``len(context) - turn_index``; none without dialogues)."""
        lines = data.line_counts()
        if lines is None:
            return data
        kept = data.with_contexts(self.config.pair_format.keep_lines(self.tokenizer, data.contexts, lines))
        changed = sum(new != old for new, old in zip(kept.contexts, data.contexts))
        logger.info("--keep-lines: %d of %d contexts drop old turns to keep their grounding lines", changed, len(data))
        return kept

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
        term's margin and drift) and the golds' features (B, d), detached. The cross-entropy reads the
        first 1 + ``negatives`` candidates of each group; rows ``micro.keep`` leaves out (negatives of an
        excluded kind) stay out of the contrastive term."""
        config, group_size, selection = self.config, micro.group_size, 1 + self.config.negatives
        device = self.accelerator.device
        with self.accelerator.autocast():
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
        return loss, ce, contrastive, margin, drift, golds.detach()

    def _anchor_autocast(self):
        """bf16 autocast for the frozen anchor's forward pass on CUDA (it needs no gradient, and bf16 halves
        its time there); elsewhere the run's own precision."""
        if self.accelerator.device.type == "cuda":
            return torch.autocast("cuda", dtype=torch.bfloat16)
        return self.accelerator.autocast()

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
            with contextlib.closing(one_ahead(make, range(first, self.steps_per_epoch), pin)) as steps:
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
        for index, micro in enumerate(micro_batches):
            micro = micro.to(accelerator.device)
            sync = index == len(micro_batches) - 1
            with contextlib.nullcontext() if sync else accelerator.no_sync(self.model):
                *parts, step_golds = self._loss(micro)
                accelerator.backward(parts[0] / config.grad_accum)
            losses.append(torch.stack(parts).detach())
            golds.append(step_golds)
        accelerator.clip_grad_norm_(self.model.parameters(), config.max_grad_norm)
        self.step_optimizer.step()
        self.scheduler.step()
        self.step_optimizer.zero_grad(set_to_none=True)
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
        self._pending.append((record, torch.stack(losses).mean(0)))

    def _write_log(self, bar=None) -> None:
        """The steps' log lines kept since the last write, in step order, with their losses: one copy from the
        device (and one collective over processes) for the block."""
        if not self._pending:
            return
        records, losses = zip(*self._pending)
        self._pending = []
        means = self.accelerator.reduce(torch.stack(losses), "mean").tolist()
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
