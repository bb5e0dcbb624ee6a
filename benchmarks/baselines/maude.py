"""MaUde (Sinha et al., ACL 2020, "Learning an Unreferenced Metric for Online Dialogue Evaluation"),
re-implemented from the paper with all-MiniLM-L6-v2 for BERT.

- Every utterance becomes a frozen sentence vector. The paper took BERT's [CLS] state; we take
  all-MiniLM-L6-v2's own sentence embedding (mean pooling, L2-normalised), the vector that model
  was trained to give.
- A learned linear map (no bias) takes each vector down to 300 dimensions, for the context's
  utterances and the reply alike.
- A two-layer bidirectional LSTM reads the context's utterance vectors in order; its outputs are
  max-pooled over time and projected by a learned matrix W back to 300 dimensions: ``h``.
- With the reply's vector ``r``, the features ``[h, r, |h - r|, h * r]`` (as in NLI models) go
  into an MLP (200 hidden units, ReLU, dropout 0.2) and a sigmoid: the score.
- Training is noise-contrastive: binary cross-entropy with the gold reply as 1 and corrupted or
  unrelated replies as 0. The negatives are the paper's, written here from its description (this
  module shares no code with DEnsity's training negatives):

  - syntactic: *word order* (the reply's words shuffled), *word drop* (each word dropped with
    probability 0.15) and *word repeat* (from one of the reply's first two words on, that word
    repeated to the reply's length: "i have have have");
  - semantic: *random utterance*, a reply of another training dialogue.

  As in the paper, the corrupted replies are made once, before training (seeded), so that their
  vectors are computed once; the random utterance is drawn afresh every epoch. The paper drew 5
  of each kind per context; we draw :data:`PER_KIND` to keep training in minutes on a CPU.
"""

from __future__ import annotations

import logging
import time
from pathlib import Path

import numpy as np
import torch
from torch import nn
from torch.nn.utils.rnn import pack_padded_sequence, pad_packed_sequence

from .common import ENCODER_NOTE, early_stopping, embed_texts, load_state_checked, load_weights, save_weights

SYSTEM = "maude"
COLUMN = "MaUde (MiniLM)"
SYNTACTIC = ("word_order", "word_drop", "word_repeat")
DROP_RATE = 0.15
PER_KIND = 1
DOWN_DIM, DECODER_HIDDEN, DROPOUT = 300, 200, 0.2

logger = logging.getLogger(__name__)


# ----------------------------------------------------------------- the paper's syntactic negatives


def word_order(reply: str, rng: np.random.Generator) -> str:
    """The reply's words in a random order."""
    words = reply.split()
    return " ".join(words[i] for i in rng.permutation(len(words)))


def word_drop(reply: str, rng: np.random.Generator, rate: float = DROP_RATE) -> str:
    """The reply with each word dropped with probability ``rate``."""
    return " ".join(word for word in reply.split() if rng.random() >= rate)


def word_repeat(reply: str, rng: np.random.Generator) -> str:
    """The words before one of the first two words, then that word repeated to the reply's length."""
    words = reply.split()
    if not words:
        return reply
    start = int(rng.integers(min(2, len(words))))
    return " ".join(words[:start] + [words[start]] * (len(words) - start))


CORRUPTIONS = {"word_order": word_order, "word_drop": word_drop, "word_repeat": word_repeat}


def syntactic_negatives(replies: list[str], seed: int, per_kind: int = PER_KIND) -> list[list[str]]:
    """For each reply, ``per_kind`` corruptions of each syntactic kind, a function of (seed, row)."""
    out = []
    for row, reply in enumerate(replies):
        rng = np.random.default_rng([seed, row])
        out.append([CORRUPTIONS[kind](reply, rng) for kind in SYNTACTIC for _ in range(per_kind)])
    return out


# --------------------------------------------------------------------------------- the model


class MaUdeModel(nn.Module):
    """Context utterance vectors (b, t, d) with their counts, and reply vectors (b, d), to logits (b,)."""

    def __init__(self, dim: int, down: int = DOWN_DIM, hidden: int = DECODER_HIDDEN, dropout: float = DROPOUT):
        super().__init__()
        self.down = nn.Parameter(torch.empty(dim, down))
        self.lstm = nn.LSTM(down, down, num_layers=2, bidirectional=True, batch_first=True)
        self.project = nn.Parameter(torch.empty(2 * down, down))
        nn.init.xavier_normal_(self.down)
        nn.init.xavier_uniform_(self.project)
        self.decoder = nn.Sequential(nn.Linear(4 * down, hidden), nn.ReLU(), nn.Dropout(dropout), nn.Linear(hidden, 1))

    def encode_context(self, utterances: torch.Tensor, counts: torch.Tensor) -> torch.Tensor:
        packed = pack_padded_sequence(utterances @ self.down, counts.cpu(), batch_first=True, enforce_sorted=False)
        states, _ = pad_packed_sequence(self.lstm(packed)[0], batch_first=True, padding_value=float("-inf"))
        return states.max(1).values @ self.project

    def forward(self, utterances: torch.Tensor, counts: torch.Tensor, replies: torch.Tensor) -> torch.Tensor:
        h, r = self.encode_context(utterances, counts), replies @ self.down
        return self.decoder(torch.cat([h, r, (h - r).abs(), h * r], dim=-1)).squeeze(-1)


class VectorTable:
    """Frozen vectors of distinct texts in one (m + 1, d) tensor (row 0: padding), with lookups by text."""

    def __init__(self, vectors: dict[str, np.ndarray]):
        self.row = {text: i + 1 for i, text in enumerate(vectors)}
        dim = len(next(iter(vectors.values())))
        self.table = torch.from_numpy(
            np.concatenate([np.zeros((1, dim), np.float32), np.stack(list(vectors.values()))])
        )

    def rows(self, texts) -> torch.Tensor:
        return torch.tensor([self.row[t] for t in texts])

    def contexts(self, contexts: list[list[str]]) -> tuple[torch.Tensor, torch.Tensor]:
        """Padded (n, most turns) table rows of each context's utterances, and the turn counts;
        an empty context reads as one empty turn."""
        turns = [list(c) if len(c) else [""] for c in contexts]
        ids = torch.zeros((len(turns), max(len(t) for t in turns)), dtype=torch.long)
        for i, context in enumerate(turns):
            ids[i, : len(context)] = self.rows(context)
        return ids, torch.tensor([len(t) for t in turns])


def _texts(contexts, replies) -> list[str]:
    return [t for c in contexts for t in (c if len(c) else [""])] + list(replies)


def train(
    out: str | Path,
    *,
    data_dir: str | Path = "../shared/data/dailydialog",
    encoder: str = "minilm",
    limit: int = 0,
    epochs: int = 20,
    patience: int = 3,
    batch_size: int = 64,
    lr: float = 1e-3,
    down_dim: int = DOWN_DIM,
    decoder_hidden: int = DECODER_HIDDEN,
    seed: int = 0,
    command: str = "",
) -> dict:
    """Train on DailyDialog train with NCE; early-stop on the validation loss (fixed negatives).
    ``down_dim`` and ``decoder_hidden`` are the paper's 300 and 200 unless given (tests shrink them)."""
    from train.corpora import load_dailydialog, response_pairs

    started = time.perf_counter()
    torch.manual_seed(seed)
    rng = np.random.default_rng(seed)
    contexts, replies = response_pairs(load_dailydialog(Path(data_dir), "train"))
    v_contexts, v_replies = response_pairs(load_dailydialog(Path(data_dir), "validation"))
    if limit:
        contexts, replies = contexts[:limit], replies[:limit]
    v_contexts, v_replies = v_contexts[:2000], v_replies[:2000]
    corrupt, v_corrupt = syntactic_negatives(replies, seed), syntactic_negatives(v_replies, seed + 1)
    texts = _texts(contexts, replies) + _texts(v_contexts, v_replies)
    texts += [t for row in corrupt + v_corrupt for t in row]
    vectors = VectorTable(embed_texts(texts, encoder, "mean", normalize=True))
    table = vectors.table
    context_ids, counts = vectors.contexts(contexts)
    gold = vectors.rows(replies)
    negatives = torch.stack([vectors.rows(row) for row in corrupt])  # (n, k) table rows
    v_context_ids, v_counts = vectors.contexts(v_contexts)
    v_utterances, v_gold = table[v_context_ids], table[vectors.rows(v_replies)]
    v_random = v_gold[torch.from_numpy(np.random.default_rng(seed + 2).permutation(len(v_gold)))]
    v_negatives = torch.cat([table[torch.stack([vectors.rows(row) for row in v_corrupt])], v_random[:, None]], 1)
    model = MaUdeModel(table.shape[1], down_dim, decoder_hidden)
    optimizer = torch.optim.Adam(model.parameters(), lr=lr)
    bce = nn.BCEWithLogitsLoss()

    def nce_loss(utt, cnt, golds, negs) -> torch.Tensor:
        k = negs.shape[1]
        logits = model(
            utt.repeat(1 + k, 1, 1),
            cnt.repeat(1 + k),
            torch.cat([golds, negs.transpose(0, 1).reshape(-1, golds.shape[1])]),
        )
        labels = torch.cat([torch.ones(len(golds)), torch.zeros(len(golds) * k)])
        return bce(logits, labels)

    def epoch_step(epoch: int) -> float:
        order = torch.from_numpy(rng.permutation(len(gold)))
        randoms = gold[torch.from_numpy(rng.integers(0, len(gold), len(gold)))]  # a fresh random utterance
        losses = []
        for start in range(0, len(order), batch_size):
            part = order[start : start + batch_size]
            negs = table[torch.cat([negatives[part], randoms[part][:, None]], 1)]
            ids = context_ids[part][:, : int(counts[part].max())]
            loss = nce_loss(table[ids], counts[part], table[gold[part]], negs)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            losses.append(loss.item())
        return float(np.mean(losses))

    def evaluate() -> float:
        with torch.inference_mode():
            return nce_loss(v_utterances, v_counts, v_gold, v_negatives).item()

    history = early_stopping(epoch_step, evaluate, model, epochs, patience, desc="MaUde")
    with torch.inference_mode():
        gold_scores = model(v_utterances, v_counts, v_gold)
        kinds = [*SYNTACTIC, "random_utterance"]
        accuracy = {
            kind: float((gold_scores > model(v_utterances, v_counts, v_negatives[:, j])).float().mean())
            for j, kind in enumerate(kinds)
        }
    config = {
        "system": SYSTEM,
        "encoder": encoder,
        "encoder_note": ENCODER_NOTE,
        "dim": int(table.shape[1]),
        "down_dim": down_dim,
        "decoder_hidden": decoder_hidden,
        "dropout": DROPOUT,
        "negatives_per_context": {**{kind: PER_KIND for kind in SYNTACTIC}, "random_utterance": 1},
        "train_pairs": len(gold),
        "valid_pairs": len(v_gold),
        "valid_gold_above_negative": accuracy,
        "hyperparameters": {"batch_size": batch_size, "lr": lr, "max_epochs": epochs, "patience": patience},
        "seed": seed,
        **history,
        "seconds": round(time.perf_counter() - started, 1),
        "command": command,
    }
    save_weights(out, model.state_dict(), config)
    return config


class MaUdeColumns:
    """The trained model as a meta-evaluation column: sigmoid score, higher is better."""

    supervised = False

    def __init__(self, weights_dir: str | Path):
        state, self.config = load_weights(weights_dir, SYSTEM)
        c = self.config
        self.model = MaUdeModel(c["dim"], c["down_dim"], c["decoder_hidden"], c["dropout"])
        load_state_checked(self.model, state, Path(weights_dir) / "weights.safetensors")
        self.model.eval()

    def reports(self, set_name: str, protocol: str) -> bool:
        return True

    def __call__(self, contexts, responses, references=None) -> dict[str, np.ndarray]:
        contexts = [[c] if isinstance(c, str) else list(c) for c in contexts]
        vectors = VectorTable(embed_texts(_texts(contexts, responses), self.config["encoder"], "mean", normalize=True))
        context_ids, counts = vectors.contexts(contexts)
        replies = vectors.table[vectors.rows(responses)]
        scores = []
        with torch.inference_mode():
            for i in range(0, len(replies), 256):
                ids, n = context_ids[i : i + 256], counts[i : i + 256]
                utterances = vectors.table[ids[:, : int(n.max())]]
                scores.append(torch.sigmoid(self.model(utterances, n, replies[i : i + 256])))
        return {COLUMN: torch.cat(scores).double().numpy()}


def load(weights_dir: str | Path) -> MaUdeColumns:
    return MaUdeColumns(weights_dir)
