"""BERT-RUBER (Ghazarian et al., 2019, "Better Automatic Evaluation of Open-Domain Dialogue Systems
with Contextualized Embeddings"), re-implemented from the paper with all-MiniLM-L6-v2 for BERT.

RUBER (Tao et al., 2018) blends two scores; BERT-RUBER replaces its word embeddings with a
frozen BERT's contextual token embeddings:

- **Unreferenced** (query, reply): each text's last-layer token states are max-pooled (the
  paper's best pooling) into ``q`` and ``r``. RUBER's network takes ``[q; q^T M r; r]`` (a
  learned quadratic term between the two) into an MLP with three tanh hidden layers of 256,
  512 and 128 units and two outputs. It is trained as a classifier with cross-entropy: the
  gold reply against a random reply of the training corpus, one each per query, a fresh
  random one every epoch. The score is the probability of "gold".
- **Referenced** (reply, reference): the cosine of the max-pooled embeddings of both.
- **Blended**: RUBER's heuristic. Both scores are min-max normalised over the scored set, then
  combined; RUBER proposes min, max, geometric and arithmetic mean, and we use the arithmetic
  mean (:data:`BLEND`). It needs a human reference reply, so it is only reported on sets whose
  every row has one.

The query is the context's last turn: RUBER and BERT-RUBER score (query, reply) pairs.
"""

from __future__ import annotations

import logging
import time
from pathlib import Path

import numpy as np
import torch
from torch import nn

from .common import ENCODER_NOTE, early_stopping, embed_texts, load_state_checked, load_weights, save_weights

SYSTEM = "bert-ruber"
UNREFERENCED = "BERT-RUBER unref (MiniLM)"
BLENDED = "BERT-RUBER blended (MiniLM)"
BLEND = "arithmetic mean"
POOLING = "max"
HIDDEN = (256, 512, 128)

logger = logging.getLogger(__name__)


class UnreferencedScorer(nn.Module):
    """RUBER's unreferenced network on pooled embeddings ``q`` and ``r``: two logits (random, gold)."""

    def __init__(self, dim: int, hidden: tuple[int, ...] = HIDDEN):
        super().__init__()
        self.quadratic = nn.Parameter(torch.empty(dim, dim))
        nn.init.xavier_uniform_(self.quadratic)
        layers, width = [], 2 * dim + 1
        for size in hidden:
            layers += [nn.Linear(width, size), nn.Tanh()]
            width = size
        self.mlp = nn.Sequential(*layers, nn.Linear(width, 2))

    def forward(self, q: torch.Tensor, r: torch.Tensor) -> torch.Tensor:
        quadratic = ((q @ self.quadratic) * r).sum(-1, keepdim=True)
        return self.mlp(torch.cat([q, quadratic, r], dim=-1))

    def gold_probability(self, q: np.ndarray, r: np.ndarray) -> np.ndarray:
        with torch.inference_mode():
            logits = self(torch.as_tensor(q, dtype=torch.float32), torch.as_tensor(r, dtype=torch.float32))
            return torch.softmax(logits, -1)[:, 1].double().numpy()


def query_of(context) -> str:
    """The query RUBER scores a reply against: the context's last turn (empty for an empty context)."""
    turns = [context] if isinstance(context, str) else list(context)
    return turns[-1] if turns else ""


def min_max(scores: np.ndarray) -> np.ndarray:
    """Scores scaled to [0, 1] over the set (all 0.5 if they are all equal)."""
    scores = np.asarray(scores, dtype=np.float64)
    spread = scores.max() - scores.min()
    return np.full_like(scores, 0.5) if spread == 0 else (scores - scores.min()) / spread


def cosine(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    a, b = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
    return np.sum(a * b, -1) / np.maximum(np.linalg.norm(a, axis=-1) * np.linalg.norm(b, axis=-1), 1e-12)


def blend(unreferenced: np.ndarray, referenced: np.ndarray) -> np.ndarray:
    """RUBER's arithmetic-mean blend of the two min-max normalised scores."""
    return (min_max(unreferenced) + min_max(referenced)) / 2


def _pairs(data_dir: Path, split: str, limit: int) -> tuple[list[str], list[str]]:
    from train.corpora import load_dailydialog, response_pairs

    contexts, responses = response_pairs(load_dailydialog(data_dir, split))
    if limit:
        contexts, responses = contexts[:limit], responses[:limit]
    return [query_of(c) for c in contexts], list(responses)


def train(
    out: str | Path,
    *,
    data_dir: str | Path = "../shared/data/dailydialog",
    encoder: str = "minilm",
    limit: int = 0,
    epochs: int = 20,
    patience: int = 3,
    batch_size: int = 128,
    lr: float = 1e-3,
    seed: int = 0,
    command: str = "",
) -> dict:
    """Train the unreferenced scorer on DailyDialog train; early-stop on validation cross-entropy."""
    started = time.perf_counter()
    torch.manual_seed(seed)
    rng = np.random.default_rng(seed)
    train_q, train_r = _pairs(Path(data_dir), "train", limit)
    valid_q, valid_r = _pairs(Path(data_dir), "validation", min(limit, 2000) if limit else 2000)
    vectors = embed_texts(train_q + train_r + valid_q + valid_r, encoder, POOLING, normalize=False)
    q = torch.tensor(np.stack([vectors[t] for t in train_q]))
    r = torch.tensor(np.stack([vectors[t] for t in train_r]))
    vq = torch.tensor(np.stack([vectors[t] for t in valid_q]))
    vr = torch.tensor(np.stack([vectors[t] for t in valid_r]))
    valid_random = vr[torch.from_numpy(np.random.default_rng(seed + 1).permutation(len(vr)))]
    model = UnreferencedScorer(q.shape[1])
    optimizer = torch.optim.Adam(model.parameters(), lr=lr)
    loss_fn = nn.CrossEntropyLoss()

    def batch_loss(queries, golds, randoms) -> torch.Tensor:
        logits = model(torch.cat([queries, queries]), torch.cat([golds, randoms]))
        labels = torch.cat([torch.ones(len(queries)), torch.zeros(len(queries))]).long()
        return loss_fn(logits, labels)

    def epoch_step(epoch: int) -> float:
        order = torch.from_numpy(rng.permutation(len(q)))
        randoms = r[torch.from_numpy(rng.integers(0, len(r), len(r)))]  # fresh random replies every epoch
        losses = []
        for start in range(0, len(order), batch_size):
            part = order[start : start + batch_size]
            loss = batch_loss(q[part], r[part], randoms[part])
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            losses.append(loss.item())
        return float(np.mean(losses))

    def evaluate() -> float:
        with torch.inference_mode():
            return batch_loss(vq, vr, valid_random).item()

    history = early_stopping(epoch_step, evaluate, model, epochs, patience, desc="BERT-RUBER")
    with torch.inference_mode():
        gold = model.gold_probability(vq, vr)
        random_ = model.gold_probability(vq, valid_random)
    config = {
        "system": SYSTEM,
        "encoder": encoder,
        "encoder_note": ENCODER_NOTE,
        "pooling": POOLING,
        "dim": int(q.shape[1]),
        "hidden": list(HIDDEN),
        "blend": BLEND,
        "train_pairs": len(q),
        "valid_pairs": len(vq),
        "valid_accuracy": float((np.mean(gold > 0.5) + np.mean(random_ < 0.5)) / 2),
        "hyperparameters": {"batch_size": batch_size, "lr": lr, "max_epochs": epochs, "patience": patience},
        "seed": seed,
        **history,
        "seconds": round(time.perf_counter() - started, 1),
        "command": command,
    }
    save_weights(out, model.state_dict(), config)
    return config


class BertRuberColumns:
    """The trained scorer as meta-evaluation columns: unreferenced, and blended where there are references."""

    supervised = False

    def __init__(self, weights_dir: str | Path):
        state, self.config = load_weights(weights_dir, SYSTEM)
        self.model = UnreferencedScorer(self.config["dim"], tuple(self.config["hidden"]))
        load_state_checked(self.model, state, Path(weights_dir) / "weights.safetensors")
        self.model.eval()
        self.encoder = self.config["encoder"]

    def reports(self, set_name: str, protocol: str) -> bool:
        return True

    def __call__(self, contexts, responses, references=None) -> dict[str, np.ndarray]:
        queries = [query_of(c) for c in contexts]
        texts = queries + list(responses) + list(references or [])
        vectors = embed_texts(texts, self.encoder, POOLING, normalize=False)
        q = np.stack([vectors[t] for t in queries])
        r = np.stack([vectors[t] for t in responses])
        unreferenced = self.model.gold_probability(q, r)
        columns = {UNREFERENCED: unreferenced}
        if references is not None and all(references):
            referenced = cosine(r, np.stack([vectors[t] for t in references]))
            columns[BLENDED] = blend(unreferenced, referenced)
        return columns


def load(weights_dir: str | Path) -> BertRuberColumns:
    return BertRuberColumns(weights_dir)
