"""LABEL=PATH arguments of the scripts that put checkpoints side by side (benchmarks.checkpoints)."""

import pytest

from benchmarks.checkpoints import named_checkpoints


def test_labels_map_to_paths_in_order_and_a_path_may_hold_equals_signs():
    named = named_checkpoints(["shipped=density_metric/default", "soup=runs/a=b/candidate"])
    assert list(named.items()) == [("shipped", "density_metric/default"), ("soup", "runs/a=b/candidate")]
    assert named_checkpoints([]) == {}


@pytest.mark.parametrize("arg", ["density_metric/default", "=runs/x", "soup="])
def test_a_malformed_argument_is_named_with_its_position(arg):
    with pytest.raises(SystemExit, match=rf"argument 2 \({arg!r}\): expected LABEL=PATH"):
        named_checkpoints(["shipped=density_metric/default", arg])


def test_a_label_given_twice_is_refused():
    with pytest.raises(SystemExit, match="the label 'a' is already given to x"):
        named_checkpoints(["a=x", "a=y"])
