"""score() reaches the model in at most four calls, and the contexts pass each encoding module once, downward
(density_metric/encoding/__init__.py: features -> packing -> text_ids)."""

import inspect
import sys
from pathlib import Path

import pytest

from density_metric import DensityScorer

from ...tiny import synthetic_pairs

PACKAGE = Path(__file__).resolve().parents[3] / "density_metric"
ENCODING = PACKAGE / "encoding"


def project_calls_to_the_model(scorer, contexts, responses) -> list[list[str]]:
    """For every forward pass of the model, the project's functions on the stack from score() down, in call order."""
    stacks = []
    model = scorer.encoder.model
    original = model.forward

    def spy(*args, **kwargs):
        frames = [frame for frame in inspect.stack()[1:] if Path(frame.filename).is_relative_to(PACKAGE)]
        stacks.append([frame.function for frame in reversed(frames)])
        return original(*args, **kwargs)

    model.forward = spy
    try:
        scorer.score(contexts, responses, warn=False)
    finally:
        del model.forward
    return stacks


@pytest.mark.parametrize("fixture", ["tiny_checkpoint", "tiny_shared_checkpoint"])
def test_score_reaches_the_model_in_four_calls(fixture, request):
    scorer = DensityScorer(str(request.getfixturevalue(fixture)), device="cpu", dtype="float32", batch_size=4)
    contexts, responses = synthetic_pairs(10, seed=3)
    stacks = project_calls_to_the_model(scorer, [contexts[0]] * 5 + contexts[5:], responses)
    assert len(stacks) >= 2  # batches of at most 4 pairs
    for stack in stacks:
        below_score = stack[stack.index("score") + 1 :]
        assert below_score == ["_score_checked", "features_and_flags", "features", "batch_features"], stack


def encoding_modules_given_contexts(scorer, contexts, responses) -> list[str]:
    """The encoding modules whose functions are called with a ``contexts`` argument while score() runs, in call
    order, a module once however many of its functions follow each other."""
    seen = []

    def profile(frame, event, arg):
        path = Path(frame.f_code.co_filename)
        code = frame.f_code
        if event == "call" and path.parent == ENCODING and "contexts" in code.co_varnames[: code.co_argcount]:
            if not seen or seen[-1] != path.stem:
                seen.append(path.stem)

    sys.setprofile(profile)
    try:
        scorer.score(contexts, responses, warn=False)
    finally:
        sys.setprofile(None)
    return seen


@pytest.mark.parametrize("fixture", ["tiny_checkpoint", "tiny_shared_checkpoint"])
def test_the_contexts_pass_each_encoding_module_once_in_one_direction(fixture, request):
    scorer = DensityScorer(str(request.getfixturevalue(fixture)), device="cpu", dtype="float32")
    contexts, responses = synthetic_pairs(12, seed=4)
    contexts = [contexts[0]] * 6 + contexts[6:]  # a repeated context: the shared layout groups it
    assert encoding_modules_given_contexts(scorer, contexts, responses) == ["features", "packing", "text_ids"]
