"""The evaluate module (issue 68): a checkpoint named as evaluate.load's second argument scores (or is refused), the
module batches as DensityScorer does, and its errors name the keyword or option that is wrong."""

import inspect

import evaluate
import numpy as np
import pytest

from density_metric import DensityScorer

from .test_evaluate_module import FIRST, MODULE_PATH, PAIRS, TOY_MODULE, run_with_offline_hub


@pytest.fixture(scope="module")
def metric(tiny_checkpoint):
    return evaluate.load(MODULE_PATH, checkpoint=str(tiny_checkpoint), device="cpu", dtype="float32")


def test_a_checkpoint_named_as_the_config_name_scores_with_that_checkpoint(tiny_checkpoint, tiny_scorer):
    """evaluate.load('density', NAME) is how COMET's module names its model; it scored with the bundled one."""
    named = evaluate.load(MODULE_PATH, str(tiny_checkpoint), device="cpu", dtype="float32")
    results = named.compute(**PAIRS)
    assert named.scorer.checkpoint.path == tiny_checkpoint.resolve()
    np.testing.assert_allclose(results["scores"], tiny_scorer.score(PAIRS["contexts"], PAIRS["responses"]).scores)
    assert "/" not in named.config_name  # evaluate joins it into its cache paths: no file lands in the checkpoint


def test_a_config_name_and_another_checkpoint_are_refused_naming_both(tiny_checkpoint):
    with pytest.raises(ValueError, match=r"evaluate.load\('density', '/elsewhere', checkpoint='.*'\): two checkp"):
        evaluate.load(MODULE_PATH, "/elsewhere", checkpoint=str(tiny_checkpoint), device="cpu")


def test_a_hub_checkpoint_named_as_the_config_name_scores_and_an_unknown_one_is_refused(tiny_checkpoint, tmp_path):
    code = (
        "import evaluate\n"
        f"m = evaluate.load({MODULE_PATH!r}, 'org/tiny-density', checkpoint_revision={FIRST!r}, device='cpu')\n"
        "print(m.compute(contexts=[['hi']], responses=['hello'])['signature'])\n"
        "try:\n"
        f"    evaluate.load({MODULE_PATH!r}, 'org/no-such-density', device='cpu')\n"
        "except ValueError as err:\n"
        "    print('refused:', err)\n"
    )
    signature, refusal = run_with_offline_hub(tiny_checkpoint, tmp_path, code).stdout.strip().splitlines()[-2:]
    assert f"|checkpoint=org/tiny-density@{FIRST}|" in signature
    assert refusal.startswith("refused: org/no-such-density: revision 'main' is not in the local Hub cache")


def test_the_module_takes_every_default_it_shares_with_the_scorer_from_the_scorer(metric, tiny_checkpoint):
    """It batched 64 pairs on a GPU where DensityScorer fills its token budget, so bf16 scores differed."""
    from density_metric.density.density import Density

    module = inspect.signature(Density.__init__).parameters
    scorer = inspect.signature(DensityScorer.__init__).parameters
    shared = [name for name in module if name in scorer and name not in ("self", "checkpoint", "kwargs")]
    assert {"batch_size", "device", "dtype", "max_length"} <= set(shared)
    assert {name: module[name].default for name in shared} == {name: scorer[name].default for name in shared}
    assert (
        metric.scorer.batch_size is None
        and metric.scorer.encoder.max_tokens == DensityScorer(str(tiny_checkpoint), device="cpu").encoder.max_tokens
    )


@pytest.mark.parametrize("device", ["mps", "xpu", "meta"])
def test_a_device_this_scorer_cannot_use_is_one_value_error_naming_device(tiny_checkpoint, device):
    with pytest.raises(ValueError, match=rf"^device='{device}': DEnsity scores on 'cpu' or 'cuda'"):
        evaluate.load(MODULE_PATH, checkpoint=str(tiny_checkpoint), device=device)
    with pytest.raises(ValueError, match=rf"^device='{device}'"):
        DensityScorer(str(tiny_checkpoint), device=device)


def test_a_misspelled_keyword_of_compute_add_batch_or_add_is_named_with_the_right_one(metric):
    with pytest.raises(ValueError, match=r"^compute: unknown keyword 'respones' \(did you mean 'responses'\?\); it"):
        metric.compute(contexts=PAIRS["contexts"], respones=PAIRS["responses"])
    with pytest.raises(ValueError, match=r"^add_batch: unknown keyword 'respones' \(did you mean 'responses'\?\)"):
        metric.add_batch(contexts=PAIRS["contexts"], respones=PAIRS["responses"])
    with pytest.raises(ValueError, match=r"^add: unknown keyword 'contexs' \(did you mean 'contexts'\?\)"):
        metric.add(contexs=["hi"], responses="hello")
    assert len(metric.compute(**PAIRS)["scores"]) == 2  # nothing was added


def test_an_unknown_keyword_is_a_value_error_naming_it_and_the_accepted_names(metric):
    with pytest.raises(ValueError) as raised:
        metric.compute(foo=1)
    assert str(raised.value) == (
        "compute: unknown keyword 'foo'; it takes contexts, responses, sources, predictions, references"
    )


def test_a_combined_add_batch_without_contexts_says_what_to_pass(metric, tmp_path):
    """evaluate.combine's add_batch gives each module the inputs its features name: a bare KeyError: 'contexts'."""
    (tmp_path / "toy").mkdir()
    (tmp_path / "toy" / "toy.py").write_text(TOY_MODULE)
    combined = evaluate.combine([metric, evaluate.load(str(tmp_path / "toy"))])
    with pytest.raises(KeyError) as raised:
        combined.add_batch(predictions=PAIRS["responses"], references=["a", "b"], sources=PAIRS["contexts"])
    message = str(raised.value)
    assert message.startswith("'contexts': evaluate.combine's add and add_batch give density only the inputs named")
    assert "pass contexts=... and responses=..." in message and "to the combined compute" in message
    # The names still work as names: the combined compute, and add_batch given contexts and responses.
    results = combined.compute(predictions=PAIRS["responses"], references=["a", "b"], sources=PAIRS["contexts"])
    np.testing.assert_array_equal(results["scores"], metric.compute(**PAIRS)["scores"])
