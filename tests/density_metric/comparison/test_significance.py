"""Paired significance tests (density_metric.comparison.significance) against a plain float64 loop and scipy."""

import itertools

import numpy as np
import pytest
from scipy import stats

from density_metric import compare
from density_metric.comparison.significance import bootstrap_indices


def systems(n=400, shift=0.0, noise=1.0, seed=0):
    """Two systems on the same n rows: b = a + shift + noise, per-row scores that vary by row."""
    rng = np.random.default_rng(seed)
    a = rng.normal(size=n)
    return a, a + shift + rng.normal(scale=noise, size=n)


def loop_reference(a, b, resamples, trials, seed, rtol=1e-5):
    """sacrebleu's procedure written out one resample and one trial at a time, ties counted (>=): a statistic
    ties ``delta`` within 3 times the largest row tolerance, (rtol + n eps) (|a_i| + |b_i|)."""
    n = len(a)
    tolerance = 3 * max((rtol + n * 2.0**-52) * (abs(x) + abs(y)) for x, y in zip(a, b))
    delta = abs(np.mean(a) - np.mean(b)) - tolerance
    indices = np.random.default_rng(seed).choice(n, size=(resamples, n), replace=True)  # sacrebleu's draw
    means_a = [np.mean([a[i] for i in row]) for row in indices]
    means_b = [np.mean([b[i] for i in row]) for row in indices]
    spread = [abs(x - y) for x, y in zip(means_a, means_b)]
    centre = sum(spread) / resamples
    p_bs = (sum(s - centre >= delta for s in spread) + 1) / (resamples + 1)
    swaps = np.random.default_rng(seed).integers(2, size=(trials, n), dtype=bool)  # sacrebleu's draw
    count = 0
    for swap in swaps:
        x = np.where(swap, b, a)
        y = np.where(swap, a, b)
        count += abs(np.mean(x) - np.mean(y)) >= delta
    p_ar = (count + 1) / (trials + 1)
    lower = resamples // 40

    def ci(values):
        ordered = sorted(values)
        return [ordered[lower], ordered[resamples - lower - 1]]

    return {
        "p_bs": p_bs,
        "p_ar": p_ar,
        "ci_a": ci(means_a),
        "ci_delta": ci([x - y for x, y in zip(means_a, means_b)]),
    }


@pytest.mark.parametrize("shift", [0.0, 0.05, 0.15])
def test_p_values_and_intervals_equal_a_plain_loop_at_the_same_seed(shift):
    a, b = systems(n=203, shift=shift, seed=3)  # 203 rows: blocks of the swap matrix do not divide it
    result = compare({"a": a, "b": b}, resamples=300, trials=700, seed=7)
    reference = loop_reference(a, b, 300, 700, 7)
    pair = result.pairs[0]
    assert pair["p_bootstrap"] == pytest.approx(reference["p_bs"], abs=1e-12)
    assert pair["p_randomization"] == pytest.approx(reference["p_ar"], abs=1e-12)
    np.testing.assert_allclose(result.systems[0]["ci"], reference["ci_a"], rtol=0, atol=1e-12)
    np.testing.assert_allclose(pair["ci"], reference["ci_delta"], rtol=0, atol=1e-12)
    assert pair["delta"] == pytest.approx(np.mean(a) - np.mean(b), abs=1e-12)


def assert_same_report(actual, expected, rel: float = 1e-12) -> None:
    """Equal structure, strings and counts; floats within ``rel``: a matrix product's last bit
    depends on the BLAS kernel that its block shape picks (seen on a CPU with AVX512)."""
    if isinstance(expected, dict):
        assert actual.keys() == expected.keys()
        for key in expected:
            assert_same_report(actual[key], expected[key], rel)
    elif isinstance(expected, list):
        assert len(actual) == len(expected)
        for got, want in zip(actual, expected):
            assert_same_report(got, want, rel)
    elif isinstance(expected, float):
        assert actual == pytest.approx(expected, rel=rel, abs=1e-15)
    else:
        assert actual == expected


def test_swap_blocks_draw_the_same_swaps_as_one_matrix(monkeypatch):
    """Many small blocks of the randomization matrix give sacrebleu's single draw: another draw
    would move the p-values and intervals by far more than the 1e-12 allowed."""
    from density_metric.comparison import significance

    a, b = systems(n=77, shift=0.1, seed=4)
    whole = compare([a, b], resamples=50, trials=500, seed=1)
    monkeypatch.setattr(significance, "_CHUNK_VALUES", 77 * 5)  # 32-row blocks (the smallest)
    blocked = compare([a, b], resamples=50, trials=500, seed=1)
    assert_same_report(blocked.pairs, whole.pairs)
    assert_same_report(blocked.systems, whole.systems)
    other = compare([a, b], resamples=50, trials=500, seed=2)  # the check can tell another draw
    with pytest.raises(AssertionError):
        assert_same_report(other.pairs, whole.pairs)


def test_bootstrap_indices_are_sacrebleus_draw():
    expected = np.random.default_rng(12345).choice(1001, size=(20, 1001), replace=True)
    np.testing.assert_array_equal(bootstrap_indices(1001, 20), expected)


@pytest.mark.parametrize("n", [1, 2, 7, 64, 1001])
def test_bootstrap_blocks_are_sacrebleus_draw_in_small_blocks(monkeypatch, n):
    """Blocks of 3 rows (odd numbers of entries included) drawn one after the other are sacrebleu's one matrix,
    and no block holds more than about _CHUNK_VALUES entries."""
    from density_metric.comparison import significance

    monkeypatch.setattr(significance, "_CHUNK_VALUES", 3 * n)
    blocks = list(significance.bootstrap_blocks(n, 20, seed=7))
    assert [len(block) for block in blocks] == [3] * 6 + [2]
    expected = np.random.default_rng(7).choice(n, size=(20, n), replace=True)
    np.testing.assert_array_equal(np.concatenate(blocks), expected)


def test_resampled_means_of_blocks_equal_a_plain_loop(monkeypatch):
    from density_metric.comparison import significance

    scores = np.random.default_rng(3).normal(size=(41, 2))
    expected = np.array([[scores[row, j].mean() for j in range(2)] for row in bootstrap_indices(41, 30, seed=5)])
    monkeypatch.setattr(significance, "_CHUNK_VALUES", 4 * 41)
    blocked = significance.resampled_means(scores, significance.bootstrap_blocks(41, 30, seed=5))
    np.testing.assert_allclose(blocked, expected, rtol=1e-12, atol=1e-15)
    np.testing.assert_allclose(significance.resampled_means(scores, bootstrap_indices(41, 30, 5)), expected, 1e-12)
    with pytest.raises(ValueError, match="index block of shape"):
        significance.resampled_means(scores, [np.zeros((5, 41), dtype=np.int32)])  # more rows than a block


def test_p_values_agree_with_scipy_permutation_test_and_one_sided_t_test():
    a, b = systems(n=1000, shift=0.0, seed=5)  # a small observed difference: p near 0.1
    pair = compare({"a": a, "b": b}).pairs[0]
    t_test = stats.ttest_rel(a, b).pvalue  # two-sided
    permutation = stats.permutation_test(
        (a, b),
        lambda x, y, axis: np.mean(x - y, axis=axis),
        permutation_type="samples",
        n_resamples=10000,
        vectorized=True,
        random_state=0,
    ).pvalue
    assert 0.02 < t_test < 0.3  # the case is not at either end, where any test agrees
    assert pair["p_randomization"] == pytest.approx(permutation, abs=0.015)
    # sacrebleu's bootstrap asks about the observed direction only: about the one-sided p.
    assert pair["p_bootstrap"] == pytest.approx(t_test / 2, abs=0.015)


def test_interval_agrees_with_scipy_bootstrap():
    a, b = systems(n=500, shift=0.1, seed=6)
    result = compare({"a": a, "b": b}, resamples=4000)
    reference = stats.bootstrap((a,), np.mean, n_resamples=4000, method="percentile", random_state=0)
    interval = reference.confidence_interval
    width = interval.high - interval.low
    np.testing.assert_allclose(result.systems[0]["ci"], [interval.low, interval.high], atol=0.05 * width)
    paired = stats.bootstrap(
        (a, b), lambda x, y: np.mean(x) - np.mean(y), paired=True, n_resamples=4000, method="percentile", random_state=0
    ).confidence_interval
    np.testing.assert_allclose(result.pairs[0]["ci"], [paired.low, paired.high], atol=0.05 * (paired.high - paired.low))


def test_identical_systems_are_not_significant():
    a, _ = systems(n=300)
    pair = compare({"a": a, "b": a.copy()}).pairs[0]
    assert pair["p_bootstrap"] == 1.0 and pair["p_randomization"] == 1.0
    assert pair["delta"] == 0.0 and pair["ties"] == 1.0 and pair["winner"] is None


def test_a_shifted_system_is_significant_under_both_tests():
    a, b = systems(n=300, shift=0.3, noise=0.5)
    for test in ("bs", "ar"):
        pair = compare({"base": a, "better": b}, test=test).pairs[0]
        assert pair["p_value"] < 0.01 and pair["test"] == test
        assert pair["winner"] == "better" and pair["delta"] < 0 and pair["ci"][1] < 0


def test_wins_and_ties_are_shares_of_rows():
    pair = compare({"a": [1.0, 2.0, 3.0, 4.0], "b": [0.0, 2.0, 5.0, 1.0]}, resamples=10, trials=10).pairs[0]
    assert (pair["wins_a"], pair["wins_b"], pair["ties"]) == (0.5, 0.25, 0.25)


def test_the_seed_reproduces_every_number_and_names_itself_in_the_signature():
    a, b = systems(n=100, shift=0.1)
    first = compare({"a": a, "b": b}, seed=3, resamples=200, trials=300).to_dict()
    again = compare({"a": a, "b": b}, seed=3, resamples=200, trials=300).to_dict()
    other = compare({"a": a, "b": b}, seed=4, resamples=200, trials=300).to_dict()
    assert first == again and first != other
    assert first["signature"] == "test:ar|ar:300|bs:200|seed:3|rtol:1e-05"


def test_every_pair_of_three_systems_is_compared_once_in_input_order():
    a, b = systems(n=50)
    result = compare([a, b, a + 1], names=["x", "y", "z"], resamples=20, trials=200)  # Holm over 3 tests needs p < 1/60
    assert [(p["a"], p["b"]) for p in result.pairs] == [("x", "y"), ("x", "z"), ("y", "z")]
    swapped = result.pair("z", "x")
    assert swapped["delta"] == pytest.approx(1.0) and swapped["ci"][0] == pytest.approx(1.0)
    assert "z is better" in result.format()


@pytest.mark.parametrize(
    "scores, options, message",
    [
        ({"a": [1.0, 2.0]}, {}, "at least 2 systems"),
        ({"a": [1.0, 2.0], "b": [1.0]}, {}, r"scores\['b'\] has 1 rows but scores\['a'\] has 2"),
        ({"a": [1.0, float("nan")], "b": [1.0, 2.0]}, {}, r"scores\['a'\]\[1\] is nan"),
        ([[1.0], [2.0]], {"names": ["a", "a"]}, "'a' names two systems"),
        ({"a": [1.0], "b": [2.0]}, {"test": "t"}, "test must be one of"),
        ({"a": [1.0], "b": [2.0]}, {"resamples": 0}, "resamples must be a positive integer"),
    ],
)
def test_bad_input_is_a_value_error_naming_the_problem(scores, options, message):
    with pytest.raises(ValueError, match=message):
        compare(scores, **options)


# ---------------------------------------------------------------- float noise of the scorer (issue 51, 4.1)

# Five rows of raw scores of the size the bundled model gives (examples/attentive and generic).
FIVE_A = np.array([-23.71181626, -8.7966591, -15.3249623, -19.0410137, -12.5521884])
FIVE_B = np.array([-44.11507696, -71.99565852, -32.45333693, -50.2197719, -41.3382213])


def constant_swaps(trials: int, n: int, seed: int) -> int:
    """Trials of sacrebleu's swap draw that swap every row or none: the only ones whose statistic equals the
    observed |delta| when every row's difference has the same sign."""
    swaps = np.random.default_rng(seed).integers(2, size=(trials, n), dtype=bool)
    return int(np.sum(swaps.all(axis=1) | ~swaps.any(axis=1)))


def test_randomization_p_does_not_move_with_float_noise_below_the_scorers_tolerance():
    """The same rows scored at two batch sizes differ by a few 1e-6 relative (benchmarks/batch_invariance_cpu.json);
    the exact tie of swapping every row must count whatever that noise does to its last bits."""
    expected = (constant_swaps(10000, 5, 12345) + 1) / 10001
    rng = np.random.default_rng(0)
    seen = set()
    for _ in range(40):
        a = FIVE_A * (1 + rng.uniform(-3e-6, 3e-6, size=5))
        b = FIVE_B * (1 + rng.uniform(-3e-6, 3e-6, size=5))
        pair = compare({"attentive": a, "generic": b}).pairs[0]
        seen.add((pair["p_value"], pair["winner"]))
    assert len(seen) == 1, seen
    p, winner = seen.pop()
    assert p == pytest.approx(expected, abs=1e-12) and winner is None


def test_identical_replies_scored_with_float_noise_tie_under_both_tests():
    """Two systems with the same replies, scored in two runs whose batches differ: nothing to tell apart."""
    a, _ = systems(n=30, seed=2)
    noisy = a * (1 + np.random.default_rng(3).uniform(-3e-6, 3e-6, 30))
    for test in ("ar", "bs"):
        pair = compare({"a": a, "b": noisy}, test=test).pairs[0]
        assert (pair["p_bootstrap"], pair["p_randomization"], pair["winner"]) == (1.0, 1.0, None)
        assert (pair["wins_a"], pair["wins_b"], pair["ties"]) == (0.0, 0.0, 1.0)


def test_wins_and_ties_do_not_move_with_float_noise_below_the_scorers_tolerance():
    a, b = systems(n=40, shift=0.05, noise=0.2, seed=9)
    b[:5] = a[:5]  # five rows with the same reply
    rng = np.random.default_rng(1)
    for _ in range(10):
        noisy = compare(
            {"a": a * (1 + rng.uniform(-3e-6, 3e-6, 40)), "b": b * (1 + rng.uniform(-3e-6, 3e-6, 40))},
            resamples=10,
            trials=10,
        ).pairs[0]
        assert (noisy["wins_a"], noisy["wins_b"], noisy["ties"]) == (
            np.mean(a[5:] > b[5:]) * 35 / 40,
            np.mean(a[5:] < b[5:]) * 35 / 40,
            5 / 40,
        )


def test_the_tolerance_is_in_the_signature():
    result = compare({"a": [1.0, 2.0], "b": [0.0, 1.0]}, resamples=10, trials=10, seed=3)
    assert "|rtol:1e-05" in result.signature


def test_a_difference_beyond_the_tolerance_still_counts():
    """Only differences within the scores' tolerance are ties: one unit in the last-but-five digit is a win."""
    pair = compare({"a": [10.0, 20.0], "b": [10.0 - 1e-3, 20.0]}, resamples=10, trials=10).pairs[0]
    assert (pair["wins_a"], pair["ties"]) == (0.5, 0.5)


# ---------------------------------------------------------------- tiny n (issue 51, 4.5)


def brute_force_smallest_p(n: int, trials: int, seed: int) -> float:
    """The smallest randomization p over every sign pattern of n rows with distinct magnitudes, by compare itself."""
    magnitudes = 1.0 + np.sqrt(np.arange(2, n + 2))  # distinct, no pattern sums to another's
    smallest = 1.0
    for signs in itertools.product((1.0, -1.0), repeat=n):
        d = np.array(signs) * magnitudes
        pair = compare({"a": d, "b": np.zeros(n)}, trials=trials, resamples=10, seed=seed).pairs[0]
        smallest = min(smallest, pair["p_randomization"])
    return smallest


@pytest.mark.parametrize("trials, seed", [(10000, 12345), (300, 7)])
def test_smallest_significant_n_agrees_with_brute_force_enumeration(trials, seed):
    from density_metric.comparison.result import ALPHA
    from density_metric.comparison.significance import smallest_randomization_p, smallest_significant_n

    smallest_n = smallest_significant_n(trials, seed)
    for n in range(1, smallest_n + 1):
        brute = brute_force_smallest_p(n, trials, seed)
        assert smallest_randomization_p(n, trials, seed) == pytest.approx(brute, abs=1e-12)
        assert (brute < ALPHA) == (n == smallest_n)


def test_the_default_test_reaches_significance_from_six_rows():
    from density_metric.comparison.significance import smallest_significant_n

    assert smallest_significant_n() == 6  # at n = 5 about 2/32 of the trials tie the observed difference


def test_too_few_trials_never_reach_significance():
    from density_metric.comparison.significance import smallest_significant_n

    assert smallest_significant_n(trials=19) is None  # p >= 1 / 20


@pytest.mark.parametrize("test", ["ar", "bs"])
def test_comparing_fewer_rows_than_can_reach_significance_warns_naming_the_smallest_n(test, caplog):
    with caplog.at_level("WARNING", logger="density_metric.comparison.significance"):
        result = compare({"a": [1.0], "b": [0.0]}, test=test)
    assert len(result.warnings) == 1 and "1 row" in result.warnings[0] and "at least 6 rows" in result.warnings[0]
    assert result.warnings[0] in caplog.text
    assert "warning: " + result.warnings[0] in result.format()
    assert result.to_dict()["warnings"] == result.warnings


@pytest.mark.parametrize("test", ["ar", "bs"])
def test_the_small_sample_warning_speaks_of_the_bootstrap_whichever_test_decides(test):
    """Under the default ar the bootstrap's p (1/1001 on one row) was reported with no word that it means nothing."""
    one, five = (compare({"a": [1.0] * n, "b": [0.0] * n}, test=test).warnings[0] for n in (1, 5))
    assert "the bootstrap's p is not meaningful there either (on 1 row every resample is that row)" in one
    assert five.endswith("the bootstrap's p is not meaningful there either")


def test_too_few_trials_are_warned_about_as_the_trials_not_the_rows():
    """With 19 trials the warning said "30 rows: too few", when no number of rows could reach p < 0.05."""
    a, b = systems(n=30, shift=1.0)
    [warning] = compare({"a": a, "b": b}, trials=19).warnings
    assert warning.startswith("19 trials: too few for approximate randomization to reach p < 0.05 on any number")
    assert "30 rows" not in warning and "(p >= 1/20)" in warning


def test_enough_rows_do_not_warn(caplog):
    a, b = systems(n=6, shift=1.0)
    with caplog.at_level("WARNING"):
        result = compare({"a": a, "b": b})
    assert result.warnings == [] and "warning" not in result.format() and not caplog.text


def naive_holm(p_values):
    """Holm (1979) by its definition: walk the p-values from the smallest; the k-th (from 0) is rejected at level a
    while every smaller one was and p_(k) <= a / (m - k). The adjusted p is the smallest a that rejects it."""
    m = len(p_values)
    order = sorted(range(m), key=lambda i: p_values[i])
    adjusted, running = [0.0] * m, 0.0
    for k, i in enumerate(order):
        running = max(running, min(1.0, (m - k) * p_values[i]))
        adjusted[i] = running
    return adjusted


def test_holm_matches_its_definition():
    from density_metric.comparison.significance import holm

    rng = np.random.default_rng(3)
    for m in (1, 2, 5, 17):
        p = rng.uniform(0, 0.2, m)
        np.testing.assert_allclose(holm(p), naive_holm(list(p)))
    assert holm([0.01, 0.04, 0.03]).tolist() == pytest.approx([0.03, 0.06, 0.06])


def test_with_a_baseline_each_system_is_tested_against_it_alone_holm_corrected():
    a, b = systems(n=60)
    scores = {"base": a, "x": b, "y": a + 0.5, "z": a + 0.01}
    result = compare(scores, baseline="base", resamples=100, trials=300)
    assert [(p["a"], p["b"]) for p in result.pairs] == [("x", "base"), ("y", "base"), ("z", "base")]
    assert result.correction == {"method": "holm", "tests": 3, "baseline": "base"}
    raw = [p["p_value"] for p in result.pairs]
    assert [p["p_holm"] for p in result.pairs] == pytest.approx(naive_holm(raw))
    assert [p["significant"] for p in result.pairs] == [p["p_holm"] < 0.05 for p in result.pairs]
    assert result.to_dict()["correction"]["baseline"] == "base"
    text = result.format()
    assert "Holm's correction for 3 tests (against the baseline 'base'" in text and "uncorrected" in text
    with pytest.raises(ValueError, match="baseline 'nobody' is not one of the systems"):
        compare(scores, baseline="nobody", resamples=10, trials=10)


def test_all_pairs_are_holm_corrected_too():
    a, b = systems(n=60)
    result = compare({"p": a, "q": b, "r": a + 1.0, "s": b - 1.0}, resamples=100, trials=300)
    assert result.correction == {"method": "holm", "tests": 6, "baseline": None}
    assert [p["p_holm"] for p in result.pairs] == pytest.approx(naive_holm([p["p_value"] for p in result.pairs]))
    assert "Holm's correction for 6 tests (all pairs" in result.format()
