"""Integration tests with the real bundled default (the trained all-MiniLM-L6-v2 checkpoint in density_metric/default)
and real data."""

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from density_metric import DensityScorer
from density_metric.checkpoint.sources import resolve_checkpoint

ROOT = Path(__file__).resolve().parents[1]
DAILYDIALOG = ROOT.parent / "shared" / "data" / "dailydialog"
needs_data = pytest.mark.skipif(
    not DAILYDIALOG.is_dir(), reason="../shared/data/dailydialog is not beside the checkout"
)


def offline_env(tmp_path):
    return {
        **os.environ,
        "HF_HOME": str(tmp_path / "hf_home"),
        "HF_HUB_OFFLINE": "1",
        "HF_EVALUATE_OFFLINE": "1",
        "HF_DATASETS_OFFLINE": "1",
    }


@pytest.fixture(scope="module")
def default_scorer():
    return DensityScorer(device="cpu", batch_size=32)


def test_readme_main_job_scores_the_example_file_offline_from_another_directory(tmp_path):
    out = tmp_path / "scored.jsonl"
    run = subprocess.run(
        [sys.executable, "-m", "density_metric", "score", str(ROOT / "examples" / "dialogues.jsonl"), "-o", str(out)],
        cwd=tmp_path,
        env=offline_env(tmp_path),
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert run.returncode == 0, run.stderr
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    source = [json.loads(line) for line in (ROOT / "examples" / "dialogues.jsonl").read_text().splitlines()]
    assert [row["id"] for row in rows] == [row["id"] for row in source]
    assert all(row["density"] < 0 and 0 <= row["density_calibrated"] <= 1 for row in rows)
    assert "checkpoint=bundled:density-minilm-dailydialog@sha256:" in run.stderr


def test_evaluate_load_by_bare_name_uses_the_bundled_default_offline(tmp_path):
    env = offline_env(tmp_path)
    subprocess.run(
        [sys.executable, "-m", "density_metric", "install"], env=env, check=True, capture_output=True, timeout=300
    )
    code = (
        "import evaluate\n"
        "r = evaluate.load('density').compute(contexts=[['How are you?']], responses=['Fine, thanks.'])\n"
        "print(r['signature'])\n"
    )
    run = subprocess.run(
        [sys.executable, "-c", code], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=600
    )
    assert run.returncode == 0, run.stderr
    assert "checkpoint=bundled:density-minilm-dailydialog@sha256:" in run.stdout


def test_bundled_statistics_cover_every_dailydialog_training_pair():
    stats = resolve_checkpoint(None).stats
    assert stats.n_samples == 76_053  # 87,171 utterances - 11,118 dialogues (SOURCE.md)
    assert stats.dim == 384 and stats.quantiles.shape == (1001,)


@needs_data
def test_held_out_human_responses_are_calibrated_near_uniform(default_scorer):
    """The quantiles come from DailyDialog's validation pairs, so a sample of them scores ~U(0, 1)."""
    from density_train.data.corpora import load_dailydialog, response_pairs

    contexts, responses = response_pairs(load_dailydialog(DAILYDIALOG, "validation"))
    pick = np.random.default_rng(0).choice(len(responses), size=300, replace=False)
    calibrated = default_scorer.score([contexts[i] for i in pick], [responses[i] for i in pick]).calibrated
    assert abs(calibrated.mean() - 0.5) < 0.06
    assert abs((calibrated < 0.2).mean() - 0.2) < 0.07


@needs_data
def test_cpu_bfloat16_ranks_real_pairs_like_float32(default_scorer):
    """The explicit bf16 fast mode ranks like fp32: Spearman > 0.999 on 150 real pairs (bf16 is emulated, so slow,
    on a CPU without bf16 instructions)."""
    from scipy.stats import spearmanr

    from density_train.data.corpora import load_dailydialog, response_pairs

    contexts, responses = response_pairs(load_dailydialog(DAILYDIALOG, "test"))
    pick = np.random.default_rng(1).choice(len(responses), size=150, replace=False)
    contexts, responses = [contexts[i] for i in pick], [responses[i] for i in pick]
    fp32 = DensityScorer(device="cpu", dtype="float32").score(contexts, responses)
    bf16 = DensityScorer(device="cpu", dtype="bfloat16").score(contexts, responses)
    assert spearmanr(bf16.scores, fp32.scores).statistic > 0.999
    assert np.abs(bf16.calibrated - fp32.calibrated).max() < 0.03


@needs_data
def test_the_trained_release_prefers_the_gold_reply_to_a_random_one(default_scorer):
    """What DEnsity's training buys: the untuned stand-in preferred the gold reply in only 40 % of cases."""
    from benchmarks.probes import make_probes
    from density_train.data.corpora import load_dailydialog

    cases = make_probes(list(load_dailydialog(DAILYDIALOG, "test")["turns"]), 300, seed=2)
    contexts = [case["context"] for case in cases]
    gold = default_scorer.score(contexts, [case["gold"] for case in cases]).scores
    random = default_scorer.score(contexts, [case["random"] for case in cases]).scores
    assert (gold > random).mean() > 0.75  # the bundled second-round soup: 0.960 on 500 test probes (seed 0)


@needs_data
def test_the_bundled_default_prefers_the_gold_reply_to_a_copy_of_the_previous_turn(default_scorer):
    """Issue 31: the first release preferred the gold to an echo of the previous turn in 19.2 % of 500
    test probes (seed 0) and to the previous turn followed by the gold in 10.8 %; the parrot release,
    79.2 % and 72.2 %; the last-turn-copies release, 93.8 % and 89.8 %; the four-order soup, 95.2 % and 91.0 %;
    the bundled second-round soup, 96.0 % and 92.6 %. Here 300 other cases (seed 2), where the last-turn-copies
    release measured 91.7 % and 88.3 %, the four-order soup 94.3 % and 90.3 % and the second-round soup 95.3 % and
    91.7 %: the floors sit below that by more than the noise of 300 cases (about 2
    points), and above the parrot release's."""
    from benchmarks.probes import make_probes
    from density_train.data.corpora import load_dailydialog

    cases = make_probes(list(load_dailydialog(DAILYDIALOG, "test")["turns"]), 300, seed=2)
    contexts = [case["context"] for case in cases]
    gold = default_scorer.score(contexts, [case["gold"] for case in cases]).scores
    for probe, floor in (("echo", 0.85), ("speaker_confused", 0.8)):
        copy = default_scorer.score(contexts, [case[probe] for case in cases]).scores
        assert (gold > copy).mean() > floor, probe


@needs_data
def test_bundled_scores_under_the_default_dtype_do_not_depend_on_the_batch(default_scorer):
    """On the real model, where bf16 moved scores by up to 2e-2 relative: batch size, order, split."""
    from density_train.data.corpora import load_dailydialog, response_pairs

    contexts, responses = response_pairs(load_dailydialog(DAILYDIALOG, "test"))
    pick = np.random.default_rng(3).choice(len(responses), size=150, replace=False)
    contexts, responses = [contexts[i] for i in pick], [responses[i] for i in pick]
    reference = default_scorer.score(contexts, responses).scores
    one_by_one = DensityScorer(device="cpu", batch_size=1).score(contexts, responses).scores
    np.testing.assert_allclose(one_by_one, reference, rtol=1e-5)
    np.testing.assert_allclose(default_scorer.score(contexts[::-1], responses[::-1]).scores[::-1], reference, rtol=1e-5)
    split = np.concatenate(
        [default_scorer.score(contexts[i : i + 50], responses[i : i + 50]).scores for i in (0, 50, 100)]
    )
    np.testing.assert_allclose(split, reference, rtol=1e-5)


@needs_data
def test_the_bundled_release_scores_as_before_the_hardening_round(default_scorer):
    """1,000 DailyDialog test pairs scored by the code before issue 30 (commit 35dcd63, float32, this
    file's metadata), with the bundled weights (remade for each release by
    results/ship/pin_scores.sh from a checkout of 35dcd63; the metadata names the checkpoint): the
    refactors and the context grouping since then leave the scores as they were. 1e-5 allows another
    CPU's float32 kernels."""
    from safetensors import safe_open

    from density_train.data.corpora import load_dailydialog, response_pairs

    with safe_open(str(ROOT / "tests" / "data" / "bundled_release_scores.safetensors"), "np") as handle:
        rows, before = handle.get_tensor("rows"), handle.get_tensor("scores")
    contexts, responses = response_pairs(load_dailydialog(DAILYDIALOG, "test"))
    now = default_scorer.score([contexts[i] for i in rows], [responses[i] for i in rows]).scores
    np.testing.assert_allclose(now, before, rtol=1e-5)


def test_emptying_every_reply_of_a_system_no_longer_wins_and_is_warned_about(default_scorer):
    """Issue 56: with every reply of examples/attentive.jsonl emptied, compare ranked that system above attentive
    and called it significantly better than generic."""
    from density_metric.comparison.systems import compare_tables, read_system

    systems = [read_system(ROOT / "examples" / f"{name}.jsonl") for name in ("attentive", "generic")]
    emptied = read_system(ROOT / "examples" / "attentive.jsonl", name="emptied")
    for row in emptied.rows:
        row.response = ""
    result, _ = compare_tables([*systems, emptied], lambda: default_scorer, resamples=200, trials=2000)
    means = {system["name"]: system["mean"] for system in result.systems}
    assert means["emptied"] < min(means["attentive"], means["generic"])
    assert not [pair for pair in result.pairs if pair["winner"] == "emptied"]
    assert [system["flagged"] for system in result.systems][2] == len(emptied.rows)
    assert any(warning.startswith("'emptied' has more degenerate replies") for warning in result.warnings)


@needs_data
@pytest.mark.parametrize("reply", ["", "   ", "😀😀😀"])
def test_an_empty_blank_or_unreadable_reply_never_outscores_the_real_one(default_scorer, reply):
    """Issue 56: on 120 DailyDialog test contexts the empty reply outscored the real one in 57 % of cases, "   " too,
    and "😀😀😀" (every token unknown) was calibrated like a typical human reply."""
    from density_train.data.corpora import load_dailydialog, response_pairs

    contexts, responses = response_pairs(load_dailydialog(DAILYDIALOG, "test"))
    pick = np.random.default_rng(4).choice(len(responses), size=120, replace=False)
    contexts, responses = [contexts[i] for i in pick], [responses[i] for i in pick]
    gold = default_scorer.score(contexts, responses)
    degenerate = default_scorer.score(contexts, [reply] * len(contexts))
    assert np.all(degenerate.scores < gold.scores)
    assert np.all(degenerate.calibrated == 0.0)
    assert [flags[0] for flags in degenerate.flags] == ["unreadable" if reply.strip() else "empty"] * len(contexts)


@needs_data
@pytest.mark.parametrize("reply", ["[SEP]", "[PAD]", "[CLS]", "?!", "..."])
def test_special_token_text_and_wordless_replies_do_not_beat_the_real_one(default_scorer, reply):
    """Issue 60: read as the special token, `[SEP]` beat the real reply in 66 % of 200 DailyDialog test contexts,
    `[PAD]` 46 %, `[CLS]` 39 %; `?!` (flagged, not floored) 28 %. At most 15 % is the issue's bound for the special
    tokens; a reply without a letter or digit gets the floor, so it never wins."""
    from density_train.data.corpora import load_dailydialog, response_pairs

    contexts, responses = response_pairs(load_dailydialog(DAILYDIALOG, "test"))
    pick = np.random.default_rng(5).choice(len(responses), size=120, replace=False)
    contexts, responses = [contexts[i] for i in pick], [responses[i] for i in pick]
    gold = default_scorer.score(contexts, responses)
    other = default_scorer.score(contexts, [reply] * len(contexts))
    wins = float(np.mean(other.scores > gold.scores))
    assert wins <= (0.0 if reply in ("?!", "...") else 0.15)
    assert "specials=text" in other.signature and "floor=v2" in other.signature
