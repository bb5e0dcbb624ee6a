"""Property-based: whatever a user passes, scoring gives scores or a ValueError that names the row."""

import re

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from density_metric.io.inputs import check_pairs

# Anything JSON-like or Python-like a user might pass, nested a few levels.
scalars = st.one_of(
    st.none(), st.booleans(), st.integers(), st.floats(allow_nan=True), st.text(max_size=20), st.binary(max_size=5)
)
values = st.recursive(
    scalars,
    lambda inner: st.one_of(
        st.lists(inner, max_size=4), st.tuples(inner, inner), st.dictionaries(st.text(max_size=3), inner, max_size=2)
    ),
    max_leaves=8,
)
# Rows that are mostly well-formed, so that some examples score and some name a row deep inside.
contexts_rows = st.lists(
    st.one_of(st.lists(st.text(max_size=30), max_size=3), st.text(max_size=30), values), max_size=6
)
responses_rows = st.lists(st.one_of(st.text(max_size=30), values), max_size=6)
whole = st.one_of(contexts_rows, values)

ROW_ERROR = re.compile(r"^(contexts|responses)\[(\d+)\](\[\d+\])? ")
WHOLE_ERROR = re.compile(r"^(contexts|responses) (is required|must be a list)|rows but responses has|are empty")


def assert_names_a_row_or_the_argument(message: str, n_rows: int) -> None:
    match = ROW_ERROR.match(message)
    if match:
        assert int(match.group(2)) < n_rows, message
    else:
        assert WHOLE_ERROR.search(message), message


@settings(max_examples=300, deadline=None)
@given(contexts=whole, responses=st.one_of(responses_rows, values))
def test_checking_arbitrary_input_passes_or_names_the_row(contexts, responses):
    try:
        checked_contexts, checked_responses = check_pairs(contexts, responses)
    except ValueError as err:
        n_rows = len(contexts) if hasattr(contexts, "__len__") else 0
        assert_names_a_row_or_the_argument(str(err), max(n_rows, 1))
    else:
        assert all(isinstance(turn, str) for turns in checked_contexts for turn in turns)
        assert all(isinstance(response, str) for response in checked_responses)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(contexts=contexts_rows, responses=responses_rows)
def test_scoring_arbitrary_rows_gives_scores_or_a_value_error_naming_the_row(tiny_scorer, contexts, responses):
    try:
        result = tiny_scorer.score(contexts, responses)
    except ValueError as err:
        assert_names_a_row_or_the_argument(str(err), max(len(contexts), 1))
    else:
        assert result.scores.shape == (len(responses),)
        assert np.all(np.isfinite(result.scores)) and np.all((result.calibrated >= 0) & (result.calibrated <= 1))
