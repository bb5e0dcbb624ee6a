"""The Zhao et al. 2020 supervised baseline: stage 2 on a tiny checkpoint and synthetic ratings."""

from __future__ import annotations

import json

import numpy as np
import pytest
from safetensors.torch import load_file, save_file
from scipy.stats import spearmanr

from benchmarks.baselines import zhao
from density_train.data.judgments import apply_protocol, load_sets

from ..tiny import WORDS, one_thread


def synthetic_zhao(n: int, seed: int) -> list[dict]:
    """Rows of a fake DailyDialog-Zhao whose rating is a rule a cross-encoder can learn: 'good' in the reply."""
    rng = np.random.default_rng(seed)
    rows = []
    for i in range(n):
        words = list(rng.choice(WORDS, size=rng.integers(2, 8)))
        liked = bool(rng.random() < 0.5)
        if liked:
            words[rng.integers(len(words))] = "good"
        else:
            words = [w if w != "good" else "nice" for w in words]
        rating = (0.85 if liked else 0.15) + rng.normal(0, 0.03)
        rows.append(
            {
                "context": ["hi how are you", "fine thanks"],
                "response": " ".join(words),
                "score": 1 + 4 * rating,
                "score_density": rating,
                "system": "ground-truth" if i % 25 == 0 else "model",
            }
        )
    return rows


@pytest.fixture(scope="module")
def zhao_data(tmp_path_factory):
    data = tmp_path_factory.mktemp("zhao_data")
    rows = synthetic_zhao(1000, seed=0)
    path = data / "zhao2020" / "dailydialog_zhao.normalized.jsonl"
    path.parent.mkdir()
    path.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")
    return data


@pytest.fixture(scope="module")
def trained(tiny_checkpoint, zhao_data, tmp_path_factory):
    out = tmp_path_factory.mktemp("zhao_weights")
    with one_thread():
        report = zhao.train(
            out,
            data_dir=zhao_data,
            checkpoint=str(tiny_checkpoint),
            epochs=60,
            patience=15,
            layer_lr=1e-3,
            head_lr=3e-3,
            seed=0,
        )
    return out, report


def test_trains_on_the_dev_rows_only_and_learns_the_rule(trained, zhao_data):
    out, report = trained
    [judgments] = load_sets(zhao_data, ["dailydialog_zhao"])
    dev, _ = apply_protocol(judgments, "dev")
    assert report["trained_on"]["rows"] + report["trained_on"]["held_out_rows"] == len(dev)
    assert report["best_epoch"] >= 1
    columns = zhao.load(out)
    test, human = apply_protocol(judgments, "paper")
    rows = [judgments.rows[i] for i in test]
    predicted = columns([row["context"] for row in rows], [row["response"] for row in rows])[zhao.COLUMN]
    assert spearmanr(predicted, human).statistic > 0.6
    low, high = report["rating_range"]
    assert np.all((predicted >= low - 1e-6) & (predicted <= high + 1e-6))


def test_round_trip_gives_the_same_predictions(trained, tiny_checkpoint):
    out, _ = trained
    contexts, responses = [["hi", "how are you"]] * 3, ["good day", "i am fine", "the weather is nice"]
    first = zhao.load(out)(contexts, responses)[zhao.COLUMN]
    again = zhao.ZhaoColumns(out, checkpoint=str(tiny_checkpoint))(contexts, responses)[zhao.COLUMN]
    np.testing.assert_array_equal(first, again)


def test_never_reported_on_rows_it_trained_on(trained):
    columns = zhao.load(trained[0])
    assert columns.reports("dailydialog_zhao", "paper")
    assert not columns.reports("dailydialog_zhao", "dev")
    assert not columns.reports("dailydialog_zhao", "full")
    assert columns.reports("personachat_zhao", "full")


def test_damaged_weights_are_refused_with_the_file_named(trained, tmp_path):
    out, _ = trained
    for name in (zhao.WEIGHTS_FILE, zhao.CONFIG_FILE):
        (tmp_path / name).write_bytes((out / name).read_bytes())
    state = load_file(str(out / zhao.WEIGHTS_FILE))
    state["head.mlp.0.weight"] = state["head.mlp.0.weight"][:, :-1].contiguous()
    save_file(state, str(tmp_path / zhao.WEIGHTS_FILE))
    with pytest.raises(ValueError, match=rf"{zhao.WEIGHTS_FILE}.*shape \[.head.mlp.0.weight.\]"):
        zhao.load(tmp_path)
    state = load_file(str(out / zhao.WEIGHTS_FILE))
    state["head.mlp.0.bias"][0] = float("nan")
    save_file(state, str(tmp_path / zhao.WEIGHTS_FILE))
    with pytest.raises(ValueError, match=rf"{zhao.WEIGHTS_FILE}.*NaN"):
        zhao.load(tmp_path)
    (tmp_path / zhao.WEIGHTS_FILE).unlink()
    with pytest.raises(ValueError, match=rf"{zhao.WEIGHTS_FILE}: file is missing"):
        zhao.load(tmp_path)


def test_a_changed_stage_one_checkpoint_is_refused(trained, tmp_path):
    out, _ = trained
    (tmp_path / zhao.WEIGHTS_FILE).write_bytes((out / zhao.WEIGHTS_FILE).read_bytes())
    config = json.loads((out / zhao.CONFIG_FILE).read_text())
    config["base_revision"] = "sha256:0000000000000000"
    (tmp_path / zhao.CONFIG_FILE).write_text(json.dumps(config))
    with pytest.raises(ValueError, match="retrain with python -m benchmarks.baselines train --system zhao"):
        zhao.load(tmp_path)


def test_meta_evaluation_reports_it_only_on_rows_it_did_not_learn_from(trained, zhao_data, tiny_scorer):
    from benchmarks.human_correlation import ModelColumns, evaluate_turn_set
    from benchmarks.meta_report import headline

    [judgments] = load_sets(zhao_data, ["dailydialog_zhao"])
    judgments.rows = judgments.rows[:300]
    result = evaluate_turn_set(
        judgments, [ModelColumns(tiny_scorer, ""), zhao.load(trained[0])], False, ("full", "paper", "dev")
    )
    assert zhao.COLUMN in result["paper"] and "DEnsity" in result["paper"]
    assert zhao.COLUMN not in result["full"] and zhao.COLUMN not in result["dev"]
    assert result["_supervised"] == [zhao.COLUMN]
    report = {"sets": {"dailydialog_zhao": result}, "supervised_columns": result["_supervised"]}
    table = "\n".join(headline(report))
    [row] = [line for line in table.splitlines() if line.startswith(f"| {zhao.COLUMN} |")]
    assert row.count("supervised") == 1  # marked once, its name already says it
    report["supervised_columns"] = ["DEnsity"]  # a supervised column whose name does not say so
    assert "| DEnsity (supervised) |" in "\n".join(headline(report))
    assert "| Zhao et al. 2020, RoBERTa, supervised (published) | 62.00 / 64.00 |" in table
