"""Tiny random-weight BERT encoders and synthetic pairs, built in code (no download, no real model)."""

from __future__ import annotations

import contextlib
import string
import time

import numpy as np
import torch

WORDS = "hi hello how are you fine thanks what do the a is it to and i good day weather nice".split()
SPECIALS = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]


@contextlib.contextmanager
def one_thread():
    """torch on one thread inside the block (a training whose result a test pins), the worker's count restored after."""
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        yield
    finally:
        torch.set_num_threads(before)


def tiny_vocab() -> list[str]:
    chars = list(string.ascii_lowercase + string.digits + string.punctuation)
    return SPECIALS + WORDS + chars + ["##" + c for c in chars]


def build_tiny_encoder(directory, initializer_range: float = 0.2):
    """A 2-layer, 32-dim random BERT and its WordPiece tokenizer, saved to ``directory``."""
    from transformers import BertConfig, BertModel, BertTokenizer

    directory.mkdir(parents=True, exist_ok=True)
    vocab = directory / "vocab.txt"
    vocab.write_text("\n".join(tiny_vocab()) + "\n", encoding="utf-8")
    tokenizer = BertTokenizer(vocab=str(vocab), do_lower_case=True)
    assert tokenizer.tokenize("hi you") == ["hi", "you"], "tiny vocabulary was not loaded"
    torch.manual_seed(0)
    config = BertConfig(
        vocab_size=len(tiny_vocab()),
        hidden_size=32,
        num_hidden_layers=2,
        num_attention_heads=2,
        intermediate_size=64,
        max_position_embeddings=128,
        # At the default 0.02 a random encoder's [CLS] barely depends on its input (std ~1e-3).
        initializer_range=initializer_range,
    )
    model = BertModel(config, add_pooling_layer=False).eval()
    return model, tokenizer


def synthetic_pairs(n: int, seed: int) -> tuple[list[list[str]], list[str]]:
    rng = np.random.default_rng(seed)

    def sentence():
        return " ".join(rng.choice(WORDS, size=rng.integers(1, 12)))

    contexts = [[sentence() for _ in range(rng.integers(1, 4))] for _ in range(n)]
    return contexts, [sentence() for _ in range(n)]


class SlowEncodes:
    """A Rust tokenizer whose ``encode_batch`` first waits 50 ms: where nothing holds other threads off between a
    call's options and its encoding, another thread's options land in between."""

    def __init__(self, inner):
        object.__setattr__(self, "_inner", inner)

    def __getattr__(self, name):
        return getattr(self._inner, name)

    def __setattr__(self, name, value):
        setattr(self._inner, name, value)

    def encode_batch(self, *args, **kwargs):
        time.sleep(0.05)
        return self._inner.encode_batch(*args, **kwargs)


def slow_encodes(tokenizer) -> None:
    """Make ``tokenizer`` (a transformers fast tokenizer) wait 50 ms before each encoding (:class:`SlowEncodes`)."""
    tokenizer._tokenizer = SlowEncodes(tokenizer._tokenizer)
