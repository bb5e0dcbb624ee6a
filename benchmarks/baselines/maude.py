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
  - semantic: *random utterance*, the reply of a random training pair (almost always of another
    dialogue).

  The corrupted replies are made once, before training (seeded per row), so that their frozen
  vectors are computed once; the random utterance is drawn afresh every epoch. The paper drew 5
  of each kind per context; we draw :data:`PER_KIND` (one of each of the four kinds, so four
  negatives per gold reply) to keep training in minutes on a CPU: with five of each, the frozen
  vectors to compute would grow from about 4 to 16 per context.

  A "negative" that is the gold reply's very text (a shuffled one-word reply, a word drop that
  dropped nothing, a random utterance that is also "Yes .") is left out of the loss: it is not
  a negative. The paper's description does not say what it did with these.

Substitutions (named in the column, "(MiniLM)", and in ``config.json``): frozen all-MiniLM-L6-v2
sentence vectors (d = 384) for BERT-base's [CLS] (d = 768); words are whitespace-separated
tokens of the text as given (DailyDialog separates punctuation, so "." counts as a word).
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch
from torch import nn
from torch.nn.utils.rnn import pack_padded_sequence, pad_packed_sequence

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

SYSTEM = "maude"
COLUMN = "MaUde (MiniLM)"
SYNTACTIC = ("word_order", "word_drop", "word_repeat")
DROP_RATE = 0.15
PER_KIND = 1
DOWN_DIM, DECODER_HIDDEN, DROPOUT = 300, 200, 0.2
CHUNK = 256  # contexts per forward pass when scoring and validating

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

    def score(self, contexts: torch.Tensor, replies: torch.Tensor) -> torch.Tensor:
        """Logits (b,) of encoded contexts (b, down) and reply vectors (b, d)."""
        h, r = contexts, replies @ self.down
        return self.decoder(torch.cat([h, r, (h - r).abs(), h * r], dim=-1)).squeeze(-1)

    def forward(self, utterances: torch.Tensor, counts: torch.Tensor, replies: torch.Tensor) -> torch.Tensor:
        return self.score(self.encode_context(utterances, counts), replies)


def context_rows(vectors: VectorTable, contexts: list[list[str]]) -> tuple[torch.Tensor, torch.Tensor]:
    """(n, most turns) table rows of each context's utterances, padded with row 0, and (n,) turn
    counts; an empty context reads as one empty turn."""
    turns = [list(c) if len(c) else [""] for c in contexts]
    ids = torch.zeros((len(turns), max(len(t) for t in turns)), dtype=torch.long)
    for i, context in enumerate(turns):
        ids[i, : len(context)] = vectors.rows(context)
    return ids, torch.tensor([len(t) for t in turns])


def logits(
    model: MaUdeModel, table: torch.Tensor, context_ids: torch.Tensor, counts: torch.Tensor, replies: torch.Tensor
) -> torch.Tensor:
    """(n,) logits of replies (table rows) after contexts (table rows ``context_ids`` (n, t), ``counts`` turns),
    in chunks of :data:`CHUNK` contexts, each padded to its own longest."""
    out = []
    with torch.inference_mode():
        for i in range(0, len(replies), CHUNK):
            ids, n = context_ids[i : i + CHUNK], counts[i : i + CHUNK]
            out.append(model(table[ids[:, : int(n.max())]], n, table[replies[i : i + CHUNK]]))
    return torch.cat(out) if out else torch.zeros(0)


def nce_loss(
    model: MaUdeModel,
    table: torch.Tensor,
    context_ids: torch.Tensor,
    counts: torch.Tensor,
    golds: torch.Tensor,
    negatives: torch.Tensor,
    reduction: str = "mean",
):
    """Binary cross-entropy of the gold replies (b,) as 1 and their negatives (b, k) as 0, all as
    table rows, after contexts (table rows ``context_ids`` (b, t), ``counts`` (b,) turns). A negative
    with its gold reply's text (the same row) is left out. With ``reduction="sum"``: (sum, terms)."""
    k = negatives.shape[1]
    contexts = model.encode_context(table[context_ids[:, : int(counts.max())]], counts)  # once, not 1 + k times
    replies = table[torch.cat([golds, negatives.T.reshape(-1)])]
    scores = model.score(contexts.repeat(1 + k, 1), replies)
    labels = torch.cat([torch.ones(len(golds)), torch.zeros(len(golds) * k)])
    keep = torch.cat([torch.ones(len(golds), dtype=torch.bool), (negatives != golds[:, None]).T.reshape(-1)])
    loss = nn.functional.binary_cross_entropy_with_logits(scores[keep], labels[keep], reduction=reduction)
    return loss if reduction == "mean" else (loss.item(), int(keep.sum()))


def _texts(contexts: list[list[str]], replies: list[str]) -> list[str]:
    """Every utterance to embed: the contexts' turns (an empty context as one empty turn) and the replies."""
    return [t for c in contexts for t in (c if len(c) else [""])] + list(replies)


@dataclass
class _Pairs:
    """The training or validation pairs as rows of the frozen vectors' table: contexts (ids, counts), gold replies
    (n,) and their negatives (n, k)."""

    context_ids: torch.Tensor
    counts: torch.Tensor
    gold: torch.Tensor
    negatives: torch.Tensor


def _vector_pairs(data_dir, limit: int, seed: int, encoder: str, cache_dir) -> tuple[VectorTable, _Pairs, _Pairs]:
    """DailyDialog's train and validation pairs (the first ``limit`` and at most 2,000), embedded once, with their
    syntactic negatives (validation: a random utterance too, fixed)."""
    from density_train.data.corpora import load_dailydialog, response_pairs

    contexts, replies = response_pairs(load_dailydialog(Path(data_dir), "train"))
    v_contexts, v_replies = response_pairs(load_dailydialog(Path(data_dir), "validation"))
    if limit:
        contexts, replies = contexts[:limit], replies[:limit]
    v_limit = min(limit, 2000) if limit else 2000
    v_contexts, v_replies = v_contexts[:v_limit], v_replies[:v_limit]
    corrupt, v_corrupt = syntactic_negatives(replies, seed), syntactic_negatives(v_replies, seed + 1)
    texts = _texts(contexts, replies) + _texts(v_contexts, v_replies)
    texts += [t for row in corrupt + v_corrupt for t in row]
    vectors = VectorTable(embed_texts(texts, encoder, "mean", normalize=True, cache_dir=cache_dir))
    negatives = torch.stack([vectors.rows(row) for row in corrupt])  # (n, k) table rows
    v_gold = vectors.rows(v_replies)
    v_random = v_gold[torch.from_numpy(np.random.default_rng(seed + 2).permutation(len(v_gold)))]
    v_negatives = torch.cat([torch.stack([vectors.rows(row) for row in v_corrupt]), v_random[:, None]], 1)
    training = _Pairs(*context_rows(vectors, contexts), vectors.rows(replies), negatives)
    return vectors, training, _Pairs(*context_rows(vectors, v_contexts), v_gold, v_negatives)


def _epoch(model, optimizer, table, pairs: _Pairs, rng: np.random.Generator, batch_size: int) -> float:
    """One epoch of NCE steps in a fresh order, each context with its syntactic negatives and a fresh random
    utterance; the mean loss."""
    order = torch.from_numpy(rng.permutation(len(pairs.gold)))
    randoms = pairs.gold[torch.from_numpy(rng.integers(0, len(pairs.gold), len(pairs.gold)))]
    losses = []
    for start in range(0, len(order), batch_size):
        part = order[start : start + batch_size]
        negs = torch.cat([pairs.negatives[part], randoms[part][:, None]], 1)
        loss = nce_loss(model, table, pairs.context_ids[part], pairs.counts[part], pairs.gold[part], negs)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
    return float(np.mean(losses))


def _valid_loss(model, table, pairs: _Pairs) -> float:
    """The NCE loss on the validation pairs and their fixed negatives, per term."""
    total, terms = 0.0, 0
    with torch.inference_mode():
        for i in range(0, len(pairs.gold), CHUNK):  # in chunks: 1 + k replies per context
            part = slice(i, i + CHUNK)
            loss, n = nce_loss(
                model,
                table,
                pairs.context_ids[part],
                pairs.counts[part],
                pairs.gold[part],
                pairs.negatives[part],
                "sum",
            )
            total, terms = total + loss, terms + n
    return total / terms


def _gold_above_negative(model, table, pairs: _Pairs) -> dict[str, float]:
    """Per negative kind: the share of validation contexts whose gold outscores it (a negative equal to the gold
    left out)."""
    gold_scores = logits(model, table, pairs.context_ids, pairs.counts, pairs.gold)
    accuracy = {}
    for j, kind in enumerate([*SYNTACTIC, "random_utterance"]):
        distinct = pairs.negatives[:, j] != pairs.gold
        negative_scores = logits(
            model, table, pairs.context_ids[distinct], pairs.counts[distinct], pairs.negatives[distinct, j]
        )
        accuracy[kind] = float((gold_scores[distinct] > negative_scores).float().mean())
    return accuracy


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
    cache_dir: str | Path | None = None,
) -> dict:
    """Train on DailyDialog train with NCE; early-stop on the validation loss (fixed negatives).
    ``down_dim`` and ``decoder_hidden`` are the paper's 300 and 200 unless given (tests shrink them).
    With ``cache_dir``, the frozen vectors are kept there for a retrain (:func:`.common.embed_texts`)."""
    started = time.perf_counter()
    torch.manual_seed(seed)
    rng = np.random.default_rng(seed)
    vectors, pairs, valid = _vector_pairs(data_dir, limit, seed, encoder, cache_dir)
    table = vectors.table
    model = MaUdeModel(table.shape[1], down_dim, decoder_hidden)
    optimizer = torch.optim.Adam(model.parameters(), lr=lr)
    history = early_stopping(
        lambda epoch: _epoch(model, optimizer, table, pairs, rng, batch_size),
        lambda: _valid_loss(model, table, valid),
        model,
        epochs,
        patience,
        desc="MaUde",
    )
    accuracy = _gold_above_negative(model, table, valid)
    config = {
        "system": SYSTEM,
        "encoder": encoder,
        "encoder_note": ENCODER_NOTE,
        "dim": int(table.shape[1]),
        "down_dim": down_dim,
        "decoder_hidden": decoder_hidden,
        "dropout": DROPOUT,
        "negatives_per_context": {**{kind: PER_KIND for kind in SYNTACTIC}, "random_utterance": 1},
        "train_pairs": len(pairs.gold),
        "valid_pairs": len(valid.gold),
        "valid_gold_above_negative": accuracy,
        "hyperparameters": {"batch_size": batch_size, "lr": lr, "max_epochs": epochs, "patience": patience},
        "seed": seed,
        **history,
        "seconds": round(time.perf_counter() - started, 1),
        "command": command,
    }
    save_weights(out, model.state_dict(), config)
    logger.info("MaUde: best epoch %d, validation gold above negative %s", config["best_epoch"], accuracy)
    return config


class MaUdeColumns:
    """The trained model as a meta-evaluation column: sigmoid score, higher is better."""

    supervised = False

    def __init__(self, weights_dir: str | Path):
        state, self.config = load_weights(weights_dir, SYSTEM)
        c = self.config
        try:
            self.model = MaUdeModel(int(c["dim"]), int(c["down_dim"]), int(c["decoder_hidden"]), float(c["dropout"]))
            self.encoder = str(c["encoder"])
        except (KeyError, TypeError, ValueError) as err:
            raise ValueError(f"{Path(weights_dir) / 'config.json'}: missing or malformed field ({err!r})") from None
        load_state_checked(self.model, state, Path(weights_dir) / WEIGHTS_FILE)
        self.model.eval()

    def reports(self, set_name: str, protocol: str) -> bool:
        return True

    def __call__(
        self, contexts: list[list[str]], responses: list[str], references: list[str] | None = None
    ) -> dict[str, np.ndarray]:
        """{column: (n,) float64 in (0, 1)}; ``references`` are not used (MaUde is unreferenced)."""
        contexts = [[c] if isinstance(c, str) else list(c) for c in contexts]
        vectors = VectorTable(embed_texts(_texts(contexts, responses), self.encoder, "mean", normalize=True))
        context_ids, counts = context_rows(vectors, contexts)
        scores = torch.sigmoid(logits(self.model, vectors.table, context_ids, counts, vectors.rows(responses)))
        return {COLUMN: scores.double().numpy()}


def load(weights_dir: str | Path) -> MaUdeColumns:
    return MaUdeColumns(weights_dir)
