"""Training on a tiny random BERT: it learns, logs, keeps the best, resumes exactly, and runs on 2 processes."""

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import torch
from safetensors.torch import load_file

from density_metric.encoding.pair_format import PairFormat
from density_train.config.recipe import TrainConfig
from density_train.data.corpora import response_pairs, response_pairs_with_dialogues
from density_train.data.examples import SelectionData
from density_train.evaluation.evaluators import KindAUCs, encode_groups
from density_train.loop.trainer import Trainer

from ...ports import torchrun
from ...tiny import WORDS

ROOT = Path(__file__).resolve().parents[3]


def synthetic_dialogues(n, seed):
    """Dialogues whose replies reuse the previous turn's words, so there is something to learn."""
    rng = np.random.default_rng(seed)
    dialogues = []
    for _ in range(n):
        turns = [" ".join(rng.choice(WORDS, size=3, replace=False))]
        for _ in range(3):
            turns.append(" ".join(rng.permutation(turns[-1].split())))
        dialogues.append(turns)
    return dialogues


def config_for(backbone, **overrides):
    """A tiny recipe over ``backbone``, float32 on every machine ("auto" would train in bf16 on a CPU with native
    bf16 only: the numbers the tests compare would depend on the CPU); a test that wants bf16 says so."""
    base = dict(
        mixed_precision="no",
        backbone=str(backbone),
        negatives=3,
        epochs=2,
        batch_size=4,
        warmup_steps=2,
        lr=1e-3,
        pair_format=PairFormat(max_length=48, max_response_length=16),
        eval_batch_size=8,
        max_steps_per_epoch=6,
    )
    return TrainConfig(**{**base, **overrides})


def data():
    return SelectionData.from_pairs(*response_pairs(synthetic_dialogues(40, 0))), SelectionData.from_pairs(
        *response_pairs(synthetic_dialogues(10, 1))
    )


def dialogue_data():
    """data() with each pair's dialogue kept, for same-dialogue negatives."""
    return tuple(
        SelectionData.from_pairs(*response_pairs_with_dialogues(synthetic_dialogues(n, seed)))
        for n, seed in ((40, 0), (10, 1))
    )


def write_corpus(folder, train_dialogues=30, valid_dialogues=8):
    """``train.jsonl`` and ``valid.jsonl`` of synthetic dialogues in ``folder``, for ``--corpus jsonl``."""
    for split, n, seed in (("train", train_dialogues, 0), ("valid", valid_dialogues, 1)):
        lines = [json.dumps(turns) for turns in synthetic_dialogues(n, seed)]
        (folder / f"{split}.jsonl").write_text("\n".join(lines) + "\n")


def assert_same_weights(run, other):
    """The two runs' saved states hold the same weights (to float32 noise)."""
    first = load_file(str(run / "state" / "model.safetensors"))
    second = load_file(str(other / "state" / "model.safetensors"))
    for name, tensor in first.items():
        torch.testing.assert_close(second[name], tensor, rtol=1e-5, atol=1e-6)


def read_log(out):
    return [json.loads(line) for line in (out / "log.jsonl").read_text().splitlines()]


def test_training_logs_every_step_and_evaluation_and_keeps_the_best(backbone, tmp_path):
    train, valid = data()
    Trainer(config_for(backbone), train, valid, tmp_path).train()
    log = read_log(tmp_path)
    steps = [r for r in log if r["type"] == "train"]
    assert [r["step"] for r in steps] == list(range(1, 13))
    assert all(r["loss"] == pytest.approx(r["ce"] + r["contrastive"], rel=1e-5) for r in steps)
    evals = [r for r in log if r["type"] == "eval"]
    assert len(evals) == 2 and all(0 <= r["recall_at_1"] <= 1 and 0 < r["mrr"] <= 1 for r in evals)
    for name in ("config.json", "model.safetensors", "density_head.safetensors", "tokenizer.json"):
        assert (tmp_path / "best" / name).is_file()
    assert json.loads((tmp_path / "state" / "trainer_state.json").read_text())["progress"]["epoch"] == 2


def test_training_fits_a_small_training_set(backbone, tmp_path):
    """The loop's gradients, optimizer and schedule work: 8 pairs seen 40 times are learnt."""
    train = SelectionData.from_pairs(*response_pairs(synthetic_dialogues(40, 0)))
    small = SelectionData(train.contexts[:8], train.responses[:8], train.pool)
    config = config_for(backbone, epochs=40, max_steps_per_epoch=0, warmup_steps=5, contrastive_weight=0.0)
    Trainer(config, small, small, tmp_path).train()
    log = read_log(tmp_path)
    losses = [r["loss"] for r in log if r["type"] == "train"]
    assert np.mean(losses[-4:]) < 0.3 * np.mean(losses[:4])
    assert [r for r in log if r["type"] == "eval"][-1]["recall_at_1"] == 1.0


@pytest.mark.parametrize(
    "overrides",
    [
        {},
        {
            "pair_format": PairFormat(max_length=48, max_response_length=16, layout="shared-context"),
            "length_buckets": 2,
        },
        {"pair_format": PairFormat(max_length=48, max_response_length=16, layout="shared-context", pooling="mean")},
    ],
    ids=["paper", "shared-context-length-buckets", "shared-context-mean-pooling"],
)
def test_interrupted_run_resumes_in_a_new_trainer_to_the_same_weights(backbone, tmp_path, overrides):
    train, valid = data()
    config = config_for(backbone, **overrides)
    Trainer(config, train, valid, tmp_path / "straight").train()
    Trainer(config, train, valid, tmp_path / "resumed").train(stop_after_steps=4)  # mid-epoch 1
    Trainer(config, train, valid, tmp_path / "resumed").train(stop_after_steps=5)  # into epoch 2
    Trainer(config, train, valid, tmp_path / "resumed").train(stop_after_seconds=0)  # one step, then out of time
    Trainer(config, train, valid, tmp_path / "resumed").train()
    assert_same_weights(tmp_path / "straight", tmp_path / "resumed")
    losses = lambda out: [r["loss"] for r in read_log(out) if r["type"] == "train"]  # noqa: E731
    np.testing.assert_allclose(losses(tmp_path / "resumed"), losses(tmp_path / "straight"), rtol=1e-5)


def test_two_processes_take_the_same_steps_as_one_process_accumulating_two(backbone, tmp_path):
    script = tmp_path / "run.py"
    script.write_text(
        "import sys\n"
        f"sys.path.insert(0, {str(ROOT)!r})\n"
        "from tests.train.loop.test_training import config_for, data\n"
        "from density_train.loop.trainer import Trainer\n"
        "train, valid = data()\n"
        "accum, out = int(sys.argv[1]), sys.argv[2]\n"
        f"Trainer(config_for({str(backbone)!r}, grad_accum=accum, batch_size=2, epochs=1), train, valid, out).train()\n"
    )
    # ACCELERATE_USE_CPU=1 is what `accelerate launch --cpu` sets; without it Accelerate ignores torchrun on CPU.
    env = {**os.environ, "OMP_NUM_THREADS": "1", "ACCELERATE_USE_CPU": "1"}
    single = subprocess.run(
        [sys.executable, str(script), "2", str(tmp_path / "one")], env=env, capture_output=True, text=True, timeout=600
    )
    assert single.returncode == 0, single.stderr
    command = torchrun(script, 1, tmp_path / "two")
    double = subprocess.run(command, env=env, capture_output=True, text=True, timeout=600)
    assert double.returncode == 0, double.stderr
    one, two = read_log(tmp_path / "one"), read_log(tmp_path / "two")
    assert len(one) == len(two) == 7  # 6 steps and one evaluation
    np.testing.assert_allclose(
        [r.get("loss", r.get("recall_at_1")) for r in two],
        [r.get("loss", r.get("recall_at_1")) for r in one],
        rtol=1e-4,
    )
    a = load_file(str(tmp_path / "one" / "state" / "model.safetensors"))
    b = load_file(str(tmp_path / "two" / "state" / "model.safetensors"))
    for name in a:
        torch.testing.assert_close(b[name], a[name], rtol=1e-4, atol=1e-5)


# What the launchers leave in the environment: torchrun's WORLD_SIZE; accelerate launch's simple launcher (the one
# it takes with --cpu, which starts one process) sets MASTER_ADDR when asked for several, and its own variables.
def test_train_command_writes_a_checkpoint_the_metric_loads_with_head_and_card(backbone, tmp_path):
    from density_metric import DensityScorer
    from density_train.commands import main

    write_corpus(tmp_path, valid_dialogues=30)
    main(
        [
            "train",
            "--corpus",
            "jsonl",
            "--train-file",
            str(tmp_path / "train.jsonl"),
            "--valid-file",
            str(tmp_path / "valid.jsonl"),
            "--backbone",
            str(backbone),
            "--out",
            str(tmp_path / "run"),
            "--negatives",
            "3",
            "--epochs",
            "1",
            "--batch-size",
            "4",
            "--warmup-steps",
            "2",
            "--max-length",
            "48",
            "--max-response-length",
            "16",
            "--turn-separator",
            "[SEPT]",
            "--name",
            "tiny-density",
        ]
    )
    checkpoint = tmp_path / "run" / "checkpoint"
    best = load_file(str(tmp_path / "run" / "best" / "model.safetensors"))
    written = load_file(str(checkpoint / "model.safetensors"))
    assert set(written) == set(best) and all(torch.equal(written[k], best[k]) for k in best)
    scorer = DensityScorer(str(checkpoint), device="cpu", dtype="float32")
    assert scorer.checkpoint.config.pair_format.turn_separator == "[SEPT]"
    assert scorer.checkpoint.stats.n_samples == 90  # 30 dialogues x 3 responses
    contexts, responses = [["hi you"], ["good day"]], ["you hi", "a"]
    assert np.all(np.isfinite(scorer.score(contexts, responses).scores))
    # f(c, r) from the checkpoint equals the trained head applied to g(c, r).
    head = load_file(str(checkpoint / "density_head.safetensors"))
    features = scorer.features(contexts, responses).astype(np.float64)
    np.testing.assert_allclose(
        scorer.classifier_scores(contexts, responses),
        features @ head["weight"].double().numpy() + head["bias"].item(),
        rtol=1e-5,
    )
    card = (checkpoint / "README.md").read_text()
    assert card.startswith("---\nlicense: other\nbase_model: ")
    assert "name: Recall@1" in card and not re.search(r"\$[a-z_]+", card)
    assert "python -m train train --corpus jsonl" in card
    from density_metric.encoding.device import machine_description

    flat = " ".join(card.split())
    assert "optimizer steps of 4 contexts" in flat and f"on {machine_description('cpu')}, in " in flat
    assert "The kept checkpoint is the one evaluated after step " in flat


def test_fit_with_float16_weights_fits_the_gaussian_to_the_weights_it_ships(backbone, tmp_path):
    from density_metric import DensityScorer
    from density_train.commands import main

    dialogues = {"train": synthetic_dialogues(20, 0), "valid": synthetic_dialogues(8, 1)}
    for split, turns in dialogues.items():
        (tmp_path / f"{split}.jsonl").write_text("\n".join(json.dumps(t) for t in turns) + "\n")
    main(
        [
            "fit",
            "--corpus",
            "jsonl",
            "--train-file",
            str(tmp_path / "train.jsonl"),
            "--valid-file",
            str(tmp_path / "valid.jsonl"),
            "--encoder",
            str(backbone),
            "--out",
            str(tmp_path / "ckpt"),
            "--max-length",
            "48",
            "--max-response-length",
            "16",
            "--device",
            "cpu",
            "--weights-dtype",
            "float16",
        ]
    )
    written = load_file(str(tmp_path / "ckpt" / "model.safetensors"))
    original = load_file(str(backbone / "model.safetensors"))
    assert {t.dtype for t in written.values()} == {torch.float16}
    for name, tensor in written.items():
        assert torch.equal(tensor, original[name].half())

    contexts, responses = response_pairs(dialogues["train"])
    shipped = DensityScorer(str(tmp_path / "ckpt"), device="cpu", dtype="float32")
    features = shipped.features(contexts, responses).astype(np.float64)
    np.testing.assert_allclose(shipped.checkpoint.stats.mean, features.mean(axis=0), rtol=0, atol=1e-6)
    # The float32 backbone's features differ by more than that tolerance, so the test can tell them apart.
    unrounded = DensityScorer(str(tmp_path / "ckpt"), device="cpu", dtype="float32")
    unrounded.encoder.model.load_state_dict({k: v.float() for k, v in original.items()}, strict=False)
    assert (
        np.abs(unrounded.features(contexts, responses).astype(np.float64).mean(axis=0) - features.mean(axis=0)).max()
        > 1e-5
    )


def test_feature_only_last_layer_gives_the_full_layers_loss_and_gradients(backbone):
    """The training saving changes nothing in the math: same loss, same gradients (dropout off)."""
    from density_train.evaluation.evaluators import encode_groups
    from density_train.losses.response_selection import selection_loss, supervised_contrastive_loss
    from density_train.model import DensityModel

    train, _ = data()
    contexts, groups = train.contexts[:4], [[r, *n] for r, n in zip(train.responses[:4], train.negatives(3, 42))]
    results = []
    for layout in ("paper", "shared-context"):
        pair_format = PairFormat(max_length=48, max_response_length=16, layout=layout)
        for feature_only in (True, False):
            torch.manual_seed(0)
            model, tokenizer = DensityModel.load(backbone, pair_format, feature_only_last_layer=feature_only)
            assert model.feature_only_last_layer is feature_only
            model.train()  # the backbone fixture has dropout 0
            features, logits = model(encode_groups(tokenizer, TrainConfig(pair_format=pair_format), contexts, groups))
            loss = selection_loss(logits, 4) + supervised_contrastive_loss(features, 4)
            loss.backward()
            grads = torch.cat([p.grad.flatten() for p in model.parameters() if p.grad is not None])
            results.append((layout, loss.item(), grads))
    for first, second in ((0, 1), (2, 3)):
        assert results[first][1] == pytest.approx(results[second][1], rel=1e-5)
        torch.testing.assert_close(results[first][2], results[second][2], rtol=1e-4, atol=1e-6)
    mean = PairFormat(max_length=48, max_response_length=16, layout="shared-context", pooling="mean")
    model, _ = DensityModel.load(backbone, mean)  # mean pooling reads every token: the whole last layer
    assert model.feature_only_last_layer is False


def test_overlap_rows_draws_from_golds_that_reuse_the_last_turns_words(backbone, tmp_path):
    """The pool is every training pair whose gold has >= 30 % of its words in the last context turn, found
    here by a plain loop over the pairs."""
    from density_train.data.examples import SelectionData
    from density_train.loop.trainer import Trainer

    _, valid = data()
    rng = np.random.default_rng(3)
    turns = [
        " ".join(rng.choice(["hi", "how", "are", "you", "fine", "good", "day", "nice", "what"], 4)) for _ in range(40)
    ]
    train = SelectionData.from_pairs([[t] for t in turns[:20]], turns[20:])  # overlaps of 0 to 1
    with pytest.raises(ValueError, match="needs --density-weight"):
        config_for(backbone, overlap_rows=1)
    config = config_for(backbone, overlap_rows=1, density_weight=1.0, anchor_weight=0.0, dropout=False)
    trainer = Trainer(config, train, valid, tmp_path)
    expected = []
    for row, (context, gold) in enumerate(zip(train.contexts, train.responses)):
        words = [w.strip(".,?!'").lower() for w in gold.split()]
        words = [w for w in words if w]
        last = {w.strip(".,?!'").lower() for w in context[-1].split()}
        if words and sum(w in last for w in words) / len(words) >= 0.3:
            expected.append(row)
    assert 0 < len(expected) < len(train)
    assert trainer.overlap_pool.tolist() == expected
    assert trainer.train(stop_after_steps=1)["global_step"] == 1


def test_attention_dropout_option_sets_every_self_attention(backbone):
    from density_train.model import DensityModel, set_attention_dropout

    model, _ = DensityModel.load(backbone)
    set_attention_dropout(model.encoder, 0.3)  # the fixture's backbone has 0
    probabilities = [m.dropout.p for n, m in model.encoder.named_modules() if n.endswith("attention.self")]
    assert probabilities == [0.3] * model.encoder.config.num_hidden_layers
    assert model.encoder.config.attention_probs_dropout_prob == 0.3


MIX = "random:4,same-dialogue:1,echo:1,speaker:1,repeat:1,drop:1,shuffle:1"


def test_trainer_logs_per_kind_aucs_and_dev_correlations_twice_per_epoch(backbone, tmp_path):
    from density_train.evaluation.validation import DevJudgments

    train, valid = dialogue_data()
    dev = DevJudgments(valid.contexts[:12], valid.responses[:12], np.linspace(0, 1, 12), "toy_dev")
    config = config_for(
        backbone,
        epochs=1,
        evals_per_epoch=2,
        valid_fit_pairs=60,
        select_on="auc_density/echo+auc_density/random",
        select_floor="toy_dev_spearman=-100",
    )
    progress = Trainer(config, train, valid, tmp_path / "run", dev=dev).train()
    evals = [record for record in read_log(tmp_path / "run") if record["type"] == "eval"]
    assert [record["step"] for record in evals] == [3, 6]
    for kind in ("random", "same-dialogue", "echo", "speaker", "repeat", "drop", "shuffle"):
        assert 0 <= evals[0][f"auc_f/{kind}"] <= 1 and 0 <= evals[0][f"auc_density/{kind}"] <= 1
    assert "auc_f/retrieved" not in evals[0]  # no index was given
    assert all(-100 <= record["toy_dev_spearman"] <= 100 for record in evals)
    # every toy reply is a permutation of its last turn: overlap 1 throughout, no rank correlation to report
    assert all(np.isnan(record["gold_overlap_spearman"]) for record in evals)
    assert progress["best"] == max((r["auc_density/echo"] + r["auc_density/random"]) / 2 for r in evals)
    assert (tmp_path / "run" / "best" / "model.safetensors").is_file()


def test_a_floor_relative_to_the_start_reads_the_step_0_evaluation(backbone, tmp_path):
    train, valid = dialogue_data()
    config = config_for(
        backbone,
        epochs=1,
        evals_per_epoch=2,
        valid_fit_pairs=60,
        eval_at_start=True,
        select_on="auc_density/echo+auc_density/random",
        select_floor="mrr=start",
    )
    progress = Trainer(config, train, valid, tmp_path / "run").train()
    evals = [record for record in read_log(tmp_path / "run") if record["type"] == "eval"]
    assert [record["step"] for record in evals] == [0, 3, 6]
    assert progress["start"] == {name: evals[0][name] for name in ("auc_density/echo", "auc_density/random", "mrr")}
    passing = [r for r in evals if r["mrr"] >= evals[0]["mrr"]]  # the start itself always does
    assert progress["best"] == max((r["auc_density/echo"] + r["auc_density/random"]) / 2 for r in passing)


def test_a_run_with_hard_negatives_resumes_to_the_same_weights(backbone, tmp_path):
    """Hard negatives are a function of (seed, epoch, row): a resumed run sees the same ones."""
    train, valid = dialogue_data()
    config = config_for(backbone, negatives=6, negative_mix=MIX, validation_kinds="")
    Trainer(config, train, valid, tmp_path / "straight").train()
    Trainer(config, train, valid, tmp_path / "resumed").train(stop_after_steps=4)
    Trainer(config, train, valid, tmp_path / "resumed").train()
    assert_same_weights(tmp_path / "straight", tmp_path / "resumed")


@pytest.mark.parametrize("exclude", ["", "repeat,drop"])
def test_the_loss_with_hard_negatives_equals_a_naive_loop(backbone, tmp_path, exclude):
    """Cross-entropy over 1 + N candidates (hard ones included) plus the contrastive term in
    which every negative is a class of its own, recomputed pair by pair from the features;
    negatives of an excluded kind leave the contrastive term only."""
    train, valid = dialogue_data()
    config = config_for(backbone, negatives=6, negative_mix=MIX, validation_kinds="", contrastive_exclude=exclude)
    trainer = Trainer(config, train, valid, tmp_path)
    rows = list(range(4))
    drawn = trainer._draw(rows, epoch=0)
    assert any(text in train.contexts[row] for row in rows for _, text in drawn[row])  # echoes are there
    contexts = [train.contexts[i] for i in rows]
    candidates = [[train.responses[i], *(text for _, text in drawn[i])] for i in rows]
    kinds = [[kind for kind, _ in drawn[i]] for i in rows]
    trainer.model.eval()
    with torch.no_grad():
        loss, ce_part, scl_part = (x.item() for x in trainer._micro_batch_loss(contexts, candidates, kinds)[:3])
        features, logits = trainer.model(encode_groups(trainer.tokenizer, trainer.config, contexts, candidates))
    features, logits = features.double().numpy(), logits.double().numpy()
    group = 7
    ce = np.mean([np.log(np.exp(logits[g * group : (g + 1) * group]).sum()) - logits[g * group] for g in range(4)])
    z = features / np.linalg.norm(features, axis=1, keepdims=True)
    gold = [g * group for g in range(4)]
    excluded = {g * group + 1 + j for g in range(4) for j, kind in enumerate(kinds[g]) if kind in exclude.split(",")}
    assert bool(excluded) == bool(exclude)  # the mix has repeat and drop negatives here
    scl = []
    for i in gold:
        others = [a for a in range(len(z)) if a != i and a not in excluded]
        log_denominator = np.log(sum(np.exp(z[i] @ z[a] / 0.1) for a in others))
        scl.append(-np.mean([z[i] @ z[p] / 0.1 - log_denominator for p in gold if p != i]))
    assert ce_part == pytest.approx(ce, rel=1e-4)
    assert scl_part == pytest.approx(np.mean(scl), rel=1e-4)
    assert loss == pytest.approx(ce + np.mean(scl), rel=1e-4)


def test_a_curriculum_trains_on_random_negatives_then_switches_to_the_mix(backbone, tmp_path):
    """Before hard_negatives_after, a mix run is a random-only run with negatives resampled each
    epoch (the same draws); after it, the mix changes the weights; a resumed run keeps to both."""
    train, valid = dialogue_data()
    steps = 12  # 2 epochs of 6 steps

    def weights(name, stop=None, **overrides):
        config = config_for(backbone, negatives=6, validation_kinds="", **overrides)
        Trainer(config, train, valid, tmp_path / name).train(stop_after_steps=stop)
        if stop:
            Trainer(config, train, valid, tmp_path / name).train()
        return load_file(str(tmp_path / name / "state" / "model.safetensors"))

    random_only = weights("random", negative_mix="random:1", resample_negatives=True)
    never = weights("never", negative_mix=MIX, hard_negatives_after=steps)
    switched = weights("switched", negative_mix=MIX, hard_negatives_after=4)
    resumed = weights("resumed", stop=3, negative_mix=MIX, hard_negatives_after=4)
    for name, tensor in random_only.items():
        torch.testing.assert_close(never[name], tensor, rtol=1e-5, atol=1e-6)
        torch.testing.assert_close(resumed[name], switched[name], rtol=1e-5, atol=1e-6)
    assert any(not torch.allclose(switched[name], tensor) for name, tensor in random_only.items())


def test_an_unknown_excluded_kind_is_an_error(backbone):
    with pytest.raises(ValueError, match="contrastive_exclude: unknown kind"):
        config_for(backbone, contrastive_exclude="speaker,typo")


def test_a_validation_index_built_for_another_pool_is_an_error_not_a_silent_skip(backbone, tmp_path):
    from density_train.negatives.retrieval import PoolMismatchError, RetrievalIndex, split_path

    train, valid = dialogue_data()
    texts = ["one", "two", "three"]
    index = RetrievalIndex.from_embeddings(texts, np.eye(3, dtype=np.float32), k=2, ceiling=0.75)
    index.save(split_path(tmp_path / "index.safetensors", "validation"))
    config = config_for(backbone, retrieval_index=str(tmp_path / "index.safetensors"))
    with pytest.raises(PoolMismatchError):
        Trainer(config, train, valid, tmp_path / "run")
    assert "retrieved" not in Trainer(config_for(backbone), train, valid, tmp_path / "plain").evaluator(KindAUCs).kinds
