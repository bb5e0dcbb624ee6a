"""The last BERT layer computed for the feature positions only ([CLS], or each candidate's first token).

The score reads nothing but the features from the last layer, so its other positions can be passed
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


def _feature_only_forward(
    layer,
    hidden_states: torch.Tensor,
    attention_mask: torch.Tensor | None = None,
    *args,
    feature_index: torch.Tensor | None = None,
    **kwargs,
):
    """``BertLayer.forward`` for the feature positions alone; every other position comes back as it went in.

    ``feature_index`` (b, k) int64 names each row's feature positions (the shared-context layout);
    None is [CLS] alone. Dropout is applied as the full layer applies it, so this serves training too.
    """
    from transformers.modeling_utils import ALL_ATTENTION_FUNCTIONS
    from transformers.models.bert.modeling_bert import eager_attention_forward

    attention = layer.attention.self
    batch, length, width = hidden_states.shape
    if feature_index is None:
        selected = hidden_states[:, :1]
    else:
        selected = torch.gather(hidden_states, 1, feature_index[..., None].expand(-1, -1, width))
    count, head_size = selected.shape[1], attention.attention_head_size
    query = attention.query(selected).view(batch, count, -1, head_size).transpose(1, 2)
    key = attention.key(hidden_states).view(batch, length, -1, head_size).transpose(1, 2)
    value = attention.value(hidden_states).view(batch, length, -1, head_size).transpose(1, 2)
    if attention_mask is not None and attention_mask.dim() == 4 and attention_mask.shape[2] > 1:
        if feature_index is None:
            attention_mask = attention_mask[:, :, :1, :]
        else:  # the mask rows of the feature positions: (b, h, k, length)
            rows = feature_index[:, None, :, None].expand(-1, attention_mask.shape[1], -1, attention_mask.shape[3])
            attention_mask = torch.gather(attention_mask, 2, rows)
    interface = ALL_ATTENTION_FUNCTIONS.get_interface(attention.config._attn_implementation, eager_attention_forward)
    dropout = attention.dropout.p if attention.training else 0.0
    context, _ = interface(attention, query, key, value, attention_mask, dropout=dropout, scaling=attention.scaling)
    attended = layer.attention.output(context.reshape(batch, count, -1), selected)
    computed = layer.output(layer.intermediate(attended), attended)
    if feature_index is None:
        return torch.cat([computed, hidden_states[:, 1:]], dim=1)
    return hidden_states.scatter(1, feature_index[..., None].expand(-1, -1, width), computed)


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
    """Make a BERT model compute its last layer for the feature positions alone: [CLS], or the
    positions given as ``model(..., feature_index=(b, k) int64)``. For scoring and training alike.

    Returns False, leaving the model whole and logging a warning, where the patch does not apply.
    """
    reason = _unsupported_reason(model)
    if reason is not None:
        logger.warning("computing the full last layer (slower, same scores): %s", reason)
        return False
    layer = model.encoder.layer[-1]
    layer.forward = types.MethodType(_feature_only_forward, layer)
    return True


def computes_features_only(model) -> bool:
    """Whether :func:`compute_cls_only_in_last_layer` patched ``model``: its last layer then returns
    every position but the feature tokens as it received them."""
    layers = getattr(getattr(model, "encoder", None), "layer", None)
    forward = getattr(layers[-1], "forward", None) if layers else None
    return getattr(forward, "__func__", None) is _feature_only_forward
