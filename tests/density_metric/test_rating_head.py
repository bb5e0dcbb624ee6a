"""The few-shot rating head: numpy ridge and its cross-validation against scikit-learn, the
``calibrate`` command on a tiny checkpoint, the file format, and ratings in every output."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest
from safetensors.numpy import load_file, save_file
from scipy.stats import pearsonr
from sklearn.linear_model import Ridge

from density_metric import DensityScorer
from density_metric.checkpoint.format import HEAD_FILE, RATING_FILE, CheckpointError, load_checkpoint
from density_metric.rating import RatingHead, cross_validated_mse, ridge, standardise
from density_train.commands import main as train_main
from density_train.commands.calibrate import read_ratings

from ..tiny import synthetic_pairs


def test_ridge_equals_scikit_learn():
    rng = np.random.default_rng(0)
    x, y = rng.normal(size=(60, 7)) * [1, 10, 0.1, 1, 1, 3, 2], rng.normal(size=60)
    mean, scale = standardise(x)
    for alpha in (0.01, 1.0, 30.0):
        weight, intercept = ridge((x - mean) / scale, y, alpha)
        reference = Ridge(alpha=alpha).fit((x - mean) / scale, y)
        np.testing.assert_allclose(weight, reference.coef_, rtol=1e-8, atol=1e-12)
        assert intercept == pytest.approx(reference.intercept_, rel=1e-8)


def test_cross_validation_equals_a_naive_loop_over_folds():
    rng = np.random.default_rng(1)
    x = rng.normal(size=(40, 5))
    y = x @ np.array([1.0, -2.0, 0.0, 0.0, 0.5]) + rng.normal(scale=0.3, size=40)
    alphas = [0.1, 1.0, 100.0]
    folds = np.array_split(np.random.default_rng(7).permutation(40), 4)
    expected = []
    for alpha in alphas:
        squared = 0.0
        for held in folds:
            kept = np.array([i for i in range(40) if i not in set(held)])
            mu, sd = x[kept].mean(0), x[kept].std(0)
            model = Ridge(alpha=alpha).fit((x[kept] - mu) / sd, y[kept])
            squared += float(np.sum((model.predict((x[held] - mu) / sd) - y[held]) ** 2))
        expected.append(squared / 40)
    np.testing.assert_allclose(cross_validated_mse(x, y, alphas, 4, seed=7), expected, rtol=1e-8)


def test_cross_validation_picks_a_large_penalty_for_noise_and_a_small_one_for_signal():
    rng = np.random.default_rng(2)
    features = rng.normal(size=(120, 30))
    distances = rng.normal(size=120)
    signal = 3 * distances + features[:, 0]
    strong = RatingHead.fit(distances, None, features, signal + rng.normal(scale=0.01, size=120))
    assert strong.uses_features and strong.alpha < 1
    noise = RatingHead.fit(distances, None, features, rng.normal(size=120))
    assert noise.inputs == "distance" and noise.alpha > 1


def test_cross_validation_leaves_out_the_features_when_they_only_add_noise():
    rng = np.random.default_rng(3)
    features, distances, classifier = rng.normal(size=(100, 60)), rng.normal(size=100), rng.normal(size=100)
    ratings = distances - 0.5 * classifier + rng.normal(scale=0.3, size=100)
    head = RatingHead.fit(distances, classifier, features, ratings)
    assert head.inputs == "distance,classifier"
    assert head.weight.shape == (2,)
    np.testing.assert_allclose(head.predict(distances, classifier, features), head.predict(distances, classifier, None))


# ----------------------------------------------------------------------------- the command


@pytest.fixture(scope="module")
def with_head(tiny_checkpoint, tmp_path_factory):
    folder = shutil.copytree(tiny_checkpoint, tmp_path_factory.mktemp("with_head") / "checkpoint")
    save_file(
        {"weight": np.linspace(-1, 1, 32, dtype=np.float32), "bias": np.array(0.5, dtype=np.float32)},
        str(folder / HEAD_FILE),
    )
    return folder


def synthetic_ratings(scorer: DensityScorer, n: int, seed: int) -> list[dict]:
    """Ratings that a linear head can recover: a linear function of distance and f(c, r), plus noise."""
    contexts, responses = synthetic_pairs(n, seed)
    distance = scorer.distances(contexts, responses)
    f = scorer.classifier_scores(contexts, responses)
    score = 3 - 0.8 * (distance - distance.mean()) / distance.std() + 0.5 * (f - f.mean()) / f.std()
    score += np.random.default_rng(seed).normal(scale=0.1, size=n)
    return [{"context": c, "response": r, "score": float(s)} for c, r, s in zip(contexts, responses, score)]


@pytest.fixture(scope="module")
def calibrated(with_head, tmp_path_factory):
    folder = tmp_path_factory.mktemp("calibrated")
    scorer = DensityScorer(str(with_head), device="cpu", dtype="float32")
    rows = synthetic_ratings(scorer, 200, seed=3)
    ratings = folder / "ratings.jsonl"
    ratings.write_text("".join(json.dumps(row) + "\n" for row in rows))
    train_main(
        ["calibrate", str(with_head), "--ratings", str(ratings), "--out", str(folder / "rated"), "--device", "cpu"]
    )
    return folder / "rated", scorer


def test_calibrated_checkpoint_predicts_held_out_ratings(calibrated):
    rated, scorer = calibrated
    checkpoint = load_checkpoint(rated)
    assert checkpoint.rating is not None and checkpoint.rating.n_ratings == 200
    assert checkpoint.rating.uses_classifier  # the ratings depend on f(c, r)
    held_out = synthetic_ratings(scorer, 150, seed=4)
    result = DensityScorer(str(rated), device="cpu", dtype="float32").score(
        [row["context"] for row in held_out], [row["response"] for row in held_out]
    )
    assert pearsonr(result.ratings, [row["score"] for row in held_out]).statistic > 0.9
    # the scores themselves do not change
    np.testing.assert_allclose(
        result.scores, scorer.score([r["context"] for r in held_out], [r["response"] for r in held_out]).scores
    )
    card = (rated / "README.md").read_text()
    assert "## Rating head" in card and "200 human ratings" in card


def test_calibrating_into_a_used_folder_leaves_nothing_of_the_earlier_checkpoint(calibrated, with_head, tmp_path):
    from density_metric.checkpoint.format import CHECKPOINT_FILES, RATING_FILE

    rated, _ = calibrated
    stale = next(name for name in CHECKPOINT_FILES if not (with_head / name).exists() and name != RATING_FILE)
    out = shutil.copytree(rated, tmp_path / "used")
    (out / stale).write_text("left over")
    train_main(["calibrate", str(with_head), "--ratings", str(rated.parent / "ratings.jsonl"), "--out", str(out)])
    assert not (out / stale).exists()
    assert load_checkpoint(out).rating is not None


def test_ratings_appear_only_with_a_rating_head(calibrated, with_head, tmp_path):
    import evaluate

    import density_metric
    from density_metric.cli import main as cli_main

    rated, _ = calibrated
    pairs = dict(contexts=[["hi", "how are you"], ["what is the weather"]], responses=["fine thanks", "nice day"])
    module = str(Path(density_metric.__file__).parent / "density")
    with_rating = evaluate.load(module, checkpoint=str(rated), device="cpu", dtype="float32").compute(**pairs)
    without = evaluate.load(module, checkpoint=str(with_head), device="cpu", dtype="float32").compute(**pairs)
    assert len(with_rating["ratings"]) == 2 and "ratings" not in without
    rows = tmp_path / "rows.jsonl"
    rows.write_text("".join(json.dumps({"context": c, "response": r}) + "\n" for c, r in zip(*pairs.values())))
    for checkpoint, expect in ((rated, True), (with_head, False)):
        out = tmp_path / f"out_{expect}.jsonl"
        cli_main(
            ["score", str(rows), "-o", str(out), "--checkpoint", str(checkpoint), "--device", "cpu", "--no-progress"]
        )
        records = [json.loads(line) for line in out.read_text().splitlines()]
        assert ("density_rating" in records[0]) is expect
    np.testing.assert_allclose(
        [r["density_rating"] for r in [json.loads(x) for x in (tmp_path / "out_True.jsonl").read_text().splitlines()]],
        with_rating["ratings"],
        rtol=1e-6,
    )
    from datasets import Dataset

    from density_metric import DensityScorer

    table = Dataset.from_dict({"context": pairs["contexts"], "response": pairs["responses"]})
    for checkpoint, expect in ((rated, True), (with_head, False)):
        scored = DensityScorer(str(checkpoint), device="cpu", dtype="float32").score_dataset(table)
        assert ("density_rating" in scored.column_names) is expect
    np.testing.assert_allclose(scored_rating(rated, table), with_rating["ratings"], rtol=1e-6)


def scored_rating(checkpoint, table) -> list[float]:
    from density_metric import DensityScorer

    return DensityScorer(str(checkpoint), device="cpu", dtype="float32").score_dataset(table)["density_rating"]


@pytest.mark.parametrize(
    "damage, message",
    [
        (lambda t, m: t.update(weight=t["weight"][:-1].copy()), "tensor 'weight' must have shape"),
        (lambda t, m: t["scale"].__setitem__(0, np.nan), "tensor 'scale' holds NaN"),
        (lambda t, m: m.pop("alpha"), r"metadata \['alpha'\] missing"),
        (lambda t, m: m.update(inputs="distance,features"), "tensor 'mean' must have shape"),
    ],
)
def test_a_damaged_rating_file_is_refused_with_its_name(calibrated, tmp_path, damage, message):
    rated = shutil.copytree(calibrated[0], tmp_path / "rated")
    from safetensors import safe_open

    with safe_open(str(rated / RATING_FILE), "numpy") as handle:
        metadata = dict(handle.metadata())
    tensors = load_file(str(rated / RATING_FILE))
    damage(tensors, metadata)
    save_file(tensors, str(rated / RATING_FILE), metadata=metadata)
    with pytest.raises(CheckpointError, match=f"{RATING_FILE}.*{message}"):
        load_checkpoint(rated)


def test_a_head_that_needs_f_is_refused_without_the_classifier_head(calibrated, tmp_path):
    rated = shutil.copytree(calibrated[0], tmp_path / "rated")
    (rated / HEAD_FILE).unlink()
    with pytest.raises(CheckpointError, match=f"{RATING_FILE}.*need f"):
        load_checkpoint(rated)


@pytest.mark.parametrize(
    "line, message",
    [
        ('{"context": ["hi"], "response": "yo"}', "line 2: field 'score' is missing"),
        ('{"context": ["hi"], "response": "yo", "score": "high"}', "line 2: field 'score' must be a finite number"),
        ('{"context": ["hi"], "response": 3, "score": 1}', "line 2: response"),
        ('{"response": "yo", "score": 1}', "line 2: field 'context' is missing"),
        ("not json", "line 2: not valid JSON"),
    ],
)
def test_bad_ratings_name_the_line_and_the_field(tmp_path, line, message):
    path = tmp_path / "ratings.jsonl"
    path.write_text('{"context": ["hi"], "response": "hello", "score": 2}\n' + line + "\n")
    with pytest.raises(ValueError, match=message):
        read_ratings(path)


def test_fewer_ratings_than_folds_is_refused(with_head, tmp_path, train_cli_error):
    path = tmp_path / "ratings.jsonl"
    path.write_text("".join(json.dumps({"context": ["hi"], "response": f"r{i}", "score": i}) + "\n" for i in range(3)))
    assert "3 ratings, fewer than the 5 cross-validation folds" in train_cli_error(
        ["calibrate", str(with_head), "--ratings", str(path), "--out", str(tmp_path / "o"), "--device", "cpu"]
    )
