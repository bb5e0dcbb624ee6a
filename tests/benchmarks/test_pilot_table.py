"""The pilot table reads each arm's log and meta-evaluation report and nothing else."""

import json

import pytest

from benchmarks.pilot_table import main, read_arm


def write_arm(folder, loss_offset: float, dev_spearman: float):
    folder.mkdir(parents=True)
    steps = [
        {"type": "train", "epoch": 0, "step": s, "loss": loss_offset + s, "lr": 1e-5, "elapsed": 6.0 * s}
        for s in range(1, 31)
    ]
    evaluation = {"type": "eval", "epoch": 0, "step": 30, "seconds": 120.0, "recall_at_1": 0.5, "mrr": 0.6}
    evaluation.update(
        {"auc_density/random": 0.9, "auc_density/drop": 0.7, "auc_density/echo": 0.1, "zhao_dev_spearman": dev_spearman}
    )
    (folder / "log.jsonl").write_text("".join(json.dumps(r) + "\n" for r in [*steps, evaluation]))
    report = {
        "sets": {"dailydialog_zhao": {"dev": {"DEnsity": {"pearson": 40.0, "spearman": 41.0}}}},
        "probes": {"accuracy": {"echo": {"DEnsity": 0.25, "f(c,r) classifier": 0.5}}},
    }
    (folder / "human_correlation.json").write_text(json.dumps(report))


def test_arm_numbers_come_from_its_files(tmp_path):
    write_arm(tmp_path / "a", 0.0, 30.0)
    arm = read_arm(tmp_path / "a")
    assert arm["steps"] == 30
    assert arm["train minutes"] == pytest.approx(180 / 60)
    assert arm["seconds per step"] == pytest.approx(6.0)
    assert arm["eval minutes"] == pytest.approx(2.0)
    assert arm["final loss (mean of last 20 steps)"] == pytest.approx(sum(range(11, 31)) / 20)
    # echo is a probe's recipe: the tie-break mean leaves it out
    assert arm["mean auc_density, non-probe kinds"] == pytest.approx((0.9 + 0.7) / 2)
    assert arm["zhao_dev_spearman"] == 30.0
    assert arm["zhao_dev_spearman (checkpoint)"] == 41.0
    assert arm["probe echo: f(c,r) classifier"] == 0.5


def test_table_has_one_column_per_arm(tmp_path, capsys):
    write_arm(tmp_path / "a", 0.0, 30.0)
    write_arm(tmp_path / "b", 1.0, 35.0)
    main([str(tmp_path), "--arms", "a", "b", "--title", "Mix pilot"])
    text = (tmp_path / "table.md").read_text()
    assert text.startswith("# Mix pilot")
    assert "| | a | b |" in text
    assert "| zhao_dev_spearman | 30 | 35 |" in text


def test_training_time_leaves_out_the_evaluations_before_the_last_step(tmp_path):
    # a judged checkpoint (results/experiments/judge_at_start.sh): 530 s of evaluation at step 0, then one 10 s step
    (tmp_path / "a").mkdir()
    records = [
        {"type": "eval", "epoch": 0, "step": 0, "seconds": 530.0, "recall_at_1": 0.5},
        {"type": "train", "epoch": 0, "step": 1, "loss": 1.0, "lr": 1e-5, "elapsed": 540.0},
    ]
    (tmp_path / "a" / "log.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records))
    arm = read_arm(tmp_path / "a")
    assert arm["train minutes"] == pytest.approx(10 / 60)
    assert arm["eval minutes"] == pytest.approx(530 / 60)


def test_an_arm_without_evaluation_is_refused(tmp_path):
    (tmp_path / "a").mkdir()
    (tmp_path / "a" / "log.jsonl").write_text(json.dumps({"type": "train", "step": 1, "loss": 1.0}) + "\n")
    with pytest.raises(ValueError, match="log.jsonl: needs train and eval records, has 1 and 0"):
        read_arm(tmp_path / "a")


def test_training_time_adds_up_the_segments_of_a_resumed_run():
    from benchmarks.pilot_table import training_seconds

    first = [{"step": s, "elapsed": 5.0 * s} for s in range(1, 5)]  # 20 s, then a new process
    second = [{"step": s, "elapsed": 6.0 * (s - 4)} for s in range(5, 8)]  # 18 s
    assert training_seconds(first + second) == 38.0
    assert training_seconds([{"step": 1}]) != training_seconds([{"step": 1}])  # NaN without elapsed


def test_training_time_counts_steps_redone_after_a_resume_once():
    from benchmarks.pilot_table import training_seconds

    # the first process logged steps 1-6 but saved its state at step 4; the second resumes at 5
    first = [{"step": s, "elapsed": 5.0 * s} for s in range(1, 7)]
    second = [{"step": s, "elapsed": 6.0 * (s - 4)} for s in range(5, 8)]
    assert training_seconds(first + second) == 20.0 + 18.0


def test_median_step_time_ignores_a_slow_stretch_and_the_restart():
    from benchmarks.pilot_table import median_step_seconds

    first = [{"step": s, "elapsed": 4.0 * s} for s in range(1, 8)]
    first[-1]["elapsed"] = first[-2]["elapsed"] + 40.0  # one step slowed by other work
    second = [{"step": s, "elapsed": 4.0 * (s - 4)} for s in range(5, 9)]
    assert median_step_seconds(first + second) == 4.0
    assert median_step_seconds([{"step": 1}]) != median_step_seconds([{"step": 1}])


def test_the_parrot_rules_mean_is_over_echo_speaker_and_repeat_only_when_all_three_are_logged(tmp_path):
    write_arm(tmp_path / "a", 0.0, 30.0)
    assert "mean auc_density, echo/speaker/repeat" not in read_arm(tmp_path / "a")  # speaker, repeat missing
    log = tmp_path / "a" / "log.jsonl"
    records = [json.loads(line) for line in log.read_text().splitlines()]
    records[-1].update({"auc_density/speaker": 0.4, "auc_density/repeat": 0.7})
    log.write_text("".join(json.dumps(r) + "\n" for r in records))
    assert read_arm(tmp_path / "a")["mean auc_density, echo/speaker/repeat"] == pytest.approx((0.1 + 0.4 + 0.7) / 3)
