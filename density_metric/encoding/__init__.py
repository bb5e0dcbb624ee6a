"""From a (context, response) pair to its feature g(c, r): tokens, rows, and the encoder.

Which call for what:

- Score or fit: ``encoder = Encoder.load(path, pair_format)`` (or ``Encoder(model, tokenizer, pair_format)``),
  ``packing = encoder.encode(contexts, responses)``, then ``encoder.features(packing)`` (n, d) in input order.
  ``encode(..., group=False)`` reads one row per pair (grouping, the default, reads a repeated context once per
  row of its responses in the shared-context layout); ``features(..., each_batch=f)`` hands every batch to ``f``
  instead of holding (n, d). The packing also tells, per pair, what truncation cut (``packing.truncation()``) and
  the reply's ids (``packing.reply_ids()``): the scorer's flags read the tokens the features were computed from.
- Rows without an encoder (training's evaluation, a token store's check): ``pack(pair_format, tokenizer, contexts,
  candidates)``, candidates per context; ``rows_to_batch`` pads rows into model inputs and ``batch_features`` runs
  a model on them.
- Ids of pairs as lists (the 0.1 API): ``encode_pairs``.

The modules, each below the next: ``length_options`` (the scoring options that change a format's lengths),
``text_ids`` (each distinct text tokenised once; contexts read from their newest turn back), ``pair_format`` (what
a row holds: the template, the budgets, the checkpoint's stored format), ``packing`` (rows of many pairs by numpy
gathers), ``last_layer`` (the last BERT layer for the feature tokens only), ``device`` (device and dtype), and
``features`` (the :class:`Encoder`). A pair's contexts go one way: ``features`` -> ``packing`` -> ``text_ids``.
"""

from .features import Encoder, batch_features, rows_to_batch
from .packing import PackedRows, Packing, encode_pairs, pack, pack_pairs
from .pair_format import PairFormat, join_context

__all__ = [
    "Encoder",
    "Packing",
    "PackedRows",
    "PairFormat",
    "batch_features",
    "encode_pairs",
    "join_context",
    "pack",
    "pack_pairs",
    "rows_to_batch",
]
