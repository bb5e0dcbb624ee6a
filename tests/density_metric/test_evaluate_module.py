"""The evaluate module: load by path and by bare name (offline, from any directory), compute, add_batch."""

import os
import subprocess
import sys
from pathlib import Path

import datasets
import evaluate
import numpy as np
import pytest

import density_metric

MODULE_PATH = str(Path(density_metric.__file__).parent / "density")
PAIRS = dict(contexts=[["hi", "how are you"], ["what is the weather"]], responses=["fine thanks", "nice day"])


@pytest.fixture(scope="module")
def metric(tiny_checkpoint):
    return evaluate.load(MODULE_PATH, checkpoint=str(tiny_checkpoint), device="cpu", batch_size=4, dtype="float32")


def test_compute_returns_scores_calibrated_density_and_signature(metric, tiny_scorer):
    results = metric.compute(**PAIRS)
    assert {"scores", "calibrated", "density", "signature"} <= set(results)
    expected = tiny_scorer.score(PAIRS["contexts"], PAIRS["responses"])
    np.testing.assert_allclose(results["scores"], expected.scores, rtol=1e-5)
    np.testing.assert_allclose(results["calibrated"], expected.calibrated, rtol=1e-5)
    assert results["density"] == pytest.approx(np.mean(expected.scores), rel=1e-5)
    assert "dtype=float32" in results["signature"]


def test_compute_floors_an_empty_reply_flags_every_row_and_warns_once(metric, tiny_scorer, caplog):
    with caplog.at_level("WARNING"):
        results = metric.compute(contexts=[["hi"], ["hi"], ["hi"]], responses=["fine thanks", "", "?!"])
    assert results["flags"] == [[], ["empty"], ["punctuation"]]
    assert results["scores"][1] == pytest.approx(-2 * tiny_scorer.stats.quantiles[-1])
    assert results["scores"][1] < results["scores"][0] and results["calibrated"][1] == 0.0
    assert caplog.text.count("rows are flagged") == 1 and "floor=v2" in results["signature"]


def test_load_time_options_reach_the_scorer(metric):
    assert metric.scorer.batch_size == 4
    assert metric.scorer.encoder.device.type == "cpu"


def test_add_batch_then_compute_equals_one_compute(metric):
    metric.add_batch(contexts=PAIRS["contexts"][:1], responses=PAIRS["responses"][:1])
    metric.add_batch(contexts=PAIRS["contexts"][1:], responses=PAIRS["responses"][1:])
    np.testing.assert_allclose(metric.compute()["scores"], metric.compute(**PAIRS)["scores"], rtol=1e-6)


def test_add_one_row_with_string_context(metric):
    metric.add(contexts="how are you", responses="fine thanks")
    single = metric.compute()["scores"]
    assert single == pytest.approx(metric.compute(contexts=[["how are you"]], responses=["fine thanks"])["scores"])


@pytest.mark.parametrize(
    "row, message",
    [
        (dict(contexts=["hi"], responses=None), "responses must be a string, got NoneType"),
        (dict(contexts=["hi"], responses="a\ud800"), r"responses holds a lone surrogate \(U\+D800 at 1\)"),
        (dict(contexts=None, responses="x"), "contexts is None"),
        (dict(contexts=["hi", 7], responses="x"), r"contexts\[1\] must be a string, got int"),
    ],
)
def test_add_refuses_a_bad_row_naming_the_field_and_adds_nothing(metric, row, message):
    with pytest.raises(ValueError, match=message):
        metric.add(**row)
    metric.add(contexts="how are you", responses="fine thanks")
    assert len(metric.compute()["scores"]) == 1


def test_mixed_string_and_list_contexts_are_not_mangled(metric):
    mixed = metric.compute(contexts=["how are you", ["hi", "how are you"]], responses=["fine", "fine"])
    lists = metric.compute(contexts=[["how are you"], ["hi", "how are you"]], responses=["fine", "fine"])
    assert mixed["scores"] == pytest.approx(lists["scores"])


def test_datasets_columns_can_be_passed_to_compute(metric):
    ds = datasets.Dataset.from_dict({"context": PAIRS["contexts"], "response": PAIRS["responses"]})
    assert metric.compute(contexts=ds["context"], responses=ds["response"])["scores"] == pytest.approx(
        metric.compute(**PAIRS)["scores"]
    )


def test_bad_row_in_compute_names_field_and_row(metric):
    with pytest.raises(ValueError, match=r"responses\[1\] must be a string"):
        metric.compute(contexts=[["hi"], ["hi"]], responses=["ok", None])
    with pytest.raises(ValueError, match="contexts has 1 rows but responses has 2"):
        metric.compute(contexts=[["hi"]], responses=["ok", "no"])


@pytest.fixture(scope="module")
def installed(tmp_path_factory):
    """``python -m density_metric install`` into a temporary HF_HOME: (environment, path of the installed script)."""
    home = tmp_path_factory.mktemp("hf_home")
    env = {**os.environ, "HF_HOME": str(home), "HF_EVALUATE_OFFLINE": "1", "HF_HUB_OFFLINE": "1"}
    env["HF_DATASETS_OFFLINE"] = "1"
    install = subprocess.run(
        [sys.executable, "-m", "density_metric", "install"], env=env, capture_output=True, text=True, timeout=300
    )
    assert install.returncode == 0, install.stderr
    assert "evaluate-metric--density" in install.stdout
    (script,) = home.glob("modules/evaluate_modules/metrics/evaluate-metric--density/*/density.py")
    return env, script


def load_by_bare_name(env, tiny_checkpoint, workdir, times=1):
    """Load and compute ``evaluate.load('density')`` ``times`` times in a fresh process elsewhere."""
    code = (
        "import evaluate\n"
        + (
            f"m = evaluate.load('density', checkpoint={str(tiny_checkpoint)!r}, device='cpu')\n"
            "r = m.compute(contexts=[['hi']], responses=['hello'])\n"
            "print(sorted(r))\n"
        )
        * times
    )
    workdir.mkdir(exist_ok=True)
    run = subprocess.run(
        [sys.executable, "-c", code], env=env, cwd=workdir, capture_output=True, text=True, timeout=300
    )
    assert run.returncode == 0, run.stderr
    return run


def test_bare_name_loads_offline_from_any_directory_after_install(installed, tiny_checkpoint, tmp_path):
    run = load_by_bare_name(installed[0], tiny_checkpoint, tmp_path / "elsewhere")
    assert "['calibrated', 'calibrated_mean', 'density', 'flags', 'scores', 'signature']" in run.stdout
    assert "was installed from" not in run.stderr  # installed from the package that imports it


def test_the_installed_module_records_the_package_it_came_from(installed):
    import hashlib

    text = installed[1].read_text(encoding="utf-8")
    package_script = Path(MODULE_PATH) / "density.py"
    stamp = {
        "version": density_metric.__version__,
        "package": str(Path(density_metric.__file__).parent),
        "sha256": hashlib.sha256(package_script.read_bytes()).hexdigest(),
    }
    assert f"INSTALLED_FROM = {stamp!r}\n" in text
    assert text.replace(f"INSTALLED_FROM = {stamp!r}", "INSTALLED_FROM = None") == package_script.read_text()


def test_a_module_installed_from_another_version_warns_once(installed, tiny_checkpoint, tmp_path):
    env, script = installed
    original = script.read_text(encoding="utf-8")
    version = f"'version': {density_metric.__version__!r}"
    try:
        script.write_text(original.replace(version, "'version': '0.0.1'"), encoding="utf-8")
        run = load_by_bare_name(env, tiny_checkpoint, tmp_path / "elsewhere", times=2)
    finally:
        script.write_text(original, encoding="utf-8")
    assert run.stderr.count("was installed from density_metric 0.0.1") == 1, run.stderr
    assert f"imports density_metric {density_metric.__version__}" in run.stderr
    assert "python -m density_metric install" in run.stderr


def test_a_module_installed_from_another_checkout_of_the_same_version_warns(caplog):
    from density_metric.install import check_installed_module, stamp

    other = {**stamp(), "sha256": "0" * 64, "package": "/elsewhere/density_metric"}
    with caplog.at_level("WARNING", logger="density_metric.install"):
        assert check_installed_module(stamp(), "/cache/a/density.py")
        assert not check_installed_module(other, "/cache/b/density.py")
        assert not check_installed_module(other, "/cache/b/density.py")
    assert caplog.text.count("was installed from") == 1
    assert "/elsewhere/density_metric" in caplog.text and "whose module script differs" in caplog.text


FIRST, SECOND = "1" * 40, "2" * 40


def run_with_offline_hub(tiny_checkpoint, tmp_path, code: str) -> subprocess.CompletedProcess:
    """Run ``code`` in a fresh process, offline, with a Hub cache in which org/tiny-density holds two commits of the
    tiny checkpoint, FIRST and SECOND, and ``main`` points to SECOND; the process must succeed."""
    from ..hub_cache import build_hub_cache

    for commit in (FIRST, SECOND):
        build_hub_cache(tmp_path / "hub", "org/tiny-density", tiny_checkpoint, commit)
    env = {
        **os.environ,
        "HF_HUB_OFFLINE": "1",
        "HF_HUB_CACHE": str(tmp_path / "hub"),
        "HF_HOME": str(tmp_path / "home"),
    }
    run = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr
    return run


def test_checkpoint_revision_reaches_the_hub_download(tiny_checkpoint, tmp_path):
    """evaluate.load keeps `revision` for the module script; `checkpoint_revision` pins the model.

    The cache holds two commits and `main` points to the second: the pinned first one is loaded,
    without the unpinned-revision warning."""
    code = (
        "import evaluate\n"
        f"m = evaluate.load({MODULE_PATH!r}, checkpoint='org/tiny-density', checkpoint_revision={FIRST!r}, "
        "device='cpu', dtype='float32')\n"
        "print(m.compute(contexts=[['hi']], responses=['hello'])['signature'])\n"
    )
    run = run_with_offline_hub(tiny_checkpoint, tmp_path, code)
    assert f"checkpoint=org/tiny-density@{FIRST}|" in run.stdout
    assert "without a pinned revision" not in run.stderr


def test_misspelled_load_options_are_refused_with_their_names_and_the_known_ones():
    """Unknown keywords would otherwise reach evaluate.Metric, which drops them: the bundled model
    would score in place of the checkpoint asked for."""
    with pytest.raises(ValueError) as raised:
        evaluate.load(MODULE_PATH, chekpoint="/tmp/x", batchsize=0, dtpye="bfloat16", device="cpu")
    message = str(raised.value)
    for wrong, right in (("chekpoint", "checkpoint"), ("batchsize", "batch_size"), ("dtpye", "dtype")):
        assert f"{wrong!r} (did you mean {right!r}?)" in message
    assert "the options are checkpoint, checkpoint_revision, device, batch_size, dtype, max_length," in message
    assert "cache_dir" in message and "experiment_id" in message


def test_evaluate_metric_options_still_pass_through(tiny_checkpoint, tmp_path):
    metric = evaluate.load(
        MODULE_PATH,
        checkpoint=str(tiny_checkpoint),
        device="cpu",
        dtype="float32",
        config_name="default",
        cache_dir=str(tmp_path),
        experiment_id="options",
        seed=3,
        max_concurrent_cache_files=5,
        timeout=50,
    )
    assert (metric.experiment_id, metric.seed, metric.max_concurrent_cache_files, metric.timeout) == (
        "options",
        3,
        5,
        50,
    )
    assert len(metric.compute(**PAIRS)["scores"]) == 2


def test_the_tests_keep_every_hugging_face_cache_in_a_home_of_their_own():
    # evaluate.load by path and datasets left .arrow.lock files in the user's ~/.cache/huggingface (tests/conftest.py).
    import datasets
    import evaluate
    from huggingface_hub import constants

    home = Path(os.environ["HF_HOME"])
    assert home.name.startswith("density-tests-hf-home-") and home.is_dir()
    caches = [evaluate.config.HF_METRICS_CACHE, evaluate.config.HF_MODULES_CACHE, datasets.config.HF_DATASETS_CACHE]
    caches += [constants.HF_HUB_CACHE, constants.HF_XET_CACHE]
    assert all(Path(cache).is_relative_to(home) for cache in caches), caches


def test_predictions_and_sources_are_responses_and_contexts(metric):
    """Issue 60: COMET's module takes sources and predictions; compute(predictions=..., references=...) failed."""
    named = metric.compute(**PAIRS)
    aliased = metric.compute(predictions=PAIRS["responses"], sources=PAIRS["contexts"], references=["x", "y"])
    np.testing.assert_array_equal(aliased["scores"], named["scores"])
    with pytest.raises(ValueError, match="give responses or predictions, not both"):
        metric.compute(responses=PAIRS["responses"], predictions=PAIRS["responses"], contexts=PAIRS["contexts"])


TOY_MODULE = """
import datasets
import evaluate


class Toy(evaluate.Metric):
    def _info(self):
        return evaluate.MetricInfo(
            description="exact match",
            citation="",
            inputs_description="",
            features=datasets.Features({"predictions": datasets.Value("string"), "references": datasets.Value("string")}),
        )

    def _compute(self, predictions, references, sources=None):
        return {"exact_match": sum(p == r for p, r in zip(predictions, references)) / len(predictions)}
"""


def test_density_sits_in_evaluate_combine_beside_another_module(metric, tmp_path, tiny_scorer):
    """evaluate.combine passes predictions, references and every other keyword (here sources) to each module."""
    (tmp_path / "toy").mkdir()
    (tmp_path / "toy" / "toy.py").write_text(TOY_MODULE)
    combined = evaluate.combine([metric, evaluate.load(str(tmp_path / "toy"))])
    results = combined.compute(
        predictions=PAIRS["responses"], references=["fine thanks", "rain"], sources=PAIRS["contexts"]
    )
    assert results["exact_match"] == 0.5
    expected = tiny_scorer.score(PAIRS["contexts"], PAIRS["responses"])
    np.testing.assert_allclose(results["scores"], expected.scores, rtol=1e-5)


def test_add_batch_and_add_take_the_names_compute_takes(metric):
    """As evaluate's own loop: add_batch(predictions=..., references=...) batch by batch, then compute()."""
    named = metric.compute(**PAIRS)
    metric.add_batch(predictions=PAIRS["responses"][:1], sources=PAIRS["contexts"][:1], references=["fine"])
    metric.add(prediction=PAIRS["responses"][1], source=PAIRS["contexts"][1], reference="rain")
    np.testing.assert_array_equal(metric.compute()["scores"], named["scores"])
    with pytest.raises(ValueError, match="give contexts or sources, not both"):
        metric.add_batch(contexts=PAIRS["contexts"], sources=PAIRS["contexts"], responses=PAIRS["responses"])
    with pytest.raises(ValueError, match="give responses or prediction, not both"):
        metric.add(contexts=["hi"], responses="hello", prediction="hello")


def test_a_combined_evaluation_adds_batches_given_contexts_and_responses_too(metric, tmp_path):
    """evaluate.combine's add_batch picks each module's inputs by its feature names: density's are contexts and
    responses, so they are given beside predictions and references."""
    (tmp_path / "toy").mkdir()
    (tmp_path / "toy" / "toy.py").write_text(TOY_MODULE)
    combined = evaluate.combine([metric, evaluate.load(str(tmp_path / "toy"))])
    combined.add_batch(predictions=PAIRS["responses"], references=["fine thanks", "rain"], **PAIRS)
    results = combined.compute()
    assert results["exact_match"] == 0.5
    np.testing.assert_array_equal(results["scores"], metric.compute(**PAIRS)["scores"])
