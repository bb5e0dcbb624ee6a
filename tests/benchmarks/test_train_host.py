"""benchmarks/train_host.py refuses a bad argument in one line before any work (it builds an encoder, exports a
commit and trains two arms)."""

import pytest

from .test_benchmark_command_lines import data_dir, refuse  # noqa: F401  (fixtures)


@pytest.mark.parametrize(
    "extra, says",
    [
        (["--steps", 0], "--steps must be at least 1, got 0"),
        (["--warm-up", 0], "--warm-up must be at least 1, got 0"),
        (["--threads", 0], "--threads must be at least 1, got 0"),
        (["--train-pairs", 40], "--train-pairs 40 gives fewer than --steps + --warm-up + 1 steps of 16 contexts"),
    ],
)
def test_a_bad_argument_is_one_error_line_before_any_work(refuse, data_dir, monkeypatch, extra, says):  # noqa: F811
    import benchmarks.train_host as train_host

    for name in ("build_encoder", "export", "run_arm", "worker"):
        monkeypatch.setattr(train_host, name, lambda *a, _name=name: pytest.fail(f"{_name} was called"))
    assert says in refuse("train_host", ["--data-dir", data_dir, *extra])


def test_a_data_dir_without_dailydialog_is_refused(refuse, tmp_path):  # noqa: F811
    assert f"--data-dir {tmp_path}: no dailydialog/dialogues_train.txt" in refuse(
        "train_host", ["--data-dir", tmp_path]
    )
