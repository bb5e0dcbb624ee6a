"""Meta-evaluation: statistics against scipy, protocol filters and probes by hand, and one end-to-end run."""

import json
import random
import shutil
from pathlib import Path

import numpy as np
import pytest
from safetensors.numpy import save_file
from scipy.stats import pearsonr, spearmanr

from benchmarks.human_correlation import correlation, main
from benchmarks.probes import PROBES, echo, make_probes, repetition, shuffled, speaker_confused
from density_metric.checkpoint.format import HEAD_FILE
from density_train.data.judgments import (
    JudgmentSet,
    apply_protocol,
    context_of,
    has_protocol,
    load_sets,
    mad_filtered_mean,
)

DATA = Path(__file__).resolve().parents[3] / "shared" / "data"


def test_correlation_is_scipys_pearson_and_spearman_times_100():
    metric = np.array([0.1, 0.4, 0.35, 0.8, 0.7, 0.2])
    human = np.array([1.0, 3.0, 2.0, 5.0, 5.0, 1.5])
    result = correlation(metric, human)
    assert result["pearson"] == pytest.approx(100 * pearsonr(metric, human).statistic)
    assert result["spearman"] == pytest.approx(100 * spearmanr(metric, human).statistic)
    assert result["pearson_p"] == pytest.approx(pearsonr(metric, human).pvalue)
    assert result["n"] == 6


def rows(n, ground_truth_at):
    return [
        {
            "context": ["c"],
            "response": f"r{i}",
            "score": float(i),
            "score_density": i / 10,
            "system": "ground-truth" if i in ground_truth_at else "S2S",
        }
        for i in range(n)
    ]


def test_paper_protocol_on_a_zhao_set_keeps_last_80_percent_without_ground_truth():
    judgments = JudgmentSet("toy_zhao", rows(10, ground_truth_at={0, 5}))
    index, human = apply_protocol(judgments, "paper")
    # last 8 rows are 2..9; row 5 is ground truth -> 7 rows, rated by score_density
    assert index.tolist() == [2, 3, 4, 6, 7, 8, 9]
    assert human.tolist() == [0.2, 0.3, 0.4, 0.6, 0.7, 0.8, 0.9]


def test_paper_protocol_elsewhere_only_drops_ground_truth_and_full_keeps_all():
    judgments = JudgmentSet("toy_usr", rows(6, ground_truth_at={3}))
    judgments.rows[1]["system"] = "Original Ground Truth"
    index, human = apply_protocol(judgments, "paper")
    assert index.tolist() == [0, 2, 4, 5] and human.tolist() == [0.0, 2.0, 4.0, 5.0]
    assert apply_protocol(judgments, "full")[0].tolist() == list(range(6))


def test_dev_protocol_on_a_zhao_set_keeps_first_20_percent_without_ground_truth():
    judgments = JudgmentSet("toy_zhao", rows(10, ground_truth_at={0, 5}))
    index, human = apply_protocol(judgments, "dev")
    assert index.tolist() == [1] and human.tolist() == [0.1]  # rows 0-1; row 0 is ground truth
    judgments = JudgmentSet("toy_zhao", rows(11, ground_truth_at=set()))
    dev, paper = apply_protocol(judgments, "dev")[0], apply_protocol(judgments, "paper")[0]
    assert dev.tolist() == [0, 1, 2] and paper.tolist() == list(range(3, 11))  # int(11 * 0.8) = 8 test rows


def test_dev_protocol_is_not_defined_for_sets_without_a_split():
    judgments = JudgmentSet("toy_usr", rows(6, ground_truth_at={3}))
    assert not has_protocol(judgments, "dev") and has_protocol(judgments, "paper")
    with pytest.raises(ValueError, match="'dev' is not defined for toy_usr"):
        apply_protocol(judgments, "dev")
    with pytest.raises(ValueError, match="protocol must be one of"):
        apply_protocol(judgments, "test")


@pytest.mark.skipif(not (DATA / "zhao2020").is_dir(), reason="shared data not beside the checkout")
def test_dev_and_paper_partition_the_non_ground_truth_rows_of_the_zhao_sets():
    sets = load_sets(DATA, ["dailydialog_zhao", "personachat_zhao"])
    assert {judgments.name for judgments in sets} == {"dailydialog_zhao", "personachat_zhao"}
    for judgments in sets:
        dev, dev_human = apply_protocol(judgments, "dev")
        paper, _ = apply_protocol(judgments, "paper")
        kept = [i for i, row in enumerate(judgments.rows) if not written_as_ground_truth(row)]
        assert not set(dev) & set(paper) and sorted([*dev, *paper]) == kept
        assert dev.max() < paper.min() and len(dev) > 0.15 * len(kept)
        assert dev_human.tolist() == [judgments.rows[i]["score_density"] for i in dev]


def written_as_ground_truth(row):  # the rule read again here rather than imported
    return "ground" in str(row.get("system") or "").lower() and "truth" in str(row.get("system") or "").lower()


@pytest.mark.parametrize(
    "ratings, expected",
    [
        ([5, 5, 4, 1], (1 + 1 + 0.75) / 3),  # median 4.5, MAD 0.5 -> 1 is outside 4.5 +- 0.74
        ([3, 3, 3, 3], 0.5),
        ([1, 5, 5, 5], 1.0),  # MAD 0: only ratings equal to the median stay
        ([2, 3, 4, 5], (0.25 + 0.5 + 0.75 + 1) / 4),  # median 3.5, MAD 1 -> all within 1.48
    ],
)
def test_mad_filter_by_hand(ratings, expected):
    assert mad_filtered_mean(ratings) == pytest.approx(expected)


@pytest.mark.skipif(not (DATA / "zhao2020").is_dir(), reason="shared data not beside the checkout")
def test_mad_filter_reproduces_the_authors_score_density_on_dailydialog_zhao():
    lines = (DATA / "zhao2020" / "dailydialog_zhao.normalized.jsonl").read_text().splitlines()
    for row in map(json.loads, lines):
        assert mad_filtered_mean(row["annotations"]["appropriateness"]) == pytest.approx(row["score_density"])


def test_facts_go_in_front_of_the_context_only_when_asked():
    row = {"context": ["hi"], "fact": ["your persona: i like dogs."]}
    assert context_of(row, with_facts=True) == ["your persona: i like dogs.", "hi"]
    assert context_of(row, with_facts=False) == ["hi"]
    assert context_of({"context": ["hi"], "fact": "a fact"}, with_facts=True) == ["a fact", "hi"]


def test_probe_generators_on_handwritten_examples():
    context = ["how are you ?", "fine , and you ?"]
    assert repetition("i am good .") == "i i am am good good . ."
    assert speaker_confused(context, "i am good .") == "fine , and you ? i am good ."
    assert echo(context) == "fine , and you ?"
    words = shuffled("one two three four", random.Random(0))
    assert sorted(words.split()) == sorted("one two three four".split()) and words != "one two three four"


def test_make_probes_is_seeded_and_random_response_comes_from_another_dialogue():
    dialogues = [["a1", "a2", "a3"], ["b1", "b2"], ["c1", "c2", "c3", "c4"]]
    cases = make_probes(dialogues, n=4, seed=3)
    assert cases == make_probes(dialogues, n=4, seed=3)
    for case in cases:
        source = next(d for d in dialogues if case["gold"] in d)
        assert case["random"] not in source
        assert case["context"] == source[: source.index(case["gold"])]


@pytest.mark.skipif(not (DATA / "dailydialog").is_dir(), reason="shared data not beside the checkout")
def test_whole_command_on_a_small_slice_writes_table_json_and_figures(tiny_checkpoint, tmp_path):
    with_head = shutil.copytree(tiny_checkpoint, tmp_path / "with_head")
    save_file(
        {"weight": np.linspace(-1, 1, 32, dtype=np.float32), "bias": np.array(0.5, dtype=np.float32)},
        str(with_head / HEAD_FILE),
    )
    main(
        [
            "--checkpoint",
            str(with_head),
            "--untuned-checkpoint",
            str(tiny_checkpoint),
            "--data-dir",
            str(DATA),
            "--sets",
            "dailydialog_zhao",
            "convai2_usr",
            "fed_dialogue",
            "--limit",
            "60",
            "--probes",
            "20",
            "--histogram-pairs",
            "30",
            "--dtype",
            "float32",
            "--protocols",
            "full",
            "paper",
            "dev",
            "--baselines-dir",
            str(tmp_path / "no_baselines"),
            "--out",
            str(tmp_path),
        ]
    )
    report = json.loads((tmp_path / "human_correlation.json").read_text())
    assert set(report["sets"]) == {"dailydialog_zhao", "convai2_usr", "fed_dialogue"}
    zhao = report["sets"]["dailydialog_zhao"]
    assert zhao["full"]["DEnsity"]["n"] == 60
    assert zhao["paper"]["DEnsity"]["n"] == len(
        apply_protocol(
            JudgmentSet(
                "dailydialog_zhao",
                [
                    json.loads(line)
                    for line in (DATA / "zhao2020" / "dailydialog_zhao.normalized.jsonl").read_text().splitlines()[:60]
                ],
            ),
            "paper",
        )[0]
    )
    assert {"BLEU-2", "ROUGE-L", "untuned DEnsity", "f(c,r) classifier"} <= set(zhao["full"])
    assert "f(c,r) classifier" in report["probes"]["accuracy"]["random"]
    assert "DEnsity dialogue (mean)" in report["sets"]["fed_dialogue"]["full"]
    assert set(report["probes"]["accuracy"]) == set(PROBES)
    assert report["probes"]["n_per_probe"]["pronoun_swap"] <= report["probes"]["n"]
    assert "dev" in zhao and zhao["dev"]["DEnsity"]["n"] + zhao["paper"]["DEnsity"]["n"] <= 60
    assert "dev" not in report["sets"]["convai2_usr"] and "dev" not in report["sets"]["fed_dialogue"]
    for figure in report["figures"]:
        assert (tmp_path / figure).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    headline = (tmp_path / "human_correlation.md").read_text().split("## Headline (paper protocol")[1]
    assert "| metric | convai2_usr | dailydialog_zhao |" in headline
    assert "| DEnsity (bert-base) (published) | 57.03 / 62.97 | 56.81 / 57.03 |" in headline
    table = (tmp_path / "human_correlation.md").read_text()
    assert "## Protocol: paper" in table and "| dailydialog_zhao | 60 |" in table
    dev_section = table.split("## Protocol: dev")[1].split("## ")[0]
    assert "dailydialog_zhao" in dev_section and "convai2_usr" not in dev_section
    # the published numbers were measured on the paper's rows: beside the paper protocol only
    paper_section = table.split("## Protocol: paper")[1].split("## ")[0]
    full_section = table.split("## Protocol: full")[1].split("## ")[0]
    assert "56.81 / 57.03" in paper_section
    assert "56.81" not in dev_section and "56.81" not in full_section
    # the three scoring rows of the paper's Table 2 side by side: in the headline, at the dialogue level, on the
    # histogram's pairs, and their per-row scores saved for paired comparisons between checkpoints measured apart
    assert "| -Euclidean to mean |" in headline and "| f(c,r) classifier |" in headline
    assert "-Euclidean to mean" in report["probes"]["accuracy"]["random"]
    shares = report["gold_vs_random_validation"]["share_gold_higher_by_metric"]
    assert set(shares) == {"DEnsity", "-Euclidean to mean", "f(c,r) classifier"}
    assert shares["DEnsity"] == report["gold_vs_random_validation"]["share_gold_higher"]
    from safetensors.numpy import load_file

    from density_metric import DensityScorer

    saved = load_file(str(tmp_path / report["row_scores"]))
    rows = [
        json.loads(line)
        for line in (DATA / "zhao2020" / "dailydialog_zhao.normalized.jsonl").read_text().splitlines()[:60]
    ]
    np.testing.assert_array_equal(saved["dailydialog_zhao/human"], [row["score"] for row in rows])
    index, human = apply_protocol(JudgmentSet("dailydialog_zhao", rows), "paper")
    for name in ("DEnsity", "-Euclidean to mean", "f(c,r) classifier", "untuned DEnsity"):
        assert 100 * pearsonr(saved[f"dailydialog_zhao/{name}"][index], human).statistic == pytest.approx(
            zhao["paper"][name]["pearson"], abs=1e-9
        )
    assert "dailydialog_zhao/BLEU-2" not in saved  # only the checkpoint's own columns
    assert len(saved["validation_gold_vs_random/gold/DEnsity"]) == 30
    # FED dialogue: a naive loop over the first dialogues' turns, one pair at a time, with the library's public methods
    scorer = DensityScorer(str(with_head), device="cpu", dtype="float32", progress=False)
    fed = [json.loads(line) for line in (DATA / "fed" / "fed_dialogue.normalized.jsonl").read_text().splitlines()[:60]]
    # its DEnsity rows are the library's dialogue scores, though all rows come from one encoding of the turns
    for aggregate in ("mean", "rms"):
        library = [d["score"] for d in scorer.score_dialogues([row["dialogue"] for row in fed], aggregate=aggregate)]
        np.testing.assert_allclose(saved[f"fed_dialogue/DEnsity dialogue ({aggregate})"], library, rtol=1e-6)
    for name, method in (
        ("-Euclidean to mean", scorer.euclidean_scores),
        ("f(c,r) classifier", scorer.classifier_scores),
    ):
        naive = [
            np.mean([method([t[:i]], [t[i]])[0] for i in range(1, len(t))]) for t in (r["dialogue"] for r in fed[:4])
        ]
        np.testing.assert_allclose(saved[f"fed_dialogue/{name} dialogue (mean)"][:4], naive, rtol=1e-4, atol=1e-5)
        column = saved[f"fed_dialogue/{name} dialogue (mean)"]
        assert len(column) == len(fed)
        assert report["sets"]["fed_dialogue"]["full"][f"{name} dialogue (mean)"]["spearman"] == pytest.approx(
            100 * spearmanr(column, [row["score"] for row in fed]).statistic, abs=1e-9
        )
