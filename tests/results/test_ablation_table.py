"""The ablation's claims table (results/experiments/contrastive-ablation/table.py): its contrasts are differences of
correlations computed by hand, and its verdicts follow the rule its plan wrote down before any result."""

import numpy as np
import pytest
from scipy.stats import pearsonr, spearmanr

from ..results_scripts import load_results_script


@pytest.fixture(scope="module")
def table():
    return load_results_script("experiments/contrastive-ablation/table.py")


def test_verdict_rule(table):
    up, low_up, low_down = np.array([1.0, 2.0]), np.array([0.1, 0.2]), np.array([0.1, -0.2])
    assert table.verdict([(up, low_up), (up, low_up)]) == "reproduced"
    assert table.verdict([(up, low_up), (up, low_down)]) == "in direction only"
    assert table.verdict([(up, low_up), (np.array([1.0, 0.0]), low_up)]) == "not reproduced"


def test_claims_on_rows_built_so_that_claim_1_holds_and_claim_3_does_not(table):
    rng = np.random.default_rng(0)
    human = rng.normal(size=400)
    noise = {  # the less noise, the higher the correlation: CL Mahalanobis far above every other row
        "CL Mahalanobis": 0.3, "CL Euclidean": 2.0, "CL classifier": 2.0,
        "no-CL Mahalanobis": 3.0, "no-CL Euclidean": 2.5, "no-CL classifier": 6.0,
    }  # fmt: skip
    rows = {name: human + sd * rng.normal(size=400) for name, sd in noise.items()}
    reports = {
        "CL": {"sets": {"dailydialog_zhao": {"paper": {}}}},
        "no-CL": {"sets": {"dailydialog_zhao": {"paper": {}}}},
    }
    for name, values in rows.items():
        label, scoring = name.split(" ", 1)
        reports[label]["sets"]["dailydialog_zhao"]["paper"][table.SCORINGS[scoring][0]] = {
            "pearson": 100 * pearsonr(values, human).statistic,
            "spearman": 100 * spearmanr(values, human).statistic,
        }
    lines = table.claims(rows, human, reports)
    by_hand = 100 * (
        pearsonr(rows["CL Mahalanobis"], human).statistic - pearsonr(rows["CL Euclidean"], human).statistic
    )
    assert f"| 1 | CL Mahalanobis - CL Euclidean | {by_hand:+.2f} [" in "\n".join(lines)
    assert "- claim 1: reproduced" in lines
    assert "- claim 3: not reproduced" in lines  # the no-CL classifier is the worst no-CL row here
    # a report whose numbers are not those of the saved rows is refused
    reports["CL"]["sets"]["dailydialog_zhao"]["paper"]["DEnsity"]["pearson"] += 1
    with pytest.raises(ValueError, match="CL Mahalanobis: the saved per-row scores"):
        table.claims(rows, human, reports)
