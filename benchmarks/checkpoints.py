"""Checkpoints named on a command line as ``LABEL=PATH`` (the scripts under ``results/`` that put several
checkpoints side by side)."""

from collections.abc import Iterable


def named_checkpoints(args: Iterable[str]) -> dict[str, str]:
    """``LABEL=PATH`` arguments as ``{label: path}``, in the order given. A malformed argument (no ``=``, an empty
    label or path) or a label given twice stops the script with a message that names the argument; the path itself
    is checked where the checkpoint loads, whose error names the file."""
    named: dict[str, str] = {}
    for position, arg in enumerate(args, start=1):
        label, sep, path = arg.partition("=")
        if not (sep and label and path):
            raise SystemExit(
                f"argument {position} ({arg!r}): expected LABEL=PATH, for example shipped=density_metric/default"
            )
        if label in named:
            raise SystemExit(f"argument {position} ({arg!r}): the label {label!r} is already given to {named[label]}")
        named[label] = path
    return named
