"""Zhao et al. (ACL 2020), "Designing Precise and Robust Dialogue Response Evaluators": a supervised baseline.

The paper's evaluator is a cross-encoder over ``[context; reply]`` (RoBERTa) whose first-token
state feeds an MLP that predicts the human score. It is trained in two stages:

1. without labels, on response selection over a dialogue corpus (gold reply against random ones);
2. with labels: fine-tuned with mean squared error on human ratings.

Here stage 1 is not redone: a DEnsity checkpoint's encoder ``g`` *is* a cross-encoder trained
for response selection on DailyDialog (with its head ``f(c, r)``), so stage 2 starts from it,
by default from the bundled checkpoint. This substitution (all-MiniLM-L6-v2 tuned by DEnsity's
recipe, instead of RoBERTa tuned by theirs) is named in the column. Stage 2 follows the paper:
an MLP on the first-token feature, its output squashed into the ratings' range, trained with
MSE on human ratings. To keep the trained weights small (a few MB, committed beside the
others), it fine-tunes the encoder's **last layer** and the MLP; the lower layers stay as stage 1
left them. With 180 ratings this is also the safer choice against over-fitting.

Protocol (the paper's, on DailyDialog-Zhao): the first 20 % of rows (``dev`` in
:mod:`density_train.data.judgments`, ground-truth rows dropped, MAD-filtered ratings) are the training data,
of which a seeded fifth is held out for early stopping; the last 80 % (the ``paper`` protocol)
are the test. The column is therefore **supervised**: the meta-evaluation reports it apart from
the unsupervised metrics, and never on rows it was trained on (:meth:`ZhaoColumns.reports`).
"""

from __future__ import annotations

import logging
import time
from pathlib import Path

import numpy as np
import torch
from torch import nn

from density_metric.checkpoint.sources import resolve_checkpoint
from density_metric.encoding.features import length_sorted_batches, rows_to_batch
from density_metric.encoding.packing import pack

from .common import CONFIG_FILE, WEIGHTS_FILE, load_state_checked, load_weights, save_weights

SYSTEM = "zhao"
COLUMN = "Zhao et al. 2020 (supervised, MiniLM)"
# The rows it learns from: a set and the protocol that selects them.
TRAINED_ON = ("dailydialog_zhao", "dev")

logger = logging.getLogger(__name__)


class RatingHead(nn.Module):
    """The paper's MLP on the first-token feature, with the output squashed into [low, high]."""

    def __init__(self, dim: int, low: float, high: float, dropout: float = 0.1):
        super().__init__()
        self.mlp = nn.Sequential(nn.Linear(dim, dim), nn.Tanh(), nn.Dropout(dropout), nn.Linear(dim, 1))
        self.register_buffer("range", torch.tensor([low, high], dtype=torch.float32))

    def forward(self, features: torch.Tensor) -> torch.Tensor:
        low, high = self.range
        return low + (high - low) * torch.sigmoid(self.mlp(features).squeeze(-1))


class ZhaoModel(nn.Module):
    """Stage 1's encoder (a DEnsity checkpoint's ``g``) with the stage-2 rating head."""

    def __init__(self, checkpoint_dir: str, low: float, high: float):
        super().__init__()
        from density_train.model import DensityModel

        self.checkpoint = resolve_checkpoint(checkpoint_dir)
        self.pair_format = self.checkpoint.config.pair_format
        density, self.tokenizer = DensityModel.load(self.checkpoint.encoder_path, self.pair_format)
        self.encoder = density.encoder
        self.density = density  # its forward gives g (feature-only last layer where it applies)
        self.head = RatingHead(self.encoder.config.hidden_size, low, high)
        for parameter in self.encoder.parameters():
            parameter.requires_grad = False
        for parameter in self.last_layer.parameters():
            parameter.requires_grad = True

    @property
    def last_layer(self) -> nn.Module:
        return self.encoder.encoder.layer[-1]

    @property
    def trainable(self) -> nn.ModuleDict:
        """What stage 2 changes: the last encoder layer (``layer.*``) and the head (``head.*``)."""
        return nn.ModuleDict({"layer": self.last_layer, "head": self.head})

    def trained_state(self) -> dict[str, torch.Tensor]:
        return self.trainable.state_dict()

    def load_trained_state(self, state: dict[str, torch.Tensor], path: Path) -> None:
        load_state_checked(self.trainable, state, path)

    def encode(self, contexts, responses) -> list:
        return pack(self.pair_format, self.tokenizer, contexts, [[response] for response in responses]).rows

    def forward(self, rows) -> torch.Tensor:
        batch = rows_to_batch(rows, self.tokenizer.pad_token_id, self.pair_format.pooling)
        features, _ = self.density(batch)
        return self.head(features)

    @torch.inference_mode()
    def predict(self, contexts, responses, batch_size: int = 32) -> np.ndarray:
        self.eval()
        rows = self.encode(contexts, responses)
        out = np.empty(len(rows), dtype=np.float64)
        for index in length_sorted_batches([len(row.ids) for row in rows], batch_size):
            out[index] = self([rows[i] for i in index]).double().numpy()
        return out


def training_rows(data_dir: str | Path) -> tuple[list, list[str], np.ndarray]:
    """The paper's training rows: DailyDialog-Zhao's ``dev`` protocol (contexts, responses, ratings)."""
    from density_train.data.judgments import apply_protocol, context_of, load_sets

    name, protocol = TRAINED_ON
    [judgments] = load_sets(data_dir, [name])
    index, ratings = apply_protocol(judgments, protocol)
    rows = [judgments.rows[i] for i in index]
    return [context_of(row, False) for row in rows], [row["response"] for row in rows], ratings


def train(
    out: str | Path,
    *,
    data_dir: str | Path = "../shared/data",
    checkpoint: str = "default",
    epochs: int = 40,
    patience: int = 6,
    batch_size: int = 16,
    layer_lr: float = 2e-5,
    head_lr: float = 1e-3,
    held_out: float = 0.2,
    seed: int = 0,
    command: str = "",
) -> dict:
    """Stage 2 on the ``dev`` rows; keeps the epoch with the lowest held-out MSE. Returns the report."""
    from tqdm.auto import tqdm

    torch.manual_seed(seed)
    contexts, responses, ratings = training_rows(data_dir)
    if len(ratings) < 10:
        raise ValueError(f"only {len(ratings)} training ratings in {TRAINED_ON}: too few to train and early-stop")
    order = np.random.default_rng(seed).permutation(len(ratings))
    n_val = max(2, int(round(held_out * len(ratings))))
    val, fit = np.sort(order[:n_val]), np.sort(order[n_val:])
    model = ZhaoModel(checkpoint, float(ratings.min()), float(ratings.max()))
    rows = model.encode(contexts, responses)
    target = torch.tensor(ratings, dtype=torch.float32)
    optimizer = torch.optim.AdamW(
        [{"params": model.last_layer.parameters(), "lr": layer_lr}, {"params": model.head.parameters(), "lr": head_lr}]
    )
    rng = np.random.default_rng(seed + 1)

    def held_out_mse() -> float:
        model.eval()
        with torch.inference_mode():
            predictions = model([rows[i] for i in val])
        return float(torch.mean((predictions - target[val]) ** 2))

    best = {"epoch": 0, "val_mse": held_out_mse(), "state": {k: v.clone() for k, v in model.trained_state().items()}}
    started, bar = time.perf_counter(), tqdm(range(1, epochs + 1), desc="zhao stage 2", unit="epoch")
    for epoch in bar:
        model.train()
        shuffled = rng.permutation(fit)
        for start in range(0, len(shuffled), batch_size):
            part = shuffled[start : start + batch_size]
            loss = torch.mean((model([rows[i] for i in part]) - target[part]) ** 2)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
        mse = held_out_mse()
        bar.set_postfix(val_mse=f"{mse:.4f}")
        if mse < best["val_mse"]:
            best = {"epoch": epoch, "val_mse": mse, "state": {k: v.clone() for k, v in model.trained_state().items()}}
        elif epoch - best["epoch"] >= patience:
            break
    report = {
        "system": SYSTEM,
        "base_checkpoint": model.checkpoint.source,
        "base_revision": model.checkpoint.revision,
        "trained_on": {"set": TRAINED_ON[0], "protocol": TRAINED_ON[1], "rows": len(fit), "held_out_rows": len(val)},
        "rating_range": [float(ratings.min()), float(ratings.max())],
        "best_epoch": best["epoch"],
        "epochs_run": epoch,
        "held_out_mse": best["val_mse"],
        "trainable": "last encoder layer + MLP head",
        "hyperparameters": {
            "batch_size": batch_size,
            "layer_lr": layer_lr,
            "head_lr": head_lr,
            "patience": patience,
            "max_epochs": epochs,
            "seed": seed,
        },
        "seconds": round(time.perf_counter() - started, 1),
        "command": command,
    }
    save(out, best["state"], report)
    return report


def save(out: str | Path, state: dict[str, torch.Tensor], config: dict) -> None:
    """The trained tensors (the layer in float16, the head in float32) and ``config.json``."""
    save_weights(out, {k: v.half() if k.startswith("layer.") else v for k, v in state.items()}, config)


class ZhaoColumns:
    """The trained evaluator as a meta-evaluation column: predicted rating, higher is better."""

    supervised = True

    def __init__(self, weights_dir: str | Path, checkpoint: str | None = None):
        weights_dir = Path(weights_dir)
        state, self.config = load_weights(weights_dir, SYSTEM)
        config_path = weights_dir / CONFIG_FILE
        base = checkpoint or self.config["base_checkpoint"]
        low, high = self.config["rating_range"]
        self.model = ZhaoModel("default" if str(base).startswith("bundled:") else base, low, high)
        revision = self.model.checkpoint.revision
        if revision != self.config["base_revision"]:
            raise ValueError(
                f"{config_path}: trained on stage-1 checkpoint {self.config['base_checkpoint']} at "
                f"{self.config['base_revision']}, but it is now at {revision}: retrain with "
                "python -m benchmarks.baselines train --system zhao"
            )
        self.model.load_trained_state(state, weights_dir / WEIGHTS_FILE)

    def reports(self, set_name: str, protocol: str) -> bool:
        """Whether the column may be reported on ``set_name`` under ``protocol``: never on rows it trained on."""
        name, trained = TRAINED_ON
        return set_name != name or protocol == "paper" and trained == "dev"

    def __call__(self, contexts, responses, references=None) -> dict[str, np.ndarray]:
        return {COLUMN: self.model.predict(contexts, responses)}


def load(weights_dir: str | Path) -> ZhaoColumns:
    return ZhaoColumns(weights_dir)
