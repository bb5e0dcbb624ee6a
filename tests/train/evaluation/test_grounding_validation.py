"""The grounding validation signal (train/evaluation/grounding_validation.py): overlaps, statistics, the seeded set, the CLI."""

import json

import numpy as np
import pytest
from scipy.stats import spearmanr

from density_train.commands import main as train_main
from density_train.data.corpora import load_convai2
from density_train.data.text import content_words
from density_train.evaluation.grounding_validation import (
    GroundingSet,
    content_overlap,
    evaluate_scores,
    grounding_metrics,
    group_metrics,
    persona_lines,
)

CONVAI2 = "".join(
    f"1 your persona: i love {hobby} and my dog.\n"
    f"2 your persona: i work as a {job}.\n"
    f"3 hi , how are you ?\tgood , i just came back from {hobby} .\n"
    f"4 nice ! what do you do ?\ti am a {job} , and you ?\n"
    f"5 i am a student .\tcool , do you like {hobby} too ?\n"
    for hobby, job in [("hiking", "nurse"), ("chess", "baker"), ("surfing", "pilot"), ("knitting", "judge")]
)


@pytest.fixture
def convai2_file(tmp_path):
    path = tmp_path / "valid.txt"
    path.write_text(CONVAI2, encoding="utf-8")
    return path


def main(argv):
    """``python -m train grounding-validation ARGV``."""
    train_main(["grounding-validation", *argv])


def test_content_words_are_lowercased_alphanumeric_runs_without_stop_words_or_single_characters():
    assert content_words("I don't LIKE the 2 Dogs, really!") == ["like", "dogs", "really"]


def test_content_overlap_is_the_share_of_the_replys_content_tokens_found_in_the_reference():
    reply, reference = "dogs and cats , dogs again", "my dogs sleep"
    tokens = ["dogs", "cats", "dogs"]  # by hand: "and" and "again" are stop words, "," no word
    assert content_overlap(reply, reference) == sum(t in {"dogs", "sleep"} for t in tokens) / len(tokens)
    assert content_overlap("and the", reference) == 0.0


def test_persona_lines_are_the_context_lines_with_the_prefix_removed():
    assert persona_lines(["your persona: i sing.", "your persona: i bake.", "hello"]) == "i sing. i bake."


def naive_auc(positive, negative):
    wins = [1.0 if p > n else 0.5 if p == n else 0.0 for p in positive for n in negative]
    return sum(wins) / len(wins)


def test_grounding_metrics_match_independent_references():
    rng = np.random.default_rng(7)
    gold, echo = rng.normal(size=40), rng.normal(size=40)
    echo[:5] = gold[:5]  # ties count half
    distractors = rng.normal(size=(40, 3))
    persona, last = rng.integers(0, 4, size=40) / 4, rng.random(40)  # persona overlaps with ties
    metrics = grounding_metrics(gold, echo, distractors, persona, last)
    assert metrics["grounding/persona_spearman"] == pytest.approx(100 * spearmanr(gold, persona).statistic)
    assert metrics["grounding/last_turn_spearman"] == pytest.approx(100 * spearmanr(gold, last).statistic)
    paired = [1.0 if g > e else 0.5 if g == e else 0.0 for g, e in zip(gold, echo)]
    assert metrics["grounding/echo_win"] == pytest.approx(sum(paired) / 40)
    assert metrics["grounding/echo_auc"] == pytest.approx(naive_auc(gold, echo))
    firsts = [all(g > d for d in row) for g, row in zip(gold, distractors)]
    assert metrics["grounding/recall_at_1"] == pytest.approx(sum(firsts) / 40)


def test_recall_at_1_counts_a_tie_with_a_distractor_as_a_miss_and_needs_distractors():
    metrics = grounding_metrics(np.array([1.0, 2.0]), np.zeros(2), np.array([[1.0], [0.0]]), np.zeros(2), np.zeros(2))
    assert metrics["grounding/recall_at_1"] == 0.5
    assert "grounding/recall_at_1" not in grounding_metrics(np.ones(2), np.zeros(2), np.zeros((2, 0)), [0, 1], [1, 0])


def test_the_set_is_seeded_and_draws_distractors_from_other_dialogues(convai2_file):
    data = GroundingSet.load(convai2_file, n=8, seed=3, distractors=2)
    again = GroundingSet.load(convai2_file, n=8, seed=3, distractors=2)
    assert data.groups() == again.groups() and data.contexts == again.contexts
    assert data.groups() != GroundingSet.load(convai2_file, n=8, seed=4, distractors=2).groups()
    dialogues = load_convai2(convai2_file)
    own = {}
    for row in dialogues:
        for i in row["responses"]:
            own[row["turns"][i]] = set(row["turns"])
    for context, gold, echo, others in zip(data.contexts, data.golds, data.echoes, data.distractors):
        assert context[0].startswith("your persona:") and echo == context[-1]
        assert len(set(others)) == 2 and not set(others) & own[gold]
    persona = [content_overlap(g, persona_lines(c)) for c, g in zip(data.contexts, data.golds)]
    assert data.persona.tolist() == persona and len(GroundingSet.load(convai2_file, n=100)) == 12


def test_evaluate_scores_scores_every_candidate_against_its_own_context(convai2_file):
    data = GroundingSet.load(convai2_file, n=6, seed=0, distractors=2)
    seen = []

    def score(contexts, responses):
        seen.extend(zip(map(tuple, contexts), responses))
        return np.array([float(len(r)) for r in responses])

    metrics = evaluate_scores(score, data)
    assert len(seen) == 6 * 4
    for context, group in zip(data.contexts, data.groups()):
        assert all((tuple(context), text) in seen for text in group)
    lengths = np.array([[len(text) for text in group] for group in data.groups()], dtype=float)
    assert metrics == pytest.approx(group_metrics(lengths, data), nan_ok=True)
    assert tuple(metrics) == data.metric_names()


def test_cli_prints_and_writes_the_report(convai2_file, tiny_checkpoint, tmp_path, capsys):
    out = tmp_path / "report.json"
    main(["--checkpoint", str(tiny_checkpoint), "--data", str(convai2_file), "--n", "5", "--out", str(out)])
    report = json.loads(out.read_text())
    assert json.loads(capsys.readouterr().out) == report
    assert report["n"] == 5 and report["distractors"] == 4 and 0 <= report["grounding/echo_win"] <= 1
    assert {"grounding/persona_spearman", "grounding/last_turn_spearman", "grounding/recall_at_1"} <= set(report)


def test_cli_names_a_missing_data_file_in_one_error_line(tmp_path, capsys):
    with pytest.raises(SystemExit) as stop:
        main(["--data", str(tmp_path / "nowhere.txt"), "--out", str(tmp_path / "r.json")])
    err = capsys.readouterr().err
    assert stop.value.code == 2 and err.startswith(f"error: --data {tmp_path / 'nowhere.txt'}")
    assert not (tmp_path / "r.json").exists()


@pytest.mark.parametrize("bad", ["folder", "below_a_file"])
def test_cli_refuses_an_out_it_cannot_write_before_it_reads_anything(tmp_path, capsys, bad):
    """--out is checked first: the missing --data is never reached, so the one error line is about --out."""
    (tmp_path / "a_file").write_text("")
    out = tmp_path if bad == "folder" else tmp_path / "a_file" / "r.json"
    with pytest.raises(SystemExit) as stop:
        main(["--data", str(tmp_path / "nowhere.txt"), "--out", str(out)])
    err = capsys.readouterr().err
    assert stop.value.code == 2 and err.startswith(f"error: --out {out}: "), err
    assert ("a folder" if bad == "folder" else "is a file, not a folder") in err


def test_cli_keep_lines_scores_the_contexts_with_their_lines_kept(convai2_file, tiny_checkpoint, tmp_path):
    from density_metric import DensityScorer

    out = tmp_path / "report.json"
    main(
        [
            "--checkpoint",
            str(tiny_checkpoint),
            "--data",
            str(convai2_file),
            "--n",
            "8",
            "--keep-lines",
            "--out",
            str(out),
        ]
    )
    report = json.loads(out.read_text())
    scorer = DensityScorer(str(tiny_checkpoint))
    data = GroundingSet.load(convai2_file, 8)
    kept = data.with_lines_kept(scorer.encoder.tokenizer, scorer.encoder.pair_format)
    assert kept.contexts != data.contexts  # the lines and the turns do not all fit this format
    expected = evaluate_scores(lambda c, r: -scorer.distances(c, r), kept)
    assert report["keep_lines"] is True
    assert {name: report[name] for name in expected} == pytest.approx(expected, nan_ok=True)
