"""Which evaluation a run keeps in best/: ``--select-on`` names one validation metric, or several
joined by ``+`` (their mean), and ``--select-floor METRIC=VALUE`` keeps out every evaluation whose
METRIC is below VALUE. Example, the parrot pilot's rule: the highest mean density AUC over echo,
speaker and repeat among evaluations whose `dev` Spearman is at least 52.36::

    --select-on auc_density/echo+auc_density/speaker+auc_density/repeat
    --select-floor zhao_dev_spearman=52.36

A fine-tune's floor can also be relative to its own start: ``METRIC=start-1`` keeps out every
evaluation whose METRIC is more than 1 below the run's step-0 evaluation (``--eval-at-start``, the
same validation draws), which a fixed number cannot know before the run.

Read by the trainer (:func:`check_selection` before the first evaluation, :func:`select` at each) and by
``train/commands/train.py`` (which evaluation the card and the fit describe), so the two cannot disagree.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from typing import NamedTuple


def selection_metrics(select_on: str) -> list[str]:
    """The metric names of ``--select-on`` (one, or several joined by ``+``)."""
    names = [name.strip() for name in select_on.split("+")]
    if not all(names):
        raise ValueError(f"--select-on {select_on!r}: an empty metric name (write NAME or NAME+NAME+...)")
    return names


class Floor(NamedTuple):
    metric: str
    value: float  # the bound, or the offset from the start's value where from_start
    from_start: bool


def parse_floor(select_floor: str) -> Floor | None:
    """``"METRIC=VALUE"`` or ``"METRIC=start-OFFSET"`` (also ``start+OFFSET``, ``start``) as a
    :class:`Floor`; ``""`` as None."""
    if not select_floor:
        return None
    name, sep, value = select_floor.partition("=")
    relative = re.fullmatch(r"start([+-].*)?", "".join(value.split()))
    try:
        bound = float((relative.group(1) or "0") if relative else value)
    except ValueError:
        bound = math.nan
    if not sep or not name.strip() or not math.isfinite(bound):
        raise ValueError(
            f"--select-floor {select_floor!r} must be METRIC=VALUE with a finite VALUE, or METRIC=start-OFFSET"
        )
    return Floor(name.strip(), bound, relative is not None)


def required_metrics(select_on: str, select_floor: str) -> list[str]:
    """Every metric the selection reads: the run must log them all."""
    floor = parse_floor(select_floor)
    return selection_metrics(select_on) + ([floor.metric] if floor else [])


def selection_value(metrics: dict, select_on: str, select_floor: str = "", start: dict | None = None) -> float:
    """The mean of the ``--select-on`` metrics, or -inf where the floor's metric is below its value
    (higher is better; an evaluation at -inf is never kept). ``start``, the run's step-0 evaluation,
    sets a relative floor's bound."""
    floor = parse_floor(select_floor)
    if floor:
        bound = floor.value
        if floor.from_start:
            if start is None:
                raise ValueError(f"--select-floor {select_floor!r} needs the run's step-0 evaluation (--eval-at-start)")
            bound += float(start[floor.metric])
        if metrics[floor.metric] < bound:
            return -math.inf
    names = selection_metrics(select_on)
    return sum(float(metrics[name]) for name in names) / len(names)


def describe(select_on: str, select_floor: str, names: dict[str, str]) -> str:
    """The card's words: ``names`` gives readable names for some metrics."""
    metrics = selection_metrics(select_on)
    words = [names.get(name, f"`{name}`") for name in metrics]
    text = words[0] if len(words) == 1 else "mean of " + ", ".join(words)
    floor = parse_floor(select_floor)
    if floor:
        name = names.get(floor.metric, f"`{floor.metric}`")
        if not floor.from_start:
            bound = f"{floor.value:g}"
        elif floor.value:
            bound = f"its value at the start (step 0) {'+' if floor.value > 0 else '-'} {abs(floor.value):g}"
        else:
            bound = "its value at the start (step 0)"
        text += f" among the evaluations whose {name} was at least {bound}"
    return text


def check_selection(select_on: str, select_floor: str, names: Sequence[str]) -> None:
    """Before training: a ValueError naming the flag unless every metric the selection reads is one of ``names``,
    the metrics the run's evaluations log."""
    for name in required_metrics(select_on, select_floor):
        if name not in names:
            flag = "--select-on" if name in selection_metrics(select_on) else "--select-floor"
            raise ValueError(f"{flag} {name!r} is not a validation metric of this run; metrics: {', '.join(names)}")


def select(metrics: dict, select_on: str, select_floor: str, progress: dict) -> bool:
    """Whether the evaluation ``metrics`` is the run's best so far, by :func:`selection_value`: if so,
    ``progress["best"]`` becomes its value. At ``progress["global_step"]`` 0 (the start, which a relative
    ``--select-floor`` reads) the selection's metrics are kept in ``progress["start"]``."""
    names = required_metrics(select_on, select_floor)
    missing = [name for name in names if name not in metrics]
    if missing:
        raise ValueError(f"the selection reads {missing}, which are not validation metrics: {sorted(metrics)}")
    if progress["global_step"] == 0:
        progress["start"] = {name: metrics[name] for name in names}
    value = selection_value(metrics, select_on, select_floor, progress.get("start"))
    if value <= progress["best"]:
        return False
    progress["best"] = value
    return True
