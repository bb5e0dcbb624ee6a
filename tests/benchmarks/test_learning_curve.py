"""The learning curve reads a run's evaluations from its log, once per step, and draws them."""

import json

import pytest

from benchmarks.learning_curve import curve, main, read_evaluations


def write_log(path, records):
    path.write_text("".join(json.dumps(r) + "\n" for r in records))


def test_evaluations_come_once_per_step_in_order_the_last_logged_winning(tmp_path):
    log = tmp_path / "log.jsonl"
    write_log(
        log,
        [
            {"type": "train", "step": 1, "loss": 3.0},
            {"type": "eval", "step": 200, "recall_at_1": 0.4, "zhao_dev_spearman": 30.0},
            {"type": "eval", "step": 100, "recall_at_1": 0.2},
            {"type": "eval", "step": 200, "recall_at_1": 0.5, "zhao_dev_spearman": 35.0},  # a resumed run's repeat
        ],
    )
    evaluations = read_evaluations(log)
    assert [r["step"] for r in evaluations] == [100, 200]
    assert curve(evaluations, "recall_at_1", 16) == ([1600, 3200], [0.2, 0.5])
    assert curve(evaluations, "zhao_dev_spearman", 16) == ([3200], [35.0])  # only where it was logged


def test_a_log_without_evaluations_is_an_error_that_names_the_file(tmp_path):
    log = tmp_path / "log.jsonl"
    write_log(log, [{"type": "train", "step": 1, "loss": 3.0}])
    with pytest.raises(ValueError, match="log.jsonl: no evaluation records"):
        read_evaluations(log)


def test_the_figure_is_written(tmp_path):
    log = tmp_path / "log.jsonl"
    write_log(
        log,
        [
            {"type": "eval", "step": s, "recall_at_1": s / 1000, "auc_density/echo": 0.3, "auc_f/echo": 0.2}
            for s in (100, 200, 300)
        ],
    )
    out = tmp_path / "figs" / "curve.png"
    main([str(log), "--contexts-per-step", "16", "--out", str(out)])
    assert out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_the_recall_panel_names_the_runs_own_candidates(tmp_path, monkeypatch):
    # The title said "(1 + 15)" whatever the run's negatives were.
    from benchmarks import learning_curve

    drawn = []
    monkeypatch.setattr(learning_curve, "plot", lambda *args: drawn.append(args[-1]))
    run = tmp_path / "run"
    (run / "state").mkdir(parents=True)
    write_log(run / "log.jsonl", [{"type": "eval", "step": 100, "recall_at_1": 0.5}])
    argv = [str(run / "log.jsonl"), "--contexts-per-step", "16", "--out", str(tmp_path / "curve.png")]
    main(argv)  # no trainer state: no count
    state = {"progress": {}, "scheduler": {}, "config": {"negatives": 3, "valid_negatives": 0}}
    (run / "state" / "trainer_state.json").write_text(json.dumps(state))
    main(argv)
    state["config"]["valid_negatives"] = 9  # Recall@1 over more candidates than training used
    (run / "state" / "trainer_state.json").write_text(json.dumps(state))
    main(argv)
    main([*argv, "--candidates", "16"])
    assert drawn == [None, 4, 10, 16]
    assert [learning_curve.recall_title(n) for n in drawn] == [
        "Validation Recall@1",
        "Validation Recall@1 (1 + 3)",
        "Validation Recall@1 (1 + 9)",
        "Validation Recall@1 (1 + 15)",
    ]
