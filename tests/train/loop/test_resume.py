"""Resuming a run: only with the recipe it began with, a damaged state is an error naming its file,
and the log of a resumed run equals an uninterrupted one's."""

import json
import shutil

import numpy as np
import pytest

from density_train.loop.trainer import Trainer

from .test_training import config_for, data, read_log, write_corpus


def cli_run(backbone, folder, *extra):
    """``python -m train train`` argv of a tiny run on synthetic JSONL dialogues written to ``folder``."""
    write_corpus(folder)
    return [
        "train",
        "--corpus",
        "jsonl",
        "--train-file",
        folder / "train.jsonl",
        "--valid-file",
        folder / "valid.jsonl",
        "--backbone",
        backbone,
        "--out",
        folder / "run",
        "--negatives",
        "3",
        "--epochs",
        "1",
        "--batch-size",
        "4",
        "--max-length",
        "48",
        "--max-response-length",
        "16",
        "--validation-kinds",
        "",
        *extra,
    ]


@pytest.fixture(scope="module")
def stopped_run(backbone, tmp_path_factory):
    """A tiny run stopped by --max-minutes after its first step (state/ saved), to copy and resume."""
    from density_train.commands import main

    folder = tmp_path_factory.mktemp("stopped")
    main([str(arg) for arg in cli_run(backbone, folder, "--max-minutes", "0.0001")])
    assert json.loads((folder / "run" / "state" / "trainer_state.json").read_text())["progress"]["global_step"] == 1
    return folder


def assert_same_log(straight_run, resumed_run):
    """The resumed run logged the same steps and evaluations as the uninterrupted one, to float32 noise."""
    straight, resumed = read_log(straight_run), read_log(resumed_run)
    assert [(r["type"], r["step"]) for r in resumed] == [(r["type"], r["step"]) for r in straight]
    values = lambda log: [r.get("loss", r.get("recall_at_1")) for r in log]  # noqa: E731
    np.testing.assert_allclose(values(resumed), values(straight), rtol=1e-5)


def copy_of(stopped_run, tmp_path):
    shutil.copytree(stopped_run, tmp_path / "copy")
    return tmp_path / "copy"


def test_resuming_with_other_flags_is_refused_naming_each(backbone, stopped_run, tmp_path, train_cli_error):
    folder = copy_of(stopped_run, tmp_path)
    before = (folder / "run" / "state" / "trainer_state.json").read_text()
    changed = ["--lr", "1e-3", "--layout", "shared-context", "--pooling", "mean", "--negatives", "5"]
    line = train_cli_error(cli_run(backbone, folder, *changed))
    assert f"{folder / 'run' / 'state' / 'trainer_state.json'}: the run was started with other flags" in line
    for flag in ("--lr 0.001", "--layout 'shared-context'", "--pooling 'mean'", "--negatives 5 (the run has 3)"):
        assert flag in line
    assert (folder / "run" / "state" / "trainer_state.json").read_text() == before
    assert not (folder / "run" / "checkpoint").exists()


@pytest.mark.parametrize(
    "name", ["trainer_state.json", "optimizer.safetensors", "model.safetensors", "rng.safetensors"]
)
def test_a_truncated_state_file_is_an_error_naming_it(backbone, stopped_run, tmp_path, name, train_cli_error):
    folder = copy_of(stopped_run, tmp_path)
    path = folder / "run" / "state" / name
    path.write_bytes(path.read_bytes()[: path.stat().st_size // 2])
    line = train_cli_error(cli_run(backbone, folder))
    assert line.startswith(f"error: {path}: ")


def test_a_limit_too_small_for_one_step_is_an_error_naming_it(backbone, tmp_path, train_cli_error):
    line = train_cli_error(cli_run(backbone, tmp_path, "--limit", "3"))
    assert "3 training pairs give no full step" in line and "--limit" in line


def test_a_resumed_run_logs_each_step_once_as_an_uninterrupted_one(backbone, tmp_path, monkeypatch):
    """A run killed after logging step 3 resumes from its state of step 2: the log ends up equal."""
    train, valid = data()
    config = config_for(backbone, save_every=2, validation_kinds="")
    Trainer(config, train, valid, tmp_path / "straight").train()

    log = Trainer._log

    def killed_after_step_3(self, record):
        log(self, record)
        if record["type"] == "train" and record["step"] == 3:
            raise KeyboardInterrupt

    monkeypatch.setattr(Trainer, "_log", killed_after_step_3)
    with pytest.raises(KeyboardInterrupt):
        Trainer(config, train, valid, tmp_path / "resumed").train()
    monkeypatch.setattr(Trainer, "_log", log)
    Trainer(config, train, valid, tmp_path / "resumed").train()
    assert_same_log(tmp_path / "straight", tmp_path / "resumed")


def test_a_select_on_metric_the_run_does_not_log_is_an_error_before_training(backbone, tmp_path, train_cli_error):
    line = train_cli_error(cli_run(backbone, tmp_path, "--select-on", "auc_density/typo"))
    assert "--select-on 'auc_density/typo' is not a validation metric" in line and "recall_at_1" in line
    assert not (tmp_path / "run" / "log.jsonl").exists()


def test_a_select_floor_metric_the_run_does_not_log_is_an_error_before_training(backbone, tmp_path, train_cli_error):
    line = train_cli_error(cli_run(backbone, tmp_path, "--select-floor", "zhao_dev_spearman=50"))
    assert "--select-floor 'zhao_dev_spearman' is not a validation metric" in line and "recall_at_1" in line
    assert not (tmp_path / "run" / "log.jsonl").exists()


def test_a_floor_no_evaluation_meets_keeps_nothing_and_fits_nothing(backbone, tmp_path, train_cli_error):
    line = train_cli_error(cli_run(backbone, tmp_path, "--select-on", "mrr+recall_at_1", "--select-floor", "mrr=1.5"))
    assert "no evaluation met --select-floor mrr=1.5: nothing was kept in best/ to fit" in line
    assert (tmp_path / "run" / "log.jsonl").exists() and not (tmp_path / "run" / "best").exists()
    assert not (tmp_path / "run" / "checkpoint").exists()


def test_a_relative_floor_without_an_evaluation_at_the_start_is_an_error(backbone, tmp_path, train_cli_error):
    line = train_cli_error(cli_run(backbone, tmp_path, "--select-floor", "mrr=start-0.1"))
    assert "--select-floor 'mrr=start-0.1' is relative to the run's step-0 evaluation: add --eval-at-start" in line


def test_a_floor_relative_to_the_start_holds_across_a_resume(backbone, tmp_path):
    """The start's value is in the saved state, which the resumed trainer and the end-of-run fit read:
    a run stopped after its first step and resumed keeps and fits an evaluation, and its card says how."""
    from density_train.commands import main

    flags = ("--eval-at-start", "--select-on", "mrr", "--select-floor", "recall_at_1=start-1")
    main([str(arg) for arg in cli_run(backbone, tmp_path, *flags, "--max-minutes", "0.0001")])
    state = json.loads((tmp_path / "run" / "state" / "trainer_state.json").read_text())["progress"]
    assert state["global_step"] == 1 and set(state["start"]) == {"mrr", "recall_at_1"}
    main([str(arg) for arg in cli_run(backbone, tmp_path, *flags)])
    card = (tmp_path / "run" / "checkpoint" / "README.md").read_text()
    assert "was at least its value at the start (step 0) - 1" in card


def test_a_stop_while_the_state_is_saved_leaves_the_last_whole_state(backbone, tmp_path, monkeypatch):
    """Killed while writing the state of step 4 (the model written, the optimizer not): the run
    resumes from the whole state of step 2, and its log equals an uninterrupted one's."""
    import density_train.loop.trainer as loop

    train, valid = data()
    config = config_for(backbone, save_every=2, validation_kinds="")
    Trainer(config, train, valid, tmp_path / "straight").train()

    save_optimizer, calls = loop.save_optimizer, []

    def killed_on_the_second_save(*args):
        calls.append(1)
        if len(calls) == 2:
            raise KeyboardInterrupt
        save_optimizer(*args)

    monkeypatch.setattr(loop, "save_optimizer", killed_on_the_second_save)
    with pytest.raises(KeyboardInterrupt):
        Trainer(config, train, valid, tmp_path / "resumed").train()
    monkeypatch.setattr(loop, "save_optimizer", save_optimizer)
    state = json.loads((tmp_path / "resumed" / "state" / "trainer_state.json").read_text())
    assert state["progress"]["global_step"] == 2
    Trainer(config, train, valid, tmp_path / "resumed").train()
    assert_same_log(tmp_path / "straight", tmp_path / "resumed")


def test_a_stop_between_the_renames_of_a_save_resumes_from_the_old_state(backbone, stopped_run, tmp_path):
    """state/ moved aside as state.old/, a half-written state.new/ beside it: the run resumes from
    state.old/ (its step 1 is not taken again) and ends with a checkpoint."""
    from density_train.commands import main

    folder = copy_of(stopped_run, tmp_path)
    run = folder / "run"
    (run / "state").rename(run / "state.old")
    (run / "state.new").mkdir()
    (run / "state.new" / "model.safetensors").write_bytes(b"half")
    main([str(arg) for arg in cli_run(backbone, folder)])
    steps = [r["step"] for r in read_log(run) if r["type"] == "train"]
    assert steps == list(range(1, len(steps) + 1)) and len(steps) > 1
    assert (run / "checkpoint").is_dir() and not (run / "state.old").exists() and not (run / "state.new").exists()


def test_resuming_on_other_training_data_is_refused_naming_the_split(backbone, stopped_run, tmp_path, train_cli_error):
    folder = copy_of(stopped_run, tmp_path)
    argv = cli_run(backbone, folder)  # writes the same corpus again
    train_file = folder / "train.jsonl"
    train_file.write_text("".join(train_file.read_text().splitlines(keepends=True)[:-1]))  # one dialogue fewer
    line = train_cli_error(argv)
    state = folder / "run" / "state" / "trainer_state.json"
    assert line.startswith(f"error: {state}: the run was started on other train data (")
    assert "--data-dir" in line and "a new --out" in line
    assert not (folder / "run" / "checkpoint").exists()


def test_resuming_with_other_dev_judgments_is_refused_naming_them(backbone, stopped_run, tmp_path, train_cli_error):
    """--dev-judgments is no recipe flag, but its rows may select the best model: a resume on other rows (here: rows
    where the run had none) would mix two selection signals in one run."""
    from tests.train.data.test_judgments import GOOD, dev_folder

    folder = copy_of(stopped_run, tmp_path)
    dev = dev_folder(tmp_path, [GOOD] * 5)
    line = train_cli_error(cli_run(backbone, folder, "--dev-judgments", dev))
    state = folder / "run" / "state" / "trainer_state.json"
    assert line.startswith(f"error: {state}: the run was started on other dev data (0 rows, sha256 none), ")
    assert "(1 rows, sha256 " in line and "give the run's --dev-judgments again (none, where" in line
    # A state saved before the dev rows were recorded resumes with them, as it did.
    saved = json.loads(state.read_text())
    for key in ("dev_pairs", "dev_sha256"):
        del saved["data"][key]
    state.write_text(json.dumps(saved))
    from density_train.commands import main

    main([str(arg) for arg in cli_run(backbone, folder, "--dev-judgments", dev)])
    assert (folder / "run" / "checkpoint").is_dir()


def test_resuming_from_other_start_weights_is_refused_naming_them(backbone, tmp_path, train_cli_error):
    """A start folder whose weights were written again under the same path (a chain's first stage fitted anew) would
    give a resumed run another anchor than the one it began with."""
    import torch
    from safetensors.torch import load_file, save_file

    from density_train.commands import main

    start = tmp_path / "start"
    shutil.copytree(backbone, start)
    main([str(arg) for arg in cli_run(start, tmp_path, "--max-minutes", "0.0001")])
    original = (start / "model.safetensors").read_bytes()
    weights = load_file(str(start / "model.safetensors"))
    name = sorted(weights)[0]
    changed = {**weights, name: weights[name] + torch.ones_like(weights[name])}
    save_file(changed, str(start / "model.safetensors"))
    line = train_cli_error(cli_run(start, tmp_path))
    state = tmp_path / "run" / "state" / "trainer_state.json"
    assert line.startswith(f"error: {state}: the run was started from other weights (--backbone {start}: ")
    assert "a new --out" in line and not (tmp_path / "run" / "checkpoint").exists()
    (start / "model.safetensors").write_bytes(original)  # the start it began with: the run resumes
    main([str(arg) for arg in cli_run(start, tmp_path)])
    assert (tmp_path / "run" / "checkpoint").is_dir()
