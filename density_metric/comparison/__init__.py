"""Comparing systems: which is better, and is it significant?

- :mod:`~density_metric.comparison.significance`: the paired tests on score arrays (``density_metric.compare``):
  sacrebleu's paired bootstrap and approximate randomization, Holm's correction, bounded memory;
- :mod:`~density_metric.comparison.result`: what they return (:class:`~density_metric.ComparisonResult`) and its
  tables;
- :mod:`~density_metric.comparison.systems`: system files read, checked (one scorer: :mod:`density_metric.signature`),
  scored where they have no scores and compared (``DensityScorer.compare`` and the ``compare`` command, whose options
  and run are :mod:`density_metric.cli.compare`'s).

Each name has one import path, its module's; this package re-exports nothing (``density_metric`` exports
``compare`` and ``ComparisonResult``). Named ``comparison``, not ``compare``: ``density_metric.compare`` is the
function.
"""
