"""Command line: ``python -m density_metric score INPUT -o OUTPUT`` (``-`` for standard input or output; or
``--contexts FILE --responses FILE``, line-aligned text), ``compare A B [C ...]`` (its tables and
statistics: :mod:`density_metric.comparison`) and ``install``.

One module a command (:mod:`.score`, :mod:`.compare`, :mod:`.install`), the options they share (:mod:`.options`)
and the parser with the entry point (:mod:`.parser`: :func:`main`, the ``density-metric`` console script).

Arguments, the torchrun start-up (one process group, one device per rank) and messages live here;
tables are read, checked, scored and written by :mod:`density_metric.io.tables`. A problem with the
input, the output path or the options (a ValueError of the library included) is one
``error: ...`` line on stderr and exit code 2. Ctrl-C is ``interrupted; no output written`` and
exit code 130.

What is on disk: OUTPUT is written whole or not at all (``tables.write_records``): to a temporary
file beside it, renamed over it when complete. Every option (the checkpoint, the device, the dtype
for that device, the lengths) and the output path are checked before any scoring, and an earlier
OUTPUT is never removed up front: a run that fails or is stopped leaves it as it was. No output replaces an input:
OUTPUT is never an input file, an --output-field column never an input column (but an earlier score of that field),
and ``compare --json`` never a system file or any existing file but an earlier report.
"""

from .parser import build_parser, main, program_name

__all__ = ["build_parser", "main", "program_name"]
