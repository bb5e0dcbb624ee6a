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

RUBER scores a reply against a query (it was built on single-turn query-reply data). Our
contexts have several turns, so the query is the context's **last turns joined with " "**: as many as
fit, counted back from the latest, in the encoder's window (:data:`MAX_TOKENS` word pieces with
[CLS] and [SEP]; turns are counted one by one, which for a WordPiece tokenizer is exact because
it splits on whitespace). The latest turn is always kept (truncated at its end if it alone is
too long). Keeping the *last* turns matters: truncating the joined context would cut the turn
the reply answers.

Substitutions (named in the columns, "(MiniLM)", and in ``config.json``): the frozen encoder is
all-MiniLM-L6-v2 (6 layers, d = 384), not BERT-base (12 layers, d = 768); its last layer is
pooled, as in the paper. A random reply that happens to be the gold reply's very text ("Yes .")
is left out of the loss: it is not a negative.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np
import torch
from torch import nn

from .common import (
    ENCODER_NOTE,
    WEIGHTS_FILE,
    VectorTable,
    early_stopping,
    embed_texts,
    load_state_checked,
    load_weights,
    save_weights,
)

SYSTEM = "bert-ruber"
UNREFERENCED = "BERT-RUBER unref (MiniLM)"
BLENDED = "BERT-RUBER blended (MiniLM)"
BLEND = "arithmetic mean"
POOLING = "max"
HIDDEN = (256, 512, 128)
MAX_TOKENS = (
    256  # all-MiniLM-L6-v2's max_seq_length (density_train.negatives.retrieval.MAX_TOKENS), with [CLS] and [SEP]
)

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


def query_of(context: Sequence[str] | str, count_tokens: Callable[[str], int], max_tokens: int = MAX_TOKENS) -> str:
    """The query of ``context``: its last turns joined with " ", as many as fit in ``max_tokens``
    (``count_tokens(turn)`` word pieces each, plus [CLS] and [SEP]); at least the last turn; "" if none."""
    turns = [context] if isinstance(context, str) else list(context)
    kept, used = [], 2
    for turn in reversed(turns):
        used += count_tokens(turn)
        if kept and used > max_tokens:
            break
        kept.append(turn)
    return " ".join(reversed(kept))


def queries(contexts: Sequence[Sequence[str] | str], encoder: str, max_tokens: int = MAX_TOKENS) -> list[str]:
    """:func:`query_of` every context, with ``encoder``'s tokenizer counting each distinct turn once."""
    from transformers import AutoTokenizer

    from density_train.model import backbone_path

    tokenizer = AutoTokenizer.from_pretrained(backbone_path(encoder))
    contexts = [[c] if isinstance(c, str) else list(c) for c in contexts]
    turns = list(dict.fromkeys(t for c in contexts for t in c))
    ids = tokenizer(turns, add_special_tokens=False)["input_ids"] if turns else []
    counts = {turn: len(row) for turn, row in zip(turns, ids)}
    return [query_of(c, counts.__getitem__, max_tokens) for c in contexts]


def min_max(scores: np.ndarray) -> np.ndarray:
    """Scores scaled to [0, 1] over the set (all 0.5 if they are all equal)."""
    scores = np.asarray(scores, dtype=np.float64)
    spread = scores.max() - scores.min()
    return np.full_like(scores, 0.5) if spread == 0 else (scores - scores.min()) / spread


def cosine(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """(n,) float64 cosine similarity of the rows of ``a`` and ``b`` (n, d); RUBER's referenced score."""
    a, b = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
    return np.sum(a * b, -1) / np.maximum(np.linalg.norm(a, axis=-1) * np.linalg.norm(b, axis=-1), 1e-12)


def blend(unreferenced: np.ndarray, referenced: np.ndarray) -> np.ndarray:
    """RUBER's arithmetic-mean blend of the two min-max normalised scores."""
    return (min_max(unreferenced) + min_max(referenced)) / 2


def batch_loss(
    model: UnreferencedScorer, table: torch.Tensor, queries: torch.Tensor, golds: torch.Tensor, randoms: torch.Tensor
) -> torch.Tensor:
    """Mean cross-entropy of (query, gold reply) as class 1 and (query, random reply) as class 0,
    all (b,) rows of ``table``; a random reply with its gold reply's text (the same row) is left out."""
    logits = model(table[torch.cat([queries, queries])], table[torch.cat([golds, randoms])])
    labels = torch.cat([torch.ones(len(queries)), torch.zeros(len(queries))]).long()
    keep = torch.cat([torch.ones(len(queries), dtype=torch.bool), randoms != golds])
    return nn.functional.cross_entropy(logits[keep], labels[keep])


def _pairs(data_dir: Path, split: str, limit: int, encoder: str, max_tokens: int) -> tuple[list[str], list[str]]:
    """(queries, gold replies) of a DailyDialog split, its first ``limit`` pairs if ``limit``."""
    from density_train.data.corpora import load_dailydialog, response_pairs

    contexts, responses = response_pairs(load_dailydialog(data_dir, split))
    if limit:
        contexts, responses = contexts[:limit], responses[:limit]
    return queries(contexts, encoder, max_tokens), list(responses)


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
    max_tokens: int = MAX_TOKENS,
    seed: int = 0,
    command: str = "",
    cache_dir: str | Path | None = None,
) -> dict:
    """Train the unreferenced scorer on DailyDialog train; early-stop on the cross-entropy of the
    validation split's gold replies against fixed random ones (at most 2,000 pairs). With
    ``cache_dir``, the frozen embeddings are kept there for a retrain (:func:`.common.embed_texts`)."""
    started = time.perf_counter()
    torch.manual_seed(seed)
    rng = np.random.default_rng(seed)
    train_q, train_r = _pairs(Path(data_dir), "train", limit, encoder, max_tokens)
    valid_q, valid_r = _pairs(Path(data_dir), "validation", min(limit, 2000) if limit else 2000, encoder, max_tokens)
    texts = train_q + train_r + valid_q + valid_r
    vectors = VectorTable(
        embed_texts(texts, encoder, POOLING, normalize=False, max_tokens=max_tokens, cache_dir=cache_dir)
    )
    table = vectors.table
    q, gold = vectors.rows(train_q), vectors.rows(train_r)  # table rows, one per training pair
    vq, v_gold = vectors.rows(valid_q), vectors.rows(valid_r)
    v_random = v_gold[torch.from_numpy(np.random.default_rng(seed + 1).permutation(len(v_gold)))]
    model = UnreferencedScorer(table.shape[1])
    optimizer = torch.optim.Adam(model.parameters(), lr=lr)

    def epoch_step(epoch: int) -> float:
        order = torch.from_numpy(rng.permutation(len(q)))
        randoms = gold[torch.from_numpy(rng.integers(0, len(gold), len(gold)))]  # fresh random replies every epoch
        losses = []
        for start in range(0, len(order), batch_size):
            part = order[start : start + batch_size]
            loss = batch_loss(model, table, q[part], gold[part], randoms[part])
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            losses.append(loss.item())
        return float(np.mean(losses))

    def evaluate() -> float:
        with torch.inference_mode():
            return batch_loss(model, table, vq, v_gold, v_random).item()

    history = early_stopping(epoch_step, evaluate, model, epochs, patience, desc="BERT-RUBER")
    distinct = (v_random != v_gold).numpy()
    gold_p = model.gold_probability(table[vq].numpy(), table[v_gold].numpy())
    random_p = model.gold_probability(table[vq][distinct].numpy(), table[v_random][distinct].numpy())
    config = {
        "system": SYSTEM,
        "encoder": encoder,
        "encoder_note": ENCODER_NOTE,
        "pooling": POOLING,
        "query": "the context's last turns joined with ' ', as many as fit in max_tokens",
        "max_tokens": max_tokens,
        "dim": int(table.shape[1]),
        "hidden": list(HIDDEN),
        "blend": BLEND,
        "train_pairs": len(q),
        "valid_pairs": len(vq),
        "valid_accuracy": float((np.mean(gold_p > 0.5) + np.mean(random_p < 0.5)) / 2),
        "hyperparameters": {"batch_size": batch_size, "lr": lr, "max_epochs": epochs, "patience": patience},
        "seed": seed,
        **history,
        "seconds": round(time.perf_counter() - started, 1),
        "command": command,
    }
    save_weights(out, model.state_dict(), config)
    logger.info("BERT-RUBER: best epoch %d, validation accuracy %.3f", config["best_epoch"], config["valid_accuracy"])
    return config


class BertRuberColumns:
    """The trained scorer as meta-evaluation columns: unreferenced, and blended where there are references."""

    supervised = False

    def __init__(self, weights_dir: str | Path):
        state, self.config = load_weights(weights_dir, SYSTEM)
        path = Path(weights_dir) / WEIGHTS_FILE
        try:
            self.model = UnreferencedScorer(int(self.config["dim"]), tuple(int(h) for h in self.config["hidden"]))
            self.encoder, self.max_tokens = str(self.config["encoder"]), int(self.config["max_tokens"])
        except (KeyError, TypeError, ValueError) as err:
            raise ValueError(f"{Path(weights_dir) / 'config.json'}: missing or malformed field ({err!r})") from None
        load_state_checked(self.model, state, path)
        self.model.eval()

    def reports(self, set_name: str, protocol: str) -> bool:
        return True

    def __call__(
        self, contexts: list[list[str]], responses: list[str], references: list[str] | None = None
    ) -> dict[str, np.ndarray]:
        """{column: (n,) float64}; the blended column only if every row has a non-empty reference."""
        query_texts = queries(contexts, self.encoder, self.max_tokens)
        texts = query_texts + list(responses) + list(references or [])
        vectors = embed_texts(texts, self.encoder, POOLING, normalize=False, max_tokens=self.max_tokens)
        q = np.stack([vectors[t] for t in query_texts])
        r = np.stack([vectors[t] for t in responses])
        unreferenced = self.model.gold_probability(q, r)
        columns = {UNREFERENCED: unreferenced}
        if references is not None and all(references):
            referenced = cosine(r, np.stack([vectors[t] for t in references]))
            columns[BLENDED] = blend(unreferenced, referenced)
        return columns


def load(weights_dir: str | Path) -> BertRuberColumns:
    return BertRuberColumns(weights_dir)
