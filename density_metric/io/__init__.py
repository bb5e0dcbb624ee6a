"""What comes in and goes out: the inputs given to ``score()``, tables read and written, output files.

- :mod:`~density_metric.io.inputs`: the checks of the pairs and dialogues given to ``score()`` (a ValueError naming
  the field and the row);
- :mod:`~density_metric.io.tables`: JSONL / CSV / parquet tables read, checked and scored row by row;
- :mod:`~density_metric.io.csv_cells`: a CSV's empty unquoted cell, a missing value;
- :mod:`~density_metric.io.table_writer`: tables written back, whole or not at all;
- :mod:`~density_metric.io.outputs`: output files (symlink targets, temporary names, the check that a path can be
  written).

This package re-exports nothing, so that importing one module (``scoring`` imports ``inputs``) loads no other.
"""
