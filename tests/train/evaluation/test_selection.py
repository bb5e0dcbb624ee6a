"""Which evaluation a run keeps: one metric, the mean of several, and a floor on another, fixed or
relative to the run's start."""

import math

import pytest

from density_train.commands.card import SELECTION_NAMES
from density_train.config.recipe import TrainConfig
from density_train.evaluation.model_selection import describe, parse_floor, required_metrics, selection_value

EVALS = [  # the parrot release's four evaluations (results/releases/2026-11-25-copy-margin/log.jsonl), rounded
    {"step": 600, "zhao_dev_spearman": 55.56, "auc_density/echo": 0.808, "auc_density/speaker": 0.748},
    {"step": 1200, "zhao_dev_spearman": 54.93, "auc_density/echo": 0.890, "auc_density/speaker": 0.858},
    {"step": 1800, "zhao_dev_spearman": 53.13, "auc_density/echo": 0.919, "auc_density/speaker": 0.883},
    {"step": 2400, "zhao_dev_spearman": 54.34, "auc_density/echo": 0.919, "auc_density/speaker": 0.894},
]


def kept(select_on, select_floor=""):
    return max(EVALS, key=lambda r: selection_value(r, select_on, select_floor))["step"]


def test_one_metric_the_mean_of_several_and_a_floor():
    assert kept("zhao_dev_spearman") == 600
    assert selection_value(EVALS[3], "auc_density/echo+auc_density/speaker") == pytest.approx((0.919 + 0.894) / 2)
    assert kept("auc_density/echo+auc_density/speaker") == 2400
    assert kept("auc_density/echo+auc_density/speaker", "zhao_dev_spearman=54.5") == 1200  # 1,800 and 2,400 below
    assert kept("auc_density/echo + auc_density/speaker", " zhao_dev_spearman = 55") == 600  # spaces are allowed
    assert selection_value(EVALS[2], "auc_density/echo", "zhao_dev_spearman=54") == -math.inf
    assert selection_value(EVALS[2], "auc_density/echo", "zhao_dev_spearman=53.13") == 0.919  # at the floor: kept


CHAIN = [  # the last-turn chain's evaluations (results/experiments/last-turn-copies-longer/log.jsonl), rounded; step 0 is its start
    {"step": 0, "zhao_dev_spearman": 56.50, "auc_density/echo": 0.893, "auc_density/speaker": 0.879},
    {"step": 400, "zhao_dev_spearman": 53.87, "auc_density/echo": 0.925, "auc_density/speaker": 0.922},
    {"step": 800, "zhao_dev_spearman": 54.44, "auc_density/echo": 0.928, "auc_density/speaker": 0.923},
    {"step": 1200, "zhao_dev_spearman": 54.08, "auc_density/echo": 0.934, "auc_density/speaker": 0.926},
]


def test_a_floor_relative_to_the_start():
    select_on = "auc_density/echo+auc_density/speaker"

    def kept_of_chain(select_floor):
        return max(CHAIN, key=lambda r: selection_value(r, select_on, select_floor, start=CHAIN[0]))["step"]

    assert kept_of_chain("zhao_dev_spearman=52.36") == 1200  # the fixed floor, which the run used
    assert kept_of_chain("zhao_dev_spearman=start-1") == 0  # 55.50: every later evaluation is below it
    assert kept_of_chain("zhao_dev_spearman=start-2.5") == 1200  # 54.00: only step 400 is out
    assert kept_of_chain(" zhao_dev_spearman = start - 2.25 ") == 800  # 54.25: steps 400 and 1,200 are out
    assert selection_value(CHAIN[0], select_on, "zhao_dev_spearman=start", start=CHAIN[0]) == (0.893 + 0.879) / 2
    assert selection_value(CHAIN[0], select_on, "zhao_dev_spearman=start+0.5", start=CHAIN[0]) == -math.inf
    with pytest.raises(ValueError, match="needs the run's step-0 evaluation \\(--eval-at-start\\)"):
        selection_value(CHAIN[1], select_on, "zhao_dev_spearman=start-1")


def test_a_relative_floor_needs_an_evaluation_at_the_start():
    with pytest.raises(ValueError, match="relative to the run's step-0 evaluation: add --eval-at-start"):
        TrainConfig(select_floor="zhao_dev_spearman=start-1")
    TrainConfig(select_floor="zhao_dev_spearman=start-1", eval_at_start=True)


@pytest.mark.parametrize(
    "floor",
    [
        "zhao_dev_spearman",
        "=3",
        "zhao_dev_spearman=x",
        "zhao_dev_spearman=nan",
        "zhao_dev_spearman=start1",
        "zhao_dev_spearman=start-",
        "zhao_dev_spearman=start-inf",
    ],
)
def test_a_malformed_floor_is_refused_naming_the_flag(floor):
    with pytest.raises(ValueError, match="--select-floor .* must be METRIC=VALUE .* or METRIC=start-OFFSET"):
        parse_floor(floor)
    with pytest.raises(ValueError, match="--select-floor"):
        TrainConfig(select_floor=floor)


def test_an_empty_metric_name_is_refused():
    with pytest.raises(ValueError, match="--select-on 'recall_at_1\\+': an empty metric name"):
        TrainConfig(select_on="recall_at_1+")


def test_the_run_must_log_every_metric_the_selection_reads():
    assert required_metrics("a+b", "c=1") == ["a", "b", "c"]
    assert required_metrics("recall_at_1", "") == ["recall_at_1"]


def test_the_card_says_how_the_evaluation_was_chosen():
    assert describe("recall_at_1", "", SELECTION_NAMES) == "Recall@1"
    text = describe("auc_density/echo+auc_density/speaker", "zhao_dev_spearman=52.36", SELECTION_NAMES)
    assert text == (
        "mean of `auc_density/echo`, `auc_density/speaker` among the evaluations whose Spearman correlation "
        "with the human ratings of DailyDialog-Zhao's first 20 % (`dev`) was at least 52.36"
    )
    text = describe("recall_at_1", "zhao_dev_spearman=start-1", SELECTION_NAMES)
    assert text.endswith("(`dev`) was at least its value at the start (step 0) - 1")
    assert describe("recall_at_1", "mrr=start", SELECTION_NAMES).endswith(
        "was at least its value at the start (step 0)"
    )


def test_select_keeps_the_start_and_raises_the_best_only_for_a_higher_value():
    from density_train.evaluation.model_selection import check_selection, select

    progress = {"global_step": 0, "best": -math.inf}
    rule = ("recall_at_1+mrr", "mrr=start-0.1")
    assert select({"recall_at_1": 0.2, "mrr": 0.4, "auc_f/echo": 0.9}, *rule, progress)
    assert progress["start"] == {"recall_at_1": 0.2, "mrr": 0.4} and progress["best"] == pytest.approx(0.3)
    progress["global_step"] = 5
    assert not select({"recall_at_1": 0.9, "mrr": 0.25}, *rule, progress)  # below the floor (0.4 - 0.1): -inf
    assert not select({"recall_at_1": 0.1, "mrr": 0.45}, *rule, progress)  # the mean 0.275, not above 0.3
    assert select({"recall_at_1": 0.5, "mrr": 0.45}, *rule, progress) and progress["best"] == pytest.approx(0.475)
    assert progress["start"] == {"recall_at_1": 0.2, "mrr": 0.4}  # only step 0 sets it
    with pytest.raises(ValueError, match=r"the selection reads \['mrr'"):
        select({"recall_at_1": 0.5}, *rule, progress)
    check_selection(*rule, ["recall_at_1", "mrr"])
    with pytest.raises(
        ValueError, match="--select-on 'mrr' is not a validation metric of this run; metrics: recall_at_1"
    ):
        check_selection(*rule, ["recall_at_1"])
