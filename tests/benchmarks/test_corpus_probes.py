"""benchmarks.corpus_probes: the probes on each corpus's held-out dialogues, checked against a direct count."""

import json

import numpy as np

from benchmarks import corpus_probes
from benchmarks.probes import make_probes
from density_metric import DensityScorer
from tests.train.data.test_corpora import write_dailydialog


def test_each_corpus_gets_its_held_out_dialogues_and_the_share_of_wins_counted_directly(tiny_checkpoint, tmp_path):
    data = tmp_path / "data"
    (data / "dailydialog").mkdir(parents=True)
    test = [[f"test {i} a .", f"test {i} b ?", f"test {i} c !"] for i in range(6)]
    write_dailydialog(data / "dailydialog", [["train a", "train b"]], [["valid a", "valid b"]], test)
    (data / "self_dialogue").mkdir()
    lines = [json.dumps({"id": str(i), "turns": [f"s{i} one .", f"s{i} two ?", f"s{i} three ."]}) for i in range(60)]
    (data / "self_dialogue" / "dialogues.jsonl").write_text("\n".join(lines) + "\n")
    out = tmp_path / "out"
    argv = ["--checkpoint", tiny_checkpoint, "--data-dir", data, "--corpora", "dailydialog", "self_dialogue"]
    corpus_probes.main([str(a) for a in [*argv, "--probes", 5, "--dtype", "float32", "--out", out]])
    report = json.loads((out / "corpus_probes.json").read_text())
    assert report["splits"] == {"dailydialog": "test", "self_dialogue": "validation"}
    # DailyDialog: its test split; Self-dialogue: the seeded 5 % (3 of 60 dialogues), never a training one.
    assert report["corpora"]["dailydialog"]["dialogues"] == 6
    assert report["corpora"]["self_dialogue"]["dialogues"] == 3
    held_out = corpus_probes.held_out_dialogues("self_dialogue", data)
    assert all(turns[0].startswith("s") for turns in held_out) and len(held_out) == 3
    # The echo share, counted here case by case with the scorer.
    scorer = DensityScorer(str(tiny_checkpoint), device="cpu", dtype="float32", batch_size=8)
    cases = make_probes(test, 5, 0)
    contexts = [case["context"] for case in cases]
    gold = scorer.score(contexts, [case["gold"] for case in cases]).scores
    echo = scorer.score(contexts, [case["echo"] for case in cases]).scores
    expected = float(np.mean([g > e for g, e in zip(gold, echo)]))
    assert report["corpora"]["dailydialog"]["accuracy"]["echo"]["DEnsity"] == expected
    table = (out / "corpus_probes.md").read_text()
    assert "| echo of the previous turn | " in table and f"{100 * expected:.1f} % (5)" in table


def test_the_report_names_every_probe():
    from benchmarks.probes import PROBES

    assert set(corpus_probes.NAMES) == set(PROBES)
