"""benchmarks/compare_speed.py: its plain loop gives compare()'s p-values exactly, so docs/speed.md's "identical" holds."""

import json

import numpy as np

from benchmarks import compare_speed
from density_metric import compare

# 8 rows whose differences are +-0.1 up to float rounding: many swaps of rows give |delta| in exact
# arithmetic and fall short of it, or not, by the last bits; compare's tolerance counts them all.
A = np.array([0.8, 0.1, 0.7, 0.2, 0.8, 0.5, 0.3, 0.4])
B = A - np.array([0.1, 0.1, 0.1, 0.1, 0.1, 0.1, -0.1, -0.1])


def test_the_loop_counts_ties_as_compare_does_so_the_p_values_are_identical():
    result = compare([A, B], resamples=200, trials=500, seed=12345)
    reference = compare_speed.loop_compare(np.stack([A, B], axis=1), resamples=200, trials=500, seed=12345)
    for key in ("p_bootstrap", "p_randomization"):
        assert result.pairs[0][key] == reference[key][0], key
    assert np.allclose(result.pairs[0]["ci"], reference["ci"], rtol=0, atol=1e-12)
    # Sacrebleu's plain >= misses the ties that rounding put below |delta| (p 0.20 here, not 0.31).
    plain = compare_speed.loop_compare(np.stack([A, B], axis=1), resamples=200, trials=500, seed=12345, rtol=None)
    assert plain["p_randomization"][0] < reference["p_randomization"][0]


def test_the_benchmark_checks_and_records_the_largest_difference(tmp_path):
    out = tmp_path / "speed.json"
    options = ["--rows", "300", "--systems", "3", "--resamples", "100", "--trials", "300", "--repeats", "1"]
    report = compare_speed.main([*options, "--out", str(out)])
    assert report["max_p_value_difference"] == 0.0 and report["max_interval_difference"] < 1e-12
    assert report["max_p_value_difference_plain_ge"] >= 0.0
    assert json.loads(out.read_text()) == report
