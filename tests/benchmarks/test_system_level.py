"""System-level statistics against independent references: scipy for Kendall tau-b and Pearson r,
plain loops for system means, pairwise accuracy and the bootstrap's resampling of contexts."""

import itertools

import numpy as np
import pytest
from scipy.stats import kendalltau, pearsonr

from benchmarks.system_level import (
    bootstrap_means,
    evaluate_set,
    pairwise_accuracy,
    system_level,
    system_means,
)
from density_metric.correlation import kendall_tau, pearson
from density_train.data.judgments import JudgmentSet


def synthetic(seed: int, n_systems: int = 5, rows: int = 12, ties: bool = False):
    rng = np.random.default_rng(seed)
    systems = np.repeat([f"s{i}" for i in range(n_systems)], rows)
    rng.shuffle(systems)
    quality = {f"s{i}": rng.normal() for i in range(n_systems)}
    human = np.array([quality[s] + rng.normal(scale=0.5) for s in systems])
    metric = np.array([quality[s] + rng.normal(scale=1.0) for s in systems])
    if ties:
        human = np.round(human)
    return metric, human, systems


def loop_means(values, systems):
    names = sorted(set(systems))
    return names, np.array([np.mean([v for v, s in zip(values, systems) if s == name]) for name in names])


def loop_pairwise_accuracy(metric_means, human_means):
    agree = total = 0
    for i, j in itertools.combinations(range(len(metric_means)), 2):
        dm, dh = metric_means[i] - metric_means[j], human_means[i] - human_means[j]
        agree += (dm > 0 and dh > 0) or (dm < 0 and dh < 0) or (dm == 0 and dh == 0)
        total += 1
    return agree / total


@pytest.mark.parametrize("seed", range(6))
def test_statistics_match_scipy_and_a_plain_loop(seed):
    metric, human, systems = synthetic(seed, n_systems=3 + seed)
    names, metric_means = system_means(metric, systems)
    loop_names, loop_metric = loop_means(metric, systems)
    assert names == loop_names
    np.testing.assert_allclose(metric_means, loop_metric, rtol=1e-12)
    human_means = loop_means(human, systems)[1]
    assert kendall_tau(metric_means, human_means) == pytest.approx(kendalltau(metric_means, human_means).statistic)
    assert pearson(metric_means, human_means) == pytest.approx(pearsonr(metric_means, human_means).statistic)
    assert pairwise_accuracy(metric_means, human_means) == pytest.approx(
        loop_pairwise_accuracy(metric_means, human_means)
    )


def test_kendall_tau_b_with_ties_matches_scipy():
    metric = np.array([1.0, 2.0, 2.0, 3.0, 5.0, 5.0])
    human = np.array([1.0, 1.0, 2.0, 4.0, 3.0, 6.0])
    assert kendall_tau(metric, human) == pytest.approx(kendalltau(metric, human).statistic)
    assert pairwise_accuracy(metric, human) == pytest.approx(loop_pairwise_accuracy(metric, human))


def test_statistics_are_vectorised_over_leading_axes():
    rng = np.random.default_rng(3)
    metric, human = rng.normal(size=(7, 5)), rng.normal(size=(7, 5))
    for fn, reference in ((kendall_tau, kendalltau), (pearson, pearsonr)):
        np.testing.assert_allclose(fn(metric, human), [reference(m, h).statistic for m, h in zip(metric, human)])
    np.testing.assert_allclose(
        pairwise_accuracy(metric, human), [loop_pairwise_accuracy(m, h) for m, h in zip(metric, human)]
    )


def shared_contexts(systems):
    """Context keys as the Zhao and USR sets have them: the k-th row of each system answers context k."""
    seen = {}
    keys = []
    for system in systems:
        seen[system] = seen.get(system, -1) + 1
        keys.append(f"c{seen[system]}")
    return np.array(keys)


def loop_bootstrap(values, systems, contexts, resamples, seed):
    """The same draws of contexts (sorted keys, as np.unique), each system's mean over its rows in them."""
    keys = sorted(set(contexts))
    draws = np.random.default_rng(seed).integers(0, len(keys), size=(resamples, len(keys)))
    names = sorted(set(systems))
    out = np.full((resamples, len(names)), np.nan)
    for r in range(resamples):
        for column, name in enumerate(names):
            picked = [v for k in draws[r] for v, s, c in zip(values, systems, contexts) if s == name and c == keys[k]]
            if picked:
                out[r, column] = np.mean(picked)
    return out


def test_bootstrap_resamples_contexts_with_every_systems_rows_as_a_plain_loop_does():
    metric, human, systems = synthetic(7, n_systems=4, rows=9)
    contexts = shared_contexts(systems)
    contexts[:3] = "only-here"  # a context some systems lack
    boot_metric, boot_human = bootstrap_means(metric, human, systems, contexts, resamples=60, seed=1)
    assert boot_metric.shape == boot_human.shape == (60, 4)
    np.testing.assert_allclose(boot_metric, loop_bootstrap(metric, systems, contexts, 60, 1), rtol=1e-12)
    np.testing.assert_allclose(boot_human, loop_bootstrap(human, systems, contexts, 60, 1), rtol=1e-12)


def test_a_context_hard_for_every_system_moves_them_together():
    """Systems of fixed quality 0 < 1 < 2 < 3, each context shifting every system's score alike: every
    resample of contexts orders the systems as people do, so the interval of tau is [1, 1]; resampling rows
    within each system (the old way) mixed them up."""
    rng = np.random.default_rng(3)
    difficulty = rng.normal(scale=5.0, size=40)
    systems = np.repeat([f"s{i}" for i in range(4)], 40)
    contexts = np.tile([f"c{k}" for k in range(40)], 4)
    quality = np.repeat(np.arange(4.0), 40)
    metric = quality + np.tile(difficulty, 4)
    human = quality + np.tile(difficulty, 4) * 0.5
    result = system_level(metric, human, systems, contexts, resamples=300, seed=0)
    assert result["kendall_tau"]["ci95"] == [1.0, 1.0]
    assert result["pairwise_accuracy"]["ci95"] == [1.0, 1.0]


def test_draws_without_a_row_of_some_system_are_left_out_of_every_statistic():
    metric, human, systems = synthetic(5, n_systems=3, rows=6)
    contexts = shared_contexts(systems)
    lone = np.flatnonzero(systems == "s0")
    contexts[lone] = "s0-only"  # s0 answered one context of 7: about a third of the draws miss it
    boot_metric, _ = bootstrap_means(metric, human, systems, contexts, resamples=400, seed=0)
    missing = np.isnan(boot_metric[:, 0])
    assert 0 < missing.sum() < 400
    # over the kept draws only, a perfect metric orders every pair as people do (a NaN mean would count as a miss)
    result = system_level(human, human, systems, contexts, resamples=400, seed=0)
    assert result["pairwise_accuracy"]["ci95"] == [1.0, 1.0]


def test_system_level_intervals_hold_the_value_and_a_perfect_metric_scores_one():
    metric, human, systems = synthetic(8, n_systems=6, rows=30)
    contexts = shared_contexts(systems)
    result = system_level(metric, human, systems, contexts, resamples=300, seed=0)
    for name in ("kendall_tau", "pearson", "pairwise_accuracy"):
        low, high = result[name]["ci95"]
        assert low <= high
    perfect = system_level(human, human, systems, contexts, resamples=100, seed=0)
    assert all(perfect[name]["value"] == pytest.approx(1.0) for name in perfect)
    assert all(perfect[name]["ci95"] == pytest.approx([1.0, 1.0]) for name in perfect)
    reversed_ = system_level(-human, human, systems, contexts, resamples=100, seed=0)
    assert reversed_["kendall_tau"]["value"] == pytest.approx(-1.0)
    assert reversed_["pairwise_accuracy"]["value"] == 0.0


def test_evaluate_set_follows_the_protocol_rows_and_leaves_out_unreported_columns():
    metric, human, systems = synthetic(9, n_systems=3, rows=5)
    rows = [
        {"system": str(s), "score": float(h), "context": [c]}
        for s, h, c in zip(systems, human, shared_contexts(systems))
    ]
    rows.append({"system": "ground-truth", "score": 5.0, "context": ["c0"]})  # dropped by the paper protocol
    judgments = JudgmentSet("toy", rows)
    values = {"m": np.append(metric, 0.0), "hidden": np.zeros(len(rows))}
    full = evaluate_set(judgments, values, "full", {"m"}, resamples=20, seed=0)
    paper = evaluate_set(judgments, values, "paper", {"m"}, resamples=20, seed=0)
    assert set(full["metrics"]) == {"m"} and len(full["systems"]) == 4 and len(paper["systems"]) == 3
    names, metric_means = loop_means(metric, systems)
    human_means = loop_means(human, systems)[1]
    assert paper["metrics"]["m"]["kendall_tau"]["value"] == pytest.approx(
        kendalltau(metric_means, human_means).statistic
    )
    assert list(paper["metrics"]["m"]["system_means"]) == names


def test_a_protocol_that_leaves_fewer_than_three_systems_is_skipped_not_computed():
    metric, human, systems = synthetic(9, n_systems=2, rows=5)
    rows = [
        {"system": str(s), "score": float(h), "context": [c]}
        for s, h, c in zip(systems, human, shared_contexts(systems))
    ]
    rows.append({"system": "ground-truth", "score": 5.0, "context": ["c0"]})  # a third "system" under full only
    judgments = JudgmentSet("toy", rows)
    values = {"m": np.append(metric, 0.0)}
    assert evaluate_set(judgments, values, "full", {"m"}, resamples=20, seed=0)["metrics"]
    paper = evaluate_set(judgments, values, "paper", {"m"}, resamples=20, seed=0)
    assert paper["metrics"] == {} and paper["skipped"] == "2 system(s) under paper"


def test_main_writes_the_table_for_sets_with_three_systems_or_more(tiny_checkpoint, tmp_path):
    import json

    from benchmarks.system_level import main

    from ..tiny import synthetic_pairs

    contexts, responses = synthetic_pairs(24, seed=60)
    data = tmp_path / "data"
    data.mkdir()
    for name, n_systems in (("three", 3), ("two", 2)):
        lines = [
            json.dumps({"context": c, "response": r, "system": f"sys{i % n_systems}", "score": float(i % 5)})
            for i, (c, r) in enumerate(zip(contexts, responses))
        ]
        (data / f"{name}.normalized.jsonl").write_text("\n".join(lines) + "\n")
    out = tmp_path / "out"
    argv = ["--checkpoint", str(tiny_checkpoint), "--data-dir", str(data), "--no-baselines", "--resamples", "20"]
    main([*argv, "--dtype", "float32", "--out", str(out)])
    report = json.loads((out / "system_level.json").read_text())
    assert list(report["sets"]) == ["three"] and report["skipped"] == {"two": "2 system(s)"}
    full = report["sets"]["three"]["full"]
    assert full["systems"] == {"sys0": 8, "sys1": 8, "sys2": 8}
    assert "DEnsity" in full["metrics"]
    assert "| three | 3 | 24 | DEnsity |" in (out / "system_level.md").read_text()


def test_no_set_or_an_unknown_set_name_is_an_error_before_scoring(tmp_path, capsys):
    # Both commands wrote an empty report and exited 0; human_correlation first scored the sets it found, then
    # failed on the missing DailyDialog files of its probes.
    import json

    from benchmarks import human_correlation, system_level

    def error(main, *argv):
        with pytest.raises(SystemExit) as stop:
            main([*map(str, argv), "--out", str(tmp_path / "out")])
        assert stop.value.code == 2
        return capsys.readouterr().err.strip().splitlines()[-1]

    for main in (system_level.main, human_correlation.main):
        assert "no *.normalized.jsonl below it (found: none)" in error(main, "--data-dir", tmp_path)
    row = {"context": ["hi"], "response": "hello", "score": 3.0, "system": "a"}
    (tmp_path / "toy.normalized.jsonl").write_text(json.dumps(row) + "\n", encoding="utf-8")
    for main in (system_level.main, human_correlation.main):
        assert "no set named nope (found: toy)" in error(main, "--data-dir", tmp_path, "--sets", "nope")
    assert "no dailydialog/dialogues_test.txt" in error(human_correlation.main, "--data-dir", tmp_path)
    assert not (tmp_path / "out").exists()
