"""A checkpoint on disk: what it holds, how it is checked, and where it comes from.

- :mod:`~density_metric.checkpoint.format`: the layout, ``density_config.json`` (:class:`~density_metric.DensityConfig`)
  and a whole checkpoint saved and loaded (``save_checkpoint``, ``load_checkpoint``);
- :mod:`~density_metric.checkpoint.tensors`: its safetensors files (the Gaussian with the repetition term, the head,
  the rating head), written and read with the same checks;
- :mod:`~density_metric.checkpoint.fingerprint`: the encoder fingerprint that ties the Gaussian to its encoder and
  pair format, and the content hash of a local checkpoint;
- :mod:`~density_metric.checkpoint.sources`: where a checkpoint comes from (bundled, local or the Hub:
  ``resolve_checkpoint``).

This package re-exports nothing: each name has its module's import path (``density_metric`` exports the public
ones).
"""
