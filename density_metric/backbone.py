"""Loading the transformers backbone: the one place that calls ``from_pretrained``.

Scoring, fitting, training and the benchmarks all load an encoder (``BertModel`` without its
pooler: the score reads the final-layer [CLS], never the pooler) and its tokenizer here.
"""

from __future__ import annotations

import contextlib
import os

import torch


@contextlib.contextmanager
def quiet_transformers():
    """Silence transformers' load reports and weight-loading bar for the duration."""
    from transformers.utils import logging as hf_logging

    verbosity, bars = hf_logging.get_verbosity(), hf_logging.is_progress_bar_enabled()
    hf_logging.set_verbosity_error()
    hf_logging.disable_progress_bar()
    try:
        yield
    finally:
        hf_logging.set_verbosity(verbosity)
        if bars:
            hf_logging.enable_progress_bar()


def load_backbone(path: os.PathLike | str, *, dtype: torch.dtype = torch.float32):
    """(model, tokenizer) at ``path`` (a directory or Hub id), the model without pooling layer, in ``dtype``.

    transformers 5 keeps a checkpoint's stored dtype unless told, so ``dtype`` is always passed:
    a float16 checkpoint is read into float32 weights by default.
    """
    from transformers import AutoModel, AutoTokenizer

    with quiet_transformers():
        tokenizer = AutoTokenizer.from_pretrained(path)
        model = AutoModel.from_pretrained(path, add_pooling_layer=False, dtype=dtype)
    return model, tokenizer
