"""Process-wide settings held by overlapping threads (density_metric.process_switch): put back by the last one out."""

import threading

from density_metric.backbone import quiet_transformers
from density_metric.process_switch import ProcessSwitch
from density_metric.scoring import no_dataset_bars


def overlapping(switch, inside):
    """A enters, B enters, A leaves, B leaves (two threads' loads that overlap); ``inside()`` after each step."""
    first, second = switch(), switch()
    seen = []
    first.__enter__()
    seen.append(inside())
    second.__enter__()
    seen.append(inside())
    first.__exit__(None, None, None)
    seen.append(inside())
    second.__exit__(None, None, None)
    seen.append(inside())
    return seen


def test_overlapping_holders_keep_the_setting_changed_until_the_last_leaves():
    setting = {"value": "user's"}

    def turn():
        saved, setting["value"] = setting["value"], "changed"
        return saved

    switch = ProcessSwitch(turn, lambda saved: setting.update(value=saved))
    assert overlapping(switch, lambda: setting["value"]) == ["changed", "changed", "changed", "user's"]


def test_transformers_logging_is_put_back_after_two_overlapping_loads():
    """Saved and restored by each load, it was left at the error level for good (B saved A's silence)."""
    from transformers.utils import logging as hf_logging

    before = hf_logging.get_verbosity(), hf_logging.is_progress_bar_enabled()
    seen = overlapping(quiet_transformers, lambda: (hf_logging.get_verbosity(), hf_logging.is_progress_bar_enabled()))
    assert seen[:3] == [(hf_logging.ERROR, False)] * 3
    assert seen[3] == before


def test_datasets_bars_are_put_back_after_two_overlapping_calls():
    import datasets

    before = datasets.are_progress_bars_disabled()
    assert overlapping(no_dataset_bars, datasets.are_progress_bars_disabled) == [True, True, True, before]


def test_threads_inside_at_once_turn_and_put_back_once():
    calls, inside = [], threading.Barrier(4)
    switch = ProcessSwitch(lambda: calls.append("turn"), lambda saved: calls.append("put back"))

    def hold():
        with switch():
            inside.wait(timeout=10)  # all four inside together

    threads = [threading.Thread(target=hold) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=10)
    assert calls == ["turn", "put back"]
