"""The last BERT layer computed for the [CLS] position only.

The score reads nothing but [CLS] from the last layer, so its other positions can be passed
through untouched: this skips the query, output and feed-forward work of every other token
there (about 14 % of a 6-layer encoder's arithmetic). Keys and values still see every token,
so [CLS] is exactly what the full layer computes.

This patches ``BertLayer.forward`` and uses transformers internals (its attention-function
registry, ``eager_attention_forward`` and ``config._attn_implementation``). It is applied only
to the transformers versions and layer class it was written against; anything else keeps
the full model, with a logged warning.
"""

from __future__ import annotations

import logging
import types

import torch

logger = logging.getLogger(__name__)

# The transformers major versions whose BertLayer / attention internals this was checked on.
SUPPORTED_TRANSFORMERS_MAJOR = (5,)


def _cls_only_forward(layer, hidden_states: torch.Tensor, attention_mask: torch.Tensor | None = None, *args, **kwargs):
    """``BertLayer.forward`` for [CLS] alone; the other positions come back as they went in."""
    from transformers.modeling_utils import ALL_ATTENTION_FUNCTIONS
    from transformers.models.bert.modeling_bert import eager_attention_forward

    attention = layer.attention.self
    batch, length = hidden_states.shape[:2]
    cls = hidden_states[:, :1]
    heads = (batch, -1, attention.attention_head_size)
    query = attention.query(cls).view(batch, 1, *heads[1:]).transpose(1, 2)
    key = attention.key(hidden_states).view(batch, length, *heads[1:]).transpose(1, 2)
    value = attention.value(hidden_states).view(batch, length, *heads[1:]).transpose(1, 2)
    if attention_mask is not None and attention_mask.dim() == 4:
        attention_mask = attention_mask[:, :, :1, :]
    interface = ALL_ATTENTION_FUNCTIONS.get_interface(attention.config._attn_implementation, eager_attention_forward)
    context, _ = interface(attention, query, key, value, attention_mask, dropout=0.0, scaling=attention.scaling)
    attended = layer.attention.output(context.reshape(batch, 1, -1), cls)
    return torch.cat([layer.output(layer.intermediate(attended), attended), hidden_states[:, 1:]], dim=1)


def _unsupported_reason(model) -> str | None:
    import transformers

    major = int(transformers.__version__.split(".")[0])
    if major not in SUPPORTED_TRANSFORMERS_MAJOR:
        return f"transformers {transformers.__version__} (checked on {SUPPORTED_TRANSFORMERS_MAJOR} only)"
    layers = getattr(getattr(model, "encoder", None), "layer", None)
    if not layers or type(layers[-1]).__name__ != "BertLayer":
        return f"{type(model).__name__} has no BertLayer as its last layer"
    if model.config.is_decoder:
        return "the model is a decoder"
    try:
        from transformers.modeling_utils import ALL_ATTENTION_FUNCTIONS  # noqa: F401
        from transformers.models.bert.modeling_bert import eager_attention_forward  # noqa: F401
    except ImportError as err:
        return f"transformers internals moved ({err})"
    return None


def compute_cls_only_in_last_layer(model) -> bool:
    """Make an inference-only BERT model compute its last layer for [CLS] alone.

    Returns False, leaving the model whole and logging a warning, where the patch does not apply.
    """
    reason = _unsupported_reason(model)
    if reason is not None:
        logger.warning("computing the full last layer (slower, same scores): %s", reason)
        return False
    layer = model.encoder.layer[-1]
    layer.forward = types.MethodType(_cls_only_forward, layer)
    return True
