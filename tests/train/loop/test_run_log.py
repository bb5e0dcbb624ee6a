"""A run's log.jsonl is read in one place: records checked line by line, evaluations once per step."""

import json

import pytest

from density_train.loop.run_log import evaluations, read_log


def test_records_come_in_file_order_and_evaluations_once_per_step(tmp_path):
    log = tmp_path / "log.jsonl"
    records = [
        {"type": "train", "step": 1, "loss": 3.0},
        {"type": "eval", "step": 2, "recall_at_1": 0.1},
        {"type": "train", "step": 2, "loss": 2.5},
        {"type": "eval", "step": 2, "recall_at_1": 0.3},  # a resumed run redid step 2
        {"type": "eval", "step": 1, "recall_at_1": 0.2},
    ]
    log.write_text("".join(json.dumps(r) + "\n" for r in records) + "\n")  # a blank last line is fine
    assert read_log(log) == records
    assert evaluations(read_log(log)) == [records[4], records[3]]
    assert evaluations(records[:1]) == []


@pytest.mark.parametrize(
    "line, problem",
    [
        ('{"type": "train", "step": 3, "loss"', "line 2: invalid JSON"),  # cut short by a killed process
        ('{"type": "metrics", "step": 3}', "line 2: a record needs a type"),
        ('{"type": "eval", "step": "3"}', "line 2: a record needs a type"),
        ('{"type": "eval", "step": true}', "line 2: a record needs a type"),
        ("[1, 2]", "line 2: a record needs a type"),
    ],
)
def test_a_bad_line_is_an_error_naming_the_file_and_line(tmp_path, line, problem):
    log = tmp_path / "log.jsonl"
    log.write_text(json.dumps({"type": "train", "step": 1, "loss": 1.0}) + "\n" + line + "\n")
    with pytest.raises(ValueError, match=f"log.jsonl, {problem}"):
        read_log(log)


def test_a_log_that_is_not_utf8_is_an_error_naming_the_file(tmp_path):
    log = tmp_path / "log.jsonl"
    log.write_bytes(json.dumps({"type": "train", "step": 1, "loss": 1.0}).encode() + b"\n\xff\xfe\n")
    with pytest.raises(ValueError, match="log.jsonl: not UTF-8 text"):
        read_log(log)


def test_the_runs_cost_sums_its_chunks_wall_time_and_evaluations():
    from density_train.loop.run_log import compute_summary

    records = [
        {"type": "train", "step": 1, "elapsed": 10.0},
        {"type": "train", "step": 2, "elapsed": 20.0},
        {"type": "eval", "step": 2, "seconds": 5.0},  # inside chunk 1's elapsed (a step follows it)
        {"type": "train", "step": 3, "elapsed": 40.0},  # chunk 1 stops here, after 40 s
        {"type": "train", "step": 3, "elapsed": 12.0},  # chunk 2 redoes step 3
        {"type": "train", "step": 4, "elapsed": 30.0},
        {"type": "eval", "step": 4, "seconds": 7.0},  # after chunk 2's last step
        {"type": "train", "step": 4, "elapsed": 3.0},  # chunk 3 was stopped before its first save
        {"type": "eval", "step": 4, "seconds": 6.0},  # and redid the evaluation: it ran, so it counts
    ]
    assert compute_summary(records) == {
        "steps": 4,
        "chunks": 3,
        "wall_seconds": 40.0 + 30.0 + 7.0 + 3.0 + 6.0,
        "eval_seconds": 18.0,
        "evaluations": 3,
    }
    assert compute_summary([]) == {"steps": 0, "chunks": 0, "wall_seconds": 0, "eval_seconds": 0, "evaluations": 0}


def test_an_evaluation_before_the_first_step_counts_once():
    """--eval-at-start logs an evaluation before any train record; the process's clock already runs,
    so the first step's elapsed includes it (the last-turn-copies run: 114 s of evaluation, then step 5
    at 122 s). It counts as an evaluation, and the wall time does not count it twice."""
    from density_train.loop.run_log import compute_summary

    records = [
        {"type": "eval", "step": 0, "seconds": 100.0},
        {"type": "train", "step": 1, "elapsed": 102.0},
        {"type": "train", "step": 2, "elapsed": 104.0},
        {"type": "eval", "step": 2, "seconds": 50.0},
    ]
    assert compute_summary(records) == {
        "steps": 2,
        "chunks": 1,
        "wall_seconds": 104.0 + 50.0,
        "eval_seconds": 150.0,
        "evaluations": 2,
    }
    only_start = compute_summary(records[:1])  # stopped before its first step
    assert (only_start["wall_seconds"], only_start["evaluations"]) == (100.0, 1)


def test_a_resumed_run_cuts_the_log_back_to_its_state_as_read_log_reads_it(tmp_path):
    from density_train.loop.run_log import truncate_log

    log = tmp_path / "log.jsonl"
    records = [{"type": "train", "step": step, "loss": 1.0} for step in (1, 2, 3)]
    log.write_bytes(b"\xef\xbb\xbf" + "".join(json.dumps(r) + "\n" for r in records).encode())  # a byte order mark
    truncate_log(log, 2)
    assert read_log(log) == records[:2]
    truncate_log(tmp_path / "missing.jsonl", 2)  # a missing log stays missing
    assert not (tmp_path / "missing.jsonl").exists()
