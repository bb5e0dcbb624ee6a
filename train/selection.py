"""Which evaluation a run keeps in best/: ``--select-on`` names one validation metric, or several
joined by ``+`` (their mean), and ``--select-floor METRIC=VALUE`` keeps out every evaluation whose
METRIC is below VALUE. Example, the parrot pilot's rule: the highest mean density AUC over echo,
speaker and repeat among evaluations whose `dev` Spearman is at least 52.36::

    --select-on auc_density/echo+auc_density/speaker+auc_density/repeat
    --select-floor zhao_dev_spearman=52.36

Read by the trainer (at each evaluation) and by ``train/run.py`` (which evaluation the card and the
fit describe), so the two cannot disagree.
"""

from __future__ import annotations

import math


def selection_metrics(select_on: str) -> list[str]:
    """The metric names of ``--select-on`` (one, or several joined by ``+``)."""
    names = [name.strip() for name in select_on.split("+")]
    if not all(names):
        raise ValueError(f"--select-on {select_on!r}: an empty metric name (write NAME or NAME+NAME+...)")
    return names


def parse_floor(select_floor: str) -> tuple[str, float] | None:
    """``"METRIC=VALUE"`` as (METRIC, VALUE); ``""`` as None."""
    if not select_floor:
        return None
    name, sep, value = select_floor.partition("=")
    try:
        bound = float(value)
    except ValueError:
        bound = math.nan
    if not sep or not name.strip() or not math.isfinite(bound):
        raise ValueError(f"--select-floor {select_floor!r} must be METRIC=VALUE with a finite VALUE")
    return name.strip(), bound


def required_metrics(select_on: str, select_floor: str) -> list[str]:
    """Every metric the selection reads: the run must log them all."""
    floor = parse_floor(select_floor)
    return selection_metrics(select_on) + ([floor[0]] if floor else [])


def selection_value(metrics: dict, select_on: str, select_floor: str = "") -> float:
    """The mean of the ``--select-on`` metrics, or -inf where the floor's metric is below its value
    (higher is better; an evaluation at -inf is never kept)."""
    floor = parse_floor(select_floor)
    if floor and metrics[floor[0]] < floor[1]:
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
        text += f" among the evaluations whose {names.get(floor[0], f'`{floor[0]}`')} was at least {floor[1]:g}"
    return text
