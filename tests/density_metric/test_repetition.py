"""The optional repetition term beside the density (density_metric.repetition), checked against naive loops."""

from __future__ import annotations

import numpy as np
import pytest

from density_metric.checkpoint.format import GAUSSIAN_FILE, load_checkpoint, read_safetensors
from density_metric.errors import CheckpointError
from density_metric.gaussian import GaussianStats
from density_metric.repetition import RepetitionTerm, rep2

from ..tiny import synthetic_pairs


def write_repetitive_corpus(folder) -> list[str]:
    """train.jsonl and valid.jsonl in ``folder``: dialogues of 4 random sentences, some of which repeat a bigram;
    returns the corpus flags (and --device cpu) of the train commands."""
    import json

    for split, seed in (("train", 3), ("valid", 4)):
        turns = synthetic_pairs(120, seed)[1]
        dialogues = [turns[i : i + 4] for i in range(0, 120, 4)]
        (folder / f"{split}.jsonl").write_text("\n".join(json.dumps(d) for d in dialogues) + "\n")
    return [
        "--corpus",
        "jsonl",
        "--train-file",
        str(folder / "train.jsonl"),
        "--valid-file",
        str(folder / "valid.jsonl"),
        "--device",
        "cpu",
    ]


def naive_rep2(ids: list[int]) -> float:
    """1 - distinct bigrams / bigrams, one reply at a time."""
    bigrams = [(ids[i], ids[i + 1]) for i in range(len(ids) - 1)]
    return 1 - len(set(bigrams)) / len(bigrams) if bigrams else 0.0


def test_rep2_counts_bigrams_said_again():
    # (1,2) (2,1) (1,2) (2,1) (1,2): 2 distinct of 5; "a b c": none repeated; empty and one piece: 0
    assert rep2([[1, 2, 1, 2, 1, 2], [5, 6, 7], [], [9], [4, 4, 4]]) == pytest.approx([0.6, 0.0, 0.0, 0.0, 0.5])


def test_rep2_matches_a_loop_and_never_mixes_replies():
    rng = np.random.default_rng(0)
    replies = [rng.integers(0, 6, size=rng.integers(0, 15)).tolist() for _ in range(400)]
    replies += [[3, 4], [4, 3]]  # a bigram across the boundary of two replies must not count
    np.testing.assert_allclose(rep2(replies), [naive_rep2(ids) for ids in replies], rtol=0, atol=1e-15)
    assert rep2([]).shape == (0,)


def test_rep2_takes_any_token_ids_without_overflow():
    big = 2**40  # ids this large would overflow a key of (reply, first, second) packed into one integer
    assert rep2([[big, big + 1, big, big + 1], [big + 1, big]]) == pytest.approx([1 / 3, 0.0])


def test_a_replys_special_token_text_counts_as_its_word_pieces(tiny_scorer):
    """As where the reply is encoded for its features: ``[SEP]`` in a reply is the pieces ``[``, ``sep``, ``]``."""
    said, spelled = "x [SEP] y [SEP] x [SEP] y", "x [ SEP ] y [ SEP ] x [ SEP ] y"
    np.testing.assert_array_equal(tiny_scorer.encoder.rep2([said]), tiny_scorer.encoder.rep2([spelled]))
    pieces = tiny_scorer.encoder.tokenizer(spelled, add_special_tokens=False)["input_ids"]
    assert tiny_scorer.encoder.rep2([said])[0] == pytest.approx(naive_rep2(pieces))


def test_one_rep2_value_per_distance():
    with pytest.raises(ValueError, match="one per reply"):
        RepetitionTerm(6.0, 0.1, 0.2).distances(np.ones(3), np.array([0.5]))


def test_term_is_one_sided_and_adds_in_quadrature():
    term = RepetitionTerm.fit(np.array([0.0, 0.0, 0.1, 0.3]), weight=6.0)
    mean, sd = 0.1, np.std([0.0, 0.0, 0.1, 0.3])
    distances, reply_rep2 = np.array([3.0, 4.0, 5.0]), np.array([0.0, 0.1, 0.5])
    z = (0.5 - mean) / sd
    expected = [3.0, 4.0, np.sqrt(25.0 + 36.0 * z * z)]
    np.testing.assert_allclose(term.distances(distances, reply_rep2), expected, rtol=1e-12)


def test_the_cap_bounds_the_push():
    term = RepetitionTerm(weight=6.0, mean=0.0, sd=0.1, cap=40.0)
    # pushes w z = 6, 30, 60: the last is capped at 40
    np.testing.assert_allclose(
        term.distances(np.full(3, 10.0), np.array([0.1, 0.5, 1.0])), np.sqrt(100.0 + np.array([36.0, 900.0, 1600.0]))
    )


@pytest.mark.parametrize(
    ("gold", "weight", "message"),
    [
        (np.zeros(5), 6.0, "must vary"),
        (np.array([0.0, 0.5]), 0.0, "positive"),
        (np.array([0.0, 0.5]), -1.0, "positive"),
    ],
)
def test_a_term_that_cannot_work_is_refused(gold, weight, message):
    with pytest.raises(ValueError, match=message):
        RepetitionTerm.fit(gold, weight)
    with pytest.raises(ValueError, match="cap must be positive"):
        RepetitionTerm.fit(np.array([0.0, 0.5]), 6.0, cap=0.0)


def test_statistics_with_a_term_refuse_distances_without_the_replies():
    stats = GaussianStats(np.zeros(2), np.eye(2), 10, "pinv", repetition=RepetitionTerm(6.0, 0.1, 0.2))
    with pytest.raises(ValueError, match="rep-2"):
        stats.distances(np.ones((1, 2)))
    np.testing.assert_allclose(stats.distances(np.ones((1, 2)), np.array([0.5])), [np.sqrt(2 + 144)])


@pytest.fixture(scope="module")
def repetition_checkpoint(tiny_shared_checkpoint, tmp_path_factory):
    """The tiny shared-context checkpoint with the term (w = 6), added by ``python -m train repetition-term``'s
    function on synthetic training replies, and the replies and held-out pairs it used."""
    from density_train.commands.fit import add_repetition_term

    out = tmp_path_factory.mktemp("repetition") / "checkpoint"
    train_responses = synthetic_pairs(300, seed=1)[1]
    heldout = synthetic_pairs(200, seed=2)
    report = add_repetition_term(
        str(tiny_shared_checkpoint), out, 6.0, train_responses, heldout, cap=40.0, device="cpu"
    )
    return out, report, train_responses, heldout


def test_added_term_holds_the_training_replies_statistics_and_recalibrates(
    repetition_checkpoint, tiny_shared_checkpoint
):
    from density_metric import DensityScorer

    out, report, train_responses, heldout = repetition_checkpoint
    loaded = load_checkpoint(out)
    scorer = DensityScorer(str(out), device="cpu", dtype="float32")
    tokenizer = scorer.encoder.tokenizer
    gold = np.array([naive_rep2(tokenizer(r, add_special_tokens=False)["input_ids"]) for r in train_responses])
    term = loaded.stats.repetition
    assert (term.weight, term.mean, term.sd, term.cap) == pytest.approx((6.0, gold.mean(), gold.std(), 40.0), rel=1e-12)
    assert report["repetition"]["mean"] == pytest.approx(gold.mean())
    assert "## Repetition term" in loaded.card and "w = 6, K = 40" in loaded.card
    # the quantiles are those of the held-out distances with the term: the plain checkpoint's, pushed by hand
    plain = DensityScorer(str(tiny_shared_checkpoint), device="cpu", dtype="float32").distances(*heldout)
    pieces = [naive_rep2(tokenizer(r, add_special_tokens=False)["input_ids"]) for r in heldout[1]]
    push = np.minimum(6.0 * np.maximum((np.array(pieces) - gold.mean()) / gold.std(), 0.0), 40.0)
    expected = np.quantile(np.sqrt(plain**2 + push**2), [0, 0.5, 1])
    np.testing.assert_allclose(loaded.stats.quantiles[[0, 500, 1000]], expected, rtol=1e-6)


def test_scores_add_the_term_to_the_plain_density(repetition_checkpoint, tiny_shared_checkpoint):
    from density_metric import DensityScorer

    out, *_ = repetition_checkpoint
    plain = DensityScorer(str(tiny_shared_checkpoint), device="cpu", dtype="float32")
    with_term = DensityScorer(str(out), device="cpu", dtype="float32")
    context = ["hi how are you"]
    replies = ["fine thanks", "fine fine fine fine fine fine", "good day good day good day", "nice weather"]
    d = -plain.rank(context, replies).scores
    term = with_term.stats.repetition
    pieces = [with_term.encoder.tokenizer(r, add_special_tokens=False)["input_ids"] for r in replies]
    z = np.maximum((np.array([naive_rep2(p) for p in pieces]) - term.mean) / term.sd, 0.0)
    expected = -np.sqrt(d**2 + np.minimum(term.weight * z, 40.0) ** 2)
    np.testing.assert_allclose(with_term.score([context] * len(replies), replies).scores, expected, rtol=1e-6)
    np.testing.assert_allclose(with_term.rank(context, replies).scores, expected, rtol=1e-6)
    assert z[0] == 0 and z[1] > 0 and z[2] > 0  # only the repetitive replies move


def test_fit_with_a_repetition_weight_carries_the_term_in_statistics_card_and_report(
    tiny_shared_checkpoint, tmp_path, capsys
):
    import json

    from density_train.commands import main

    corpus = write_repetitive_corpus(tmp_path)
    main(
        [
            "fit",
            *corpus,
            "--encoder",
            str(tiny_shared_checkpoint),
            "--repetition-weight",
            "6",
            "--out",
            str(tmp_path / "fit"),
        ]
    )
    report = json.loads(capsys.readouterr().out)
    fitted = load_checkpoint(tmp_path / "fit")
    main(["repetition-term", str(tiny_shared_checkpoint), *corpus, "--out", str(tmp_path / "added")])
    added = load_checkpoint(tmp_path / "added").stats.repetition
    # the same training replies and tokenizer: the same statistics, and the cap defaults to 40 in both commands
    assert fitted.stats.repetition == added
    assert report["repetition"] == {"weight": 6.0, "mean": added.mean, "sd": added.sd, "cap": 40.0}
    assert fitted.card.count("## Repetition term") == 1


def test_a_stale_rating_head_in_the_output_folder_is_removed(repetition_checkpoint, tmp_path):
    from density_train.commands.fit import add_repetition_term

    out, _, train_responses, heldout = repetition_checkpoint
    (tmp_path / "o").mkdir()
    (tmp_path / "o" / "density_rating.safetensors").write_bytes(b"left over")
    add_repetition_term(str(out), tmp_path / "o", 6.0, train_responses, heldout, device="cpu")
    assert not (tmp_path / "o" / "density_rating.safetensors").exists()
    assert load_checkpoint(tmp_path / "o").rating is None


def test_weight_zero_removes_the_term(repetition_checkpoint, tmp_path):
    from density_train.commands.fit import add_repetition_term

    out, _, train_responses, heldout = repetition_checkpoint
    add_repetition_term(str(out), tmp_path / "plain", 0.0, train_responses, heldout, device="cpu")
    plain = load_checkpoint(tmp_path / "plain")
    assert plain.stats.repetition is None
    assert "Repetition term" not in plain.card and plain.card.startswith("# tiny test checkpoint")
    add_repetition_term(str(out), tmp_path / "again", 4.0, train_responses, heldout, device="cpu")
    assert load_checkpoint(tmp_path / "again").card.count("## Repetition term") == 1


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (lambda t: t.pop("repetition_sd"), "incomplete: repetition_sd missing"),
        (lambda t: t.update(repetition_weight=np.asarray(-6.0)), "must be positive"),
        (lambda t: t.update(repetition_mean=np.asarray(1.5)), r"in \[0, 1\]"),
        (lambda t: t.update(repetition_sd=np.asarray([0.1, 0.2])), "float64 scalar"),
        (lambda t: t.update(repetition_weight=np.asarray(np.nan)), "not finite"),
        (lambda t: t.update(repetition_cap=np.asarray(np.nan)), "not finite"),
        (lambda t: t.update(repetition_cap=np.asarray(0.0)), "must be positive"),
    ],
)
def test_a_damaged_term_is_an_error_naming_the_file(repetition_checkpoint, tmp_path, change, message):
    import shutil

    from safetensors.numpy import save_file

    out, *_ = repetition_checkpoint
    damaged = tmp_path / "damaged"
    shutil.copytree(out, damaged)
    tensors, metadata = read_safetensors(damaged / GAUSSIAN_FILE)
    change(tensors)
    save_file(tensors, str(damaged / GAUSSIAN_FILE), metadata=metadata)
    with pytest.raises(CheckpointError, match=message) as error:
        load_checkpoint(damaged)
    assert GAUSSIAN_FILE in str(error.value)


def test_repetition_term_command_writes_a_checkpoint_and_refuses_a_bad_weight(
    tmp_path, tiny_shared_checkpoint, train_cli_error
):
    from density_train.commands import main

    corpus = write_repetitive_corpus(tmp_path)
    main(["repetition-term", str(tiny_shared_checkpoint), *corpus, "--out", str(tmp_path / "out")])
    term = load_checkpoint(tmp_path / "out").stats.repetition
    assert (term.weight, term.cap) == (6.0, 40.0)
    main(["repetition-term", str(tiny_shared_checkpoint), *corpus, "--cap", "inf", "--out", str(tmp_path / "free")])
    assert load_checkpoint(tmp_path / "free").stats.repetition.cap == np.inf
    line = train_cli_error(
        ["repetition-term", str(tiny_shared_checkpoint), *corpus, "--weight", "-1", "--out", str(tmp_path / "bad")]
    )
    assert "repetition weight must be a positive number" in line
