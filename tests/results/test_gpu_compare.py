"""The GPU arms' paired comparison (results/experiments/gpu-schedule/compare.py): its differences and intervals
against a naive loop of scipy correlations over the same resampled rows, and its check of the saved scores."""

import json

import numpy as np
import pytest
from safetensors.numpy import save_file
from scipy.stats import pearsonr, spearmanr

from density_metric.comparison.significance import bootstrap_indices

from ..results_scripts import load_results_script

N = 60


@pytest.fixture(scope="module")
def compare():
    return load_results_script("experiments/gpu-schedule/compare.py")


def write_run(folder, human, values, label, echo):
    folder.mkdir(parents=True)
    correlation = {
        "pearson": 100 * pearsonr(values, human).statistic,
        "spearman": 100 * spearmanr(values, human).statistic,
    }
    report = {
        "command": f"python -m benchmarks.human_correlation --checkpoint {label}",
        "date": "2026-12-04",
        "sets": {"someset": {"paper": {"DEnsity": correlation}}},
        "probes": {"n": 500, "seed": 0, "accuracy": {"echo": {"DEnsity": echo}}},
    }
    (folder / "human_correlation.json").write_text(json.dumps(report))
    save_file({"someset/human": human, "someset/DEnsity": values}, str(folder / "scores.safetensors"))


@pytest.fixture
def runs(tmp_path):
    rng = np.random.default_rng(3)
    human = rng.integers(1, 6, size=N).astype(np.float64)  # ties, as human ratings have
    arm, bundled = human + 1.0 * rng.normal(size=N), human + 2.0 * rng.normal(size=N)
    data = tmp_path / "data" / "some"
    data.mkdir(parents=True)
    rows = [{"context": ["hi"], "response": f"reply {i}", "score": float(s)} for i, s in enumerate(human)]
    (data / "someset.normalized.jsonl").write_text("".join(json.dumps(row) + "\n" for row in rows))
    write_run(tmp_path / "arm", human, arm, "arm", 0.25)
    write_run(tmp_path / "bundled", human, bundled, "default", 0.96)
    return tmp_path, human, arm, bundled


def test_the_differences_and_intervals_are_a_naive_loops(compare, runs, monkeypatch):
    tmp_path, human, arm, bundled = runs
    monkeypatch.setattr(compare, "BUNDLED", tmp_path / "bundled")
    monkeypatch.setattr(compare, "RESAMPLES", 2000)
    lines = compare.compare("E9", tmp_path / "arm", str(tmp_path / "data"))
    (row,) = [line for line in lines if line.startswith("| someset |")]
    cells = [cell.strip() for cell in row.strip("|").split("|")]
    diffs = []
    for draw in bootstrap_indices(N, 2000, seed=0):
        h = human[draw]
        diffs.append(
            [
                100 * (pearsonr(arm[draw], h).statistic - pearsonr(bundled[draw], h).statistic),
                100 * (spearmanr(arm[draw], h).statistic - spearmanr(bundled[draw], h).statistic),
            ]
        )
    diffs = np.sort(np.array(diffs), axis=0)
    low, high = diffs[2000 // 40], diffs[2000 - 2000 // 40 - 1]
    point = [
        100 * (pearsonr(arm, human).statistic - pearsonr(bundled, human).statistic),
        100 * (spearmanr(arm, human).statistic - spearmanr(bundled, human).statistic),
    ]
    assert cells[:3] == ["someset", "paper", str(N)]
    assert cells[3] == f"{100 * pearsonr(arm, human).statistic:.2f} / {100 * spearmanr(arm, human).statistic:.2f}"
    for k, cell in enumerate(cells[5:7]):
        assert cell == f"{point[k]:+.2f} [{low[k]:+.2f}, {high[k]:+.2f}]"
    assert "| echo | 25.0 % | 96.0 % |" in lines


def test_scores_that_do_not_reproduce_the_report_are_refused(compare, runs, monkeypatch):
    tmp_path, human, arm, _ = runs
    monkeypatch.setattr(compare, "BUNDLED", tmp_path / "bundled")
    save_file(
        {"someset/human": human, "someset/DEnsity": arm[::-1].copy()}, str(tmp_path / "arm" / "scores.safetensors")
    )
    with pytest.raises(ValueError, match="someset: the saved per-row scores do not reproduce the report"):
        compare.compare("E9", tmp_path / "arm", str(tmp_path / "data"))
