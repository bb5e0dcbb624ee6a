"""The benchmark scripts refuse a bad argument with one ``error:`` line (exit 2) before any work: a --data-dir
without the files they read, a count below its least value, a checkpoint that does not load, an unknown choice.

Every function of a script that reads data, loads a model, trains or draws is replaced by one that fails the test,
so an error that comes only after work has started does not pass."""

import importlib
import json
from pathlib import Path

import pytest

WORK = (
    "load_dailydialog",
    "held_out_dialogues",
    "DensityScorer",
    "Trainer",
    "plot",
    "module",
    "compare",
    "loop_compare",
    "markdown",
    "recipe_trainer",
)


@pytest.fixture
def data_dir(tmp_path):
    """A --data-dir with every DailyDialog split and the DailyDialog-Zhao set (two rows)."""
    folder = tmp_path / "data"
    (folder / "dailydialog").mkdir(parents=True)
    for split in ("train", "validation", "test"):
        (folder / "dailydialog" / f"dialogues_{split}.txt").write_text("hi __eou__ hello __eou__\n", encoding="utf-8")
    rows = [{"context": ["hi"], "response": r, "score": s, "system": "a"} for r, s in (("hello", 4.0), ("no", 2.0))]
    (folder / "dailydialog_zhao.normalized.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    return folder


@pytest.fixture
def refuse(monkeypatch, capsys):
    """Run ``main(argv)`` of ``benchmarks.<script>``, which must stop with exit code 2 and one error line and no
    traceback, before any of :data:`WORK` is called. Returns the error line."""

    def run(script: str, argv: list) -> str:
        module = importlib.import_module(f"benchmarks.{script}")
        for name in WORK:
            if hasattr(module, name):
                monkeypatch.setattr(module, name, lambda *a, _name=name, **k: pytest.fail(f"{_name} was called"))
        capsys.readouterr()
        with pytest.raises(SystemExit) as stop:
            module.main([str(arg) for arg in argv])
        err = capsys.readouterr().err
        assert stop.value.code == 2, err
        errors = [line for line in err.splitlines() if "error:" in line]
        assert len(errors) == 1 and "Traceback" not in err, err
        return errors[0]

    return run


def cases(data, empty, not_a_checkpoint, log):
    """(script, argv, what the error line says) for every script and kind of bad argument."""
    good = ["--data-dir", data]
    return [
        ("speed", ["--data-dir", empty], f"--data-dir {empty}: no dailydialog/dialogues_test.txt"),
        ("speed", [*good, "--pairs", 0], "--pairs must be at least 1, got 0"),
        ("speed", [*good, "--naive-pairs", 0], "--naive-pairs must be at least 1, got 0"),
        ("speed", [*good, "--batch-size", 0], "--batch-size must be at least 1, got 0"),
        ("speed", [*good, "--repeats", 0], "--repeats must be at least 1, got 0"),
        ("speed", [*good, "--rank", -1], "--rank must be at least 0, got -1"),
        ("speed", [*good, "--rank", 9, "--pairs", 8], "--rank 9: more candidates than the 8 --pairs"),
        ("speed", [*good, "--json", empty / "no" / "speed.json"], f"the folder {empty / 'no'} does not exist"),
        ("speed", [*good, "--checkpoint", not_a_checkpoint], f"--checkpoint {not_a_checkpoint}: "),
        ("grouping", ["--data-dir", empty], f"--data-dir {empty}: no dailydialog/dialogues_test.txt"),
        ("grouping", [*good, "--contexts", 0], "--contexts must be at least 1, got 0"),
        ("grouping", [*good, "--repeats", 0], "--repeats must be at least 1, got 0"),
        ("grouping", [*good, "--checkpoint", not_a_checkpoint], f"--checkpoint {not_a_checkpoint}: "),
        ("batch_invariance", ["--data-dir", empty], f"--data-dir {empty}: no dailydialog/dialogues_test.txt"),
        ("batch_invariance", [*good, "--pairs", 0], "--pairs must be at least 1, got 0"),
        ("batch_invariance", [*good, "--json", empty], f"--json {empty}: is a folder, not a file"),
        ("batch_invariance", [*good, "--checkpoint", not_a_checkpoint], f"--checkpoint {not_a_checkpoint}: "),
        ("covariance", ["--data-dir", empty], f"--data-dir {empty}: no dailydialog/dialogues_train.txt"),
        ("covariance", [*good, "--train-pairs", 1], "--train-pairs must be at least 2, got 1"),
        ("covariance", [*good, "--valid-cases", 0], "--valid-cases must be at least 1, got 0"),
        ("covariance", [*good, "--dtype", "float64"], "invalid choice: 'float64'"),
        ("covariance", [*good, "--checkpoint", not_a_checkpoint], f"--checkpoint {not_a_checkpoint}: "),
        ("train_speed", ["--data-dir", empty], f"--data-dir {empty}: no dailydialog/dialogues_train.txt"),
        ("train_speed", [*good, "--steps", 0], "--steps must be at least 1, got 0"),
        ("train_speed", [*good, "--rounds", 0], "--rounds must be at least 1, got 0"),
        ("train_speed", [*good, "--micro-batch", 0], "--micro-batch must be at least 1, got 0"),
        (
            "train_speed",
            [*good, "--train-pairs", 40],
            "--train-pairs 40 makes 2 steps of 16 contexts; --steps 4 needs 5",
        ),
        ("train_speed", [*good, "--arms", "nope"], "invalid choice: 'nope'"),
        ("train_speed", [*good, "--max-length", 0], "--max-length must be at least 1, got 0"),
        ("learning_curve", [empty / "log.jsonl", "--contexts-per-step", 16, "--out", empty / "c.png"], "no such file"),
        ("learning_curve", [log, "--contexts-per-step", 16, "--out", empty / "c.png", "--kind", "ecko"], "'ecko'"),
        (
            "learning_curve",
            [log, "--contexts-per-step", 16, "--out", empty / "c.png", "--candidates", 1],
            "--candidates must be at least 2, got 1",
        ),
        (
            "human_correlation",
            [*good, "--out", empty / "o", "--batch-size", 0],
            "--batch-size must be at least 1, got 0",
        ),
        ("human_correlation", [*good, "--out", empty / "o", "--limit", -1], "--limit must be at least 0, got -1"),
        ("human_correlation", [*good, "--out", empty / "o", "--probes", 0], "--probes must be at least 1, got 0"),
        ("human_correlation", [*good, "--out", empty / "o", "--checkpoint", not_a_checkpoint], "--checkpoint "),
        ("human_correlation", [*good, "--out", empty / "o", "--untuned-checkpoint", empty], "--untuned-checkpoint "),
        ("system_level", [*good, "--out", log], f"--out {log}: is a file, not a folder"),
        ("system_level", [*good, "--out", empty / "o", "--resamples", 0], "--resamples must be at least 1, got 0"),
        ("system_level", [*good, "--out", empty / "o", "--dtype", "fp8"], "invalid choice: 'fp8'"),
        ("system_level", [*good, "--out", empty / "o", "--checkpoint", not_a_checkpoint], "--checkpoint "),
        ("few_shot", ["--data-dir", empty, "--out", empty / "o"], "no set named dailydialog_zhao (found: none)"),
        ("few_shot", [*good, "--out", empty / "o", "--folds", 1], "--folds must be at least 2, got 1"),
        ("few_shot", [*good, "--out", log], f"--out {log}: is a file, not a folder"),
        ("few_shot", [*good, "--out", empty / "o", "--checkpoint", not_a_checkpoint], "--checkpoint "),
        ("corpus_probes", ["--data-dir", empty, "--out", empty / "o"], f"--data-dir {empty}: no dailydialog/"),
        (
            "corpus_probes",
            ["--data-dir", empty, "--corpora", "self_dialogue", "--out", empty / "o"],
            f"--data-dir {empty}: no self_dialogue folder",
        ),
        ("corpus_probes", [*good, "--out", log], f"--out {log}: is a file, not a folder"),
        ("corpus_probes", [*good, "--out", empty / "o", "--probes", 0], "--probes must be at least 1, got 0"),
        ("corpus_probes", [*good, "--out", empty / "o", "--corpora", "opensubtitles"], "invalid choice"),
        (
            "corpus_probes",
            [*good, "--corpora", "dailydialog", "--out", empty / "o", "--checkpoint", not_a_checkpoint],
            "--checkpoint ",
        ),
        ("step_batches", ["--data-dir", empty], f"--data-dir {empty}: no dailydialog/dialogues_train.txt"),
        ("step_batches", [*good, "--steps", 0], "--steps must be at least 1, got 0"),
        ("step_batches", [*good, "--train-pairs", 0], "--train-pairs must be at least 1, got 0"),
        ("step_batches", [*good, "--recipes", "nope"], "invalid choice: 'nope'"),
        ("step_batches", [*good, "--json", empty], f"--json {empty}: is a folder, not a file"),
        ("compare_speed", ["--systems", 1], "--systems must be at least 2, got 1"),
        ("compare_speed", ["--trials", 0], "--trials must be at least 1, got 0"),
        ("compare_speed", ["--out", empty], f"--out {empty}: is a folder, not a file"),
        ("pilot_table", [empty, "--arms", "a"], f"ROOT {empty}: no a/log.jsonl"),
        ("pilot_table", [log.parent.parent, "--arms", log.parent.name], "needs train and eval records, has 0 and 1"),
        ("baselines", ["train", "--system", "maude", "--epochs", 0], "--epochs must be at least 1, got 0"),
        ("baselines", ["train", "--system", "maude", "--limit", -1], "--limit must be at least 0, got -1"),
        ("baselines", ["train", "--system", "maude", "--data-dir", empty], f"{empty}: no dialogues_train.txt"),
        (
            "baselines",
            ["train", "--system", "zhao", "--data-dir", empty],
            "no set named dailydialog_zhao (found: none)",
        ),
        ("baselines", ["train", "--system", "zhao", *good, "--checkpoint", not_a_checkpoint], "--checkpoint "),
    ]


CASES = cases(*map(Path, ("DATA", "EMPTY", "NOT_A_CHECKPOINT", "LOG")))  # for the test ids


@pytest.mark.parametrize("index", range(len(CASES)), ids=[f"{c[0]} {' '.join(map(str, c[1]))}" for c in CASES])
def test_a_bad_argument_is_one_error_line_before_any_work(index, refuse, data_dir, tmp_path):
    empty, not_a_checkpoint = tmp_path / "empty", tmp_path / "not-a-checkpoint"
    empty.mkdir()
    not_a_checkpoint.mkdir()
    log = tmp_path / "arm" / "log.jsonl"  # an arm's log for pilot_table, a run's for learning_curve
    log.parent.mkdir()
    log.write_text(json.dumps({"type": "eval", "step": 1, "auc_density/echo": 0.6}) + "\n")
    script, argv, says = cases(data_dir, empty, not_a_checkpoint, log)[index]
    script = "baselines.__main__" if script == "baselines" else script  # the package's command line
    assert says in refuse(script, argv)


@pytest.mark.parametrize("epochs, passed", [([], {}), (["--epochs", "3"], {"epochs": 3})])
def test_baselines_train_passes_epochs_only_when_given(epochs, passed, data_dir, monkeypatch):
    # `if args.epochs:` took --epochs 0 for "not given" and trained the default 40 epochs; 0 is now refused above.
    from benchmarks.baselines import __main__ as command

    calls = []

    class System:
        @staticmethod
        def train(out, **options):
            calls.append(options)
            return {}

    monkeypatch.setattr(command, "module", lambda system: System)
    command.main(["train", "--system", "maude", "--data-dir", str(data_dir / "dailydialog"), *epochs])
    assert [{k: v for k, v in call.items() if k == "epochs"} for call in calls] == [passed]


@pytest.mark.parametrize("script", ["human_correlation", "system_level"])
def test_a_jsonl_of_another_schema_is_refused_naming_its_file(script, refuse, data_dir, tmp_path):
    # human_correlation failed with KeyError: 'context' from train/data/judgments.py after loading, naming no file.
    other = data_dir / "dialogues.normalized.jsonl"
    other.write_text(json.dumps({"turns": ["hi", "hello"]}) + "\n", encoding="utf-8")
    says = refuse(script, ["--data-dir", data_dir, "--out", tmp_path / "o"])
    assert f"{other}: line 1 has no 'context', 'response', 'score': not a human-judgment set" in says
