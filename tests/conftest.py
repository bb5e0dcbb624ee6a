"""Shared fixtures: a tiny random-weight DEnsity checkpoint built in code; the test run's own Hugging Face home."""

from __future__ import annotations

import os
import shutil
import sys
import tempfile

# Every Hugging Face cache the tests touch (evaluate's and datasets' caches and their .arrow.lock files, the module
# cache, the Hub cache, xet's logs) goes to a folder of this run, removed at its end, never to the user's
# ~/.cache/huggingface. Set before anything imports huggingface_hub, datasets or evaluate, which read it at import;
# subprocesses inherit it, and a test that needs a home of its own still sets HF_HOME in its subprocess's environment.
HF_HOME = tempfile.mkdtemp(prefix="density-tests-hf-home-")
os.environ["HF_HOME"] = HF_HOME
# Each of these would send one of those caches elsewhere than HF_HOME.
for variable in (
    "HF_HUB_CACHE",
    "HUGGINGFACE_HUB_CACHE",
    "HF_ASSETS_CACHE",
    "HF_XET_CACHE",
    "HF_DATASETS_CACHE",
    "HF_EVALUATE_CACHE",
    "HF_METRICS_CACHE",
    "HF_MODULES_CACHE",
):
    os.environ.pop(variable, None)

# Under pytest-xdist (the `-n` of pyproject's addopts) the workers share the machine's cores: each gets its share of
# torch's threads, set before anything imports torch, so that the subprocesses tests start inherit it too.
_WORKERS = int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "1"))
if _WORKERS > 1 and "OMP_NUM_THREADS" not in os.environ:
    os.environ["OMP_NUM_THREADS"] = str(max(1, (os.cpu_count() or 1) // _WORKERS))

import pytest  # noqa: E402

from density_metric.checkpoint.format import DensityConfig, save_checkpoint  # noqa: E402
from density_metric.encoding.features import Encoder  # noqa: E402
from density_metric.encoding.pair_format import PairFormat  # noqa: E402
from density_metric.gaussian import GaussianAccumulator, GaussianStats  # noqa: E402

from .tiny import build_tiny_encoder, synthetic_pairs  # noqa: E402


def pytest_sessionfinish(session, exitstatus):
    shutil.rmtree(HF_HOME, ignore_errors=True)


@pytest.fixture(autouse=True)
def fresh_accelerate_state():
    """Each test starts with no Accelerate state. Accelerate keeps one state a process: the first Accelerator's
    mixed precision holds for every later test in the worker, and one that asks for another is refused
    ("AcceleratorState has already been initialized"). "auto" is bf16 on a CPU with native bf16 and "no" on one
    without, so which tests met that depended on the machine."""
    yield
    if "accelerate.state" in sys.modules:
        from accelerate.state import AcceleratorState, GradientState

        AcceleratorState._reset_state(reset_partial_state=True)
        GradientState._reset_state()


def build_tiny_checkpoint(directory, pair_format: PairFormat):
    """A complete DEnsity checkpoint in ``directory / "checkpoint"``: a tiny random encoder, and the
    Gaussian of its features in ``pair_format``, calibrated on held-out synthetic pairs."""
    model, tokenizer = build_tiny_encoder(directory / "encoder_src")
    config = DensityConfig(pair_format=pair_format, name="tiny-test")
    model.save_pretrained(directory / "encoder_src")
    tokenizer.save_pretrained(directory / "encoder_src")
    encoder = Encoder.load(directory / "encoder_src", config.pair_format, device="cpu", dtype="float32")
    accumulator = GaussianAccumulator(encoder.dim)
    accumulator.update(encoder.features(encoder.encode(*synthetic_pairs(300, seed=1), group=False)))
    heldout = synthetic_pairs(200, seed=2)
    stats = GaussianStats.fit(accumulator)
    stats = stats.calibrated(stats.distances(encoder.features(encoder.encode(*heldout, group=False))))
    out = directory / "checkpoint"
    save_checkpoint(
        out, stats, config, model=encoder.model, tokenizer=encoder.tokenizer, card="# tiny test checkpoint\n"
    )
    return out


@pytest.fixture(scope="session")
def tiny_checkpoint(tmp_path_factory):
    """A complete DEnsity checkpoint directory with a tiny random encoder, in the paper's layout."""
    return build_tiny_checkpoint(
        tmp_path_factory.mktemp("tiny_checkpoint"), PairFormat(max_length=64, max_response_length=24)
    )


@pytest.fixture(scope="session")
def tiny_shared_checkpoint(tmp_path_factory):
    """The same tiny encoder with its Gaussian fitted in the shared-context layout."""
    pair_format = PairFormat(max_length=64, max_response_length=24, layout="shared-context")
    return build_tiny_checkpoint(tmp_path_factory.mktemp("tiny_shared_checkpoint"), pair_format)


@pytest.fixture(scope="session")
def tiny_mean_pooled_checkpoint(tmp_path_factory):
    """The same tiny encoder in the shared-context layout, its features mean-pooled over each block."""
    pair_format = PairFormat(max_length=64, max_response_length=24, layout="shared-context", pooling="mean")
    return build_tiny_checkpoint(tmp_path_factory.mktemp("tiny_mean_pooled_checkpoint"), pair_format)


@pytest.fixture(scope="session")
def tiny_scorer(tiny_checkpoint):
    from density_metric import DensityScorer

    return DensityScorer(str(tiny_checkpoint), device="cpu", dtype="float32", batch_size=8)


@pytest.fixture(scope="module")
def backbone(tmp_path_factory):
    """A tiny encoder to train (tests/train/loop/test_training.py, tests/train/loop/test_resume.py), without dropout, so runs are deterministic across process layouts."""
    directory = tmp_path_factory.mktemp("backbone")
    model, tokenizer = build_tiny_encoder(directory)
    model.config.hidden_dropout_prob = model.config.attention_probs_dropout_prob = 0.0
    model.save_pretrained(directory)
    tokenizer.save_pretrained(directory)
    return directory


@pytest.fixture
def train_cli_error(capsys):
    """Run ``python -m train`` (in-process) on argv that must fail as a user error: exit code 2 and
    one ``error: ...`` line on stderr, no traceback. Returns that line."""
    from density_train.commands import main

    def run(argv: list[str]) -> str:
        capsys.readouterr()
        with pytest.raises(SystemExit) as stop:
            main([str(arg) for arg in argv])
        err = capsys.readouterr().err
        assert stop.value.code == 2, err
        errors = [line for line in err.splitlines() if line.startswith("error: ")]
        assert len(errors) == 1 and "Traceback" not in err, err
        return errors[0]

    return run
