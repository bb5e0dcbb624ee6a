"""The training loop: response selection + supervised contrastive loss, resumable, multi-process.

Layout of ``out_dir``::

    state/        the latest state: model, tokenizer, head, optimizer.safetensors,
                  rng.safetensors, trainer_state.json (epoch, step, scheduler)
    best/         model, tokenizer and head with the best validation Recall@1
    log.jsonl     one line per optimizer step (loss) and per evaluation (R@1, MRR)

A run interrupted at any step restarts from ``state/`` and continues with the same data
order and negatives. Nothing is pickled: tensors are safetensors, the rest JSON.

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
from dataclasses import asdict, dataclass, field
from pathlib import Path

import numpy as np
import torch
from safetensors.torch import load_file, save_file
from tqdm.auto import tqdm

from density_metric.features import cpu_has_native_bf16, pad_batch
from density_metric.pair_format import PairFormat

from .data import SelectionData, epoch_negatives
from .losses import CONTRASTIVE_AVERAGES, recall_and_mrr, selection_loss, supervised_contrastive_loss
from .model import DensityModel

logger = logging.getLogger(__name__)


@dataclass
class TrainConfig:
    """The recipe. The defaults are the authors' DailyDialog settings: bert-base-uncased, 1 + 15
    candidates at 256 tokens, negatives sampled once with seed 42, 10 epochs of 16 contexts per
    step, AdamW at 5e-5 with 1,000 warm-up steps, and the contrastive loss at tau 0.1 and weight 1
    averaged over the gold anchors (the paper's eq. 4)."""

    backbone: str = "bert-base-uncased"
    pair_format: PairFormat = field(default_factory=PairFormat)
    negatives: int = 15
    resample_negatives: bool = False
    negatives_seed: int = 42
    epochs: int = 10
    batch_size: int = 16  # contexts per micro-batch and process, each with 1 + negatives candidates
    grad_accum: int = 1
    lr: float = 5e-5
    weight_decay: float = 0.0
    warmup_steps: int = 1000
    max_grad_norm: float = 1.0
    tau: float = 0.1  # temperature of the supervised contrastive loss
    contrastive_weight: float = 1.0  # the paper's lambda: loss = CE + contrastive_weight * SCL
    contrastive_average: str = "gold-anchors"  # "gold-anchors" (the paper) or "all-rows" (the authors' code)
    seed: int = 42
    eval_batch_size: int = 32  # validation contexts per forward pass
    valid_limit: int = 0  # validation pairs scored for Recall@1 after each epoch; 0: all
    mixed_precision: str = "auto"  # "auto": bf16 on CUDA and on CPUs with native bf16, else "no"; or "no"/"bf16"/"fp16"
    max_steps_per_epoch: int = 0  # 0: the whole epoch
    save_every: int = 200  # optimizer steps between saves of state/ (also saved after every epoch)

    def __post_init__(self):
        if isinstance(self.pair_format, dict):  # as read back from trainer_state.json
            self.pair_format = PairFormat.from_dict(self.pair_format)
        if self.contrastive_average not in CONTRASTIVE_AVERAGES:
            raise ValueError(
                f"contrastive_average must be one of {CONTRASTIVE_AVERAGES}, got {self.contrastive_average!r}"
            )
        if self.mixed_precision not in ("auto", "no", "bf16", "fp16"):
            raise ValueError(f"mixed_precision must be 'auto', 'no', 'bf16' or 'fp16', got {self.mixed_precision!r}")


def resolve_mixed_precision(setting: str) -> str:
    """Accelerate's mixed_precision for ``setting``; "auto": bf16 on CUDA and on CPUs with native
    bf16 (1.6x per training step here), else none. Training does not need the scorer's
    batch-invariant float32: a step's batch is fixed by the seed."""
    if setting != "auto":
        return setting
    return "bf16" if torch.cuda.is_available() or cpu_has_native_bf16() else "no"


def _encode_groups(tokenizer, config: TrainConfig, contexts, candidates) -> tuple[torch.Tensor, torch.Tensor]:
    """Token ids of every (context, candidate) of the groups, group after group."""
    flat_contexts = [context for context, group in zip(contexts, candidates) for _ in group]
    flat_candidates = [candidate for group in candidates for candidate in group]
    return pad_batch(config.pair_format.encode(tokenizer, flat_contexts, flat_candidates), tokenizer.pad_token_id)


def _save_optimizer(path: Path, optimizer) -> None:
    state = optimizer.state_dict()
    tensors = {
        f"{index}.{key}": value.detach().cpu().contiguous() if torch.is_tensor(value) else torch.tensor(value)
        for index, entry in state["state"].items()
        for key, value in entry.items()
    }
    save_file(tensors, str(path / "optimizer.safetensors"))
    (path / "optimizer.json").write_text(json.dumps(state["param_groups"]))


def _load_optimizer(path: Path, optimizer) -> None:
    tensors = load_file(str(path / "optimizer.safetensors"))
    state: dict = {}
    for name, value in tensors.items():
        index, key = name.split(".", 1)
        state.setdefault(int(index), {})[key] = value
    optimizer.load_state_dict({"state": state, "param_groups": json.loads((path / "optimizer.json").read_text())})


class Trainer:
    """Trains a :class:`DensityModel` on gold pairs with random negatives."""

    def __init__(
        self, config: TrainConfig, train: SelectionData, valid: SelectionData, out_dir: Path, accelerator=None
    ):
        from accelerate import Accelerator
        from transformers import get_linear_schedule_with_warmup

        if config.valid_limit:
            valid = SelectionData(
                valid.contexts[: config.valid_limit], valid.responses[: config.valid_limit], valid.pool
            )
        self.config, self.train_data, self.valid_data, self.out_dir = config, train, valid, Path(out_dir)
        self.accelerator = accelerator or Accelerator(mixed_precision=resolve_mixed_precision(config.mixed_precision))
        self.out_dir.mkdir(parents=True, exist_ok=True)
        state_dir = self.out_dir / "state"
        resume = (state_dir / "trainer_state.json").is_file()
        torch.manual_seed(config.seed)
        model, self.tokenizer = DensityModel.load(state_dir if resume else config.backbone, config.pair_format)
        optimizer = torch.optim.AdamW(model.parameters(), lr=config.lr, weight_decay=config.weight_decay)
        self.steps_per_epoch = self._steps_per_epoch()
        self.scheduler = get_linear_schedule_with_warmup(
            optimizer, config.warmup_steps, self.steps_per_epoch * config.epochs
        )
        self.progress = {"epoch": 0, "step_in_epoch": 0, "global_step": 0, "best_recall": -1.0}
        if resume:
            _load_optimizer(state_dir, optimizer)
            saved = json.loads((state_dir / "trainer_state.json").read_text())
            self.progress = saved["progress"]
            self.scheduler.load_state_dict({**saved["scheduler"], "lr_lambdas": [None] * len(optimizer.param_groups)})
            torch.set_rng_state(load_file(str(state_dir / "rng.safetensors"))[f"rank{self.accelerator.process_index}"])
            logger.info(
                "resuming from %s at epoch %d, step %d",
                state_dir,
                self.progress["epoch"],
                self.progress["step_in_epoch"],
            )
        self.model, self.optimizer = self.accelerator.prepare(model, optimizer)
        self.valid_negatives = valid.negatives(config.negatives, config.negatives_seed)

    def _steps_per_epoch(self) -> int:
        micro_batches = len(self.train_data) // self.config.batch_size
        steps = micro_batches // (self.accelerator.num_processes * self.config.grad_accum)
        if self.config.max_steps_per_epoch:
            steps = min(steps, self.config.max_steps_per_epoch)
        if steps < 1:
            raise ValueError(f"{len(self.train_data)} training pairs give no full step at this batch size")
        return steps

    def _log(self, record: dict) -> None:
        if self.accelerator.is_main_process:
            with open(self.out_dir / "log.jsonl", "a", encoding="utf-8") as handle:
                handle.write(json.dumps(record) + "\n")

    def _micro_batch_loss(self, contexts, candidates) -> torch.Tensor:
        group_size = 1 + self.config.negatives
        input_ids, attention_mask = _encode_groups(self.tokenizer, self.config, contexts, candidates)
        device = self.accelerator.device
        with self.accelerator.autocast():
            features, logits = self.model(input_ids.to(device), attention_mask.to(device))
        loss = selection_loss(logits, group_size)
        if self.config.contrastive_weight:
            loss = loss + self.config.contrastive_weight * supervised_contrastive_loss(
                features, group_size, self.config.tau, self.config.contrastive_average
            )
        return loss

    def train(self, stop_after_steps: int | None = None, stop_after_seconds: float | None = None) -> dict:
        """Run the remaining epochs, or stop (state saved) after ``stop_after_steps`` optimizer steps
        or once ``stop_after_seconds`` have passed, e.g. inside a time-limited command."""
        config, accelerator = self.config, self.accelerator
        world, rank = accelerator.num_processes, accelerator.process_index
        taken, started = 0, time.monotonic()
        while self.progress["epoch"] < config.epochs:
            epoch = self.progress["epoch"]
            order = np.random.default_rng(config.seed + epoch).permutation(len(self.train_data))
            negatives = epoch_negatives(
                self.train_data, config.negatives, config.negatives_seed, epoch, config.resample_negatives
            )
            self.model.train()
            bar = tqdm(
                range(self.progress["step_in_epoch"], self.steps_per_epoch),
                desc=f"epoch {epoch + 1}/{config.epochs}",
                disable=not accelerator.is_main_process,
            )
            for step in bar:
                losses = []
                for micro in range(config.grad_accum):
                    index = (step * world + rank) * config.grad_accum + micro
                    rows = order[index * config.batch_size : (index + 1) * config.batch_size]
                    contexts = [self.train_data.contexts[i] for i in rows]
                    candidates = [[self.train_data.responses[i], *negatives[i]] for i in rows]
                    sync = micro == config.grad_accum - 1
                    with contextlib.nullcontext() if sync else accelerator.no_sync(self.model):
                        loss = self._micro_batch_loss(contexts, candidates)
                        accelerator.backward(loss / config.grad_accum)
                    losses.append(loss.detach())
                accelerator.clip_grad_norm_(self.model.parameters(), config.max_grad_norm)
                self.optimizer.step()
                self.scheduler.step()
                self.optimizer.zero_grad()
                mean_loss = accelerator.reduce(torch.stack(losses).mean(), "mean").item()
                self.progress["step_in_epoch"] = step + 1
                self.progress["global_step"] += 1
                bar.set_postfix(loss=f"{mean_loss:.4f}")
                self._log(
                    {
                        "type": "train",
                        "epoch": epoch,
                        "step": self.progress["global_step"],
                        "loss": mean_loss,
                        "lr": self.scheduler.get_last_lr()[0],
                    }
                )
                taken += 1
                out_of_time = stop_after_seconds is not None and time.monotonic() - started > stop_after_seconds
                # Every process must agree to stop at the same step.
                out_of_time = bool(
                    accelerator.reduce(torch.tensor(float(out_of_time), device=accelerator.device), "sum").item()
                )
                if (stop_after_steps is not None and taken >= stop_after_steps) or out_of_time:
                    self.save_state()
                    return self.progress
                if config.save_every and self.progress["global_step"] % config.save_every == 0:
                    self.save_state()
            metrics = self.evaluate()
            self._log({"type": "eval", "epoch": epoch, "step": self.progress["global_step"], **metrics})
            if metrics["recall_at_1"] > self.progress["best_recall"]:
                self.progress["best_recall"] = metrics["recall_at_1"]
                if accelerator.is_main_process:
                    accelerator.unwrap_model(self.model).save(self.out_dir / "best", self.tokenizer)
            self.progress.update(epoch=epoch + 1, step_in_epoch=0)
            self.save_state()
        return self.progress

    @torch.no_grad()
    def evaluate(self) -> dict:
        """Validation Recall@1 and MRR over each pair's 1 + N candidates, sharded over processes."""
        config, accelerator = self.config, self.accelerator
        self.model.eval()
        data, group_size = self.valid_data, 1 + config.negatives
        mine = range(accelerator.process_index, len(data), accelerator.num_processes)
        totals = torch.zeros(3, device=accelerator.device)
        for start in range(0, len(mine), config.eval_batch_size):
            rows = mine[start : start + config.eval_batch_size]
            contexts = [data.contexts[i] for i in rows]
            candidates = [[data.responses[i], *self.valid_negatives[i]] for i in rows]
            input_ids, attention_mask = _encode_groups(self.tokenizer, config, contexts, candidates)
            with accelerator.autocast():
                _, logits = self.model(input_ids.to(accelerator.device), attention_mask.to(accelerator.device))
            recall, mrr = recall_and_mrr(logits, group_size)
            totals += torch.stack([recall.sum(), mrr.sum(), torch.tensor(float(len(rows)), device=totals.device)])
        totals = accelerator.reduce(totals, "sum")
        self.model.train()
        return {"recall_at_1": (totals[0] / totals[2]).item(), "mrr": (totals[1] / totals[2]).item()}

    def save_state(self) -> None:
        """Everything a new process needs to continue: weights, optimizer, scheduler, RNG, position."""
        accelerator = self.accelerator
        state_dir = self.out_dir / "state"
        rng = accelerator.gather(torch.get_rng_state()[None].to(accelerator.device)).cpu()
        if accelerator.is_main_process:
            state_dir.mkdir(parents=True, exist_ok=True)
            accelerator.unwrap_model(self.model).save(state_dir, self.tokenizer)
            _save_optimizer(
                state_dir, self.optimizer.optimizer if hasattr(self.optimizer, "optimizer") else self.optimizer
            )
            save_file({f"rank{r}": rng[r].contiguous() for r in range(len(rng))}, str(state_dir / "rng.safetensors"))
            scheduler = {k: v for k, v in self.scheduler.state_dict().items() if k != "lr_lambdas"}
            (state_dir / "trainer_state.json").write_text(
                json.dumps({"progress": self.progress, "scheduler": scheduler, "config": asdict(self.config)}, indent=2)
            )
        accelerator.wait_for_everyone()
