"""The trainer's evaluators (train/evaluation/evaluators.py): what each says it logs is what it returns, in order, with its
primary metric; the per-kind AUCs and the Recall@1 against naive loops over the model's own outputs."""

import numpy as np
import pytest

from density_train.data.grounded_corpora import load_personachat
from density_train.evaluation.evaluators import GroundingSignals, HumanJudgments, KindAUCs, SelectionEvaluator
from density_train.evaluation.grounding_validation import GroundingSet
from density_train.evaluation.validation import DevJudgments
from density_train.loop.trainer import Trainer
from tests.train.data.test_grounded_corpora import personachat, with_sources  # noqa: F401 (a fixture)
from tests.train.loop.test_training import config_for, dialogue_data


@pytest.fixture
def trainer(backbone, tmp_path, personachat):  # noqa: F811
    train, valid = dialogue_data()
    half = len(train) // 2
    train = with_sources(train, ["dailydialog"] * half + ["personachat"] * (len(train) - half))
    grounded = [GroundingSet.from_dialogues(load_personachat(personachat, "validation"), 6, name="grounding_pc")]
    dev = DevJudgments(valid.contexts[:12], valid.responses[:12], np.linspace(0, 1, 12), "toy_dev")
    config = config_for(backbone, plain_fit_corpus="dailydialog", validation_kinds="echo,speaker", valid_fit_pairs=12)
    return Trainer(config, train, valid, tmp_path / "run", dev=dev, grounding_sets=grounded)


def test_the_metric_names_are_the_evaluations_keys_in_order_each_evaluator_with_its_primary(trainer):
    kinds = [type(evaluator) for evaluator in trainer.evaluators]
    assert kinds == [SelectionEvaluator, KindAUCs, HumanJudgments, GroundingSignals]
    metrics = trainer.evaluate()
    assert list(metrics) == trainer.metric_names()
    gaussians = trainer.gaussian_fits(trainer.outputs)
    assert list(gaussians) == ["", "plain/"]
    for evaluator in trainer.evaluators:
        trainer.model.eval()
        own = evaluator(trainer.outputs, gaussians)
        assert list(own) == evaluator.metric_names() and evaluator.primary_metric in own
        np.testing.assert_equal(own, {name: metrics[name] for name in own})  # the trainer's numbers (NaN too)
    primaries = [evaluator.primary_metric for evaluator in trainer.evaluators]
    assert primaries == ["recall_at_1", "auc_density/echo", "toy_dev_spearman", "grounding_pc/persona_spearman"]


def naive_auc(positive, negative) -> float:
    wins = [1.0 if p > n else 0.5 if p == n else 0.0 for p in positive for n in negative]
    return sum(wins) / len(wins)


def test_the_kind_aucs_and_recall_against_naive_loops_over_the_models_outputs(trainer):
    trainer.model.eval()
    valid = trainer.valid_data
    kinds = trainer.evaluator(KindAUCs)
    metrics = trainer.evaluate()
    for kind, negatives in kinds.kinds.items():
        golds = [float(trainer.outputs([c], [[r]])[1][0]) for c, r in zip(valid.contexts, valid.responses)]
        others = [float(trainer.outputs([c], [[n]])[1][0]) for c, n in zip(valid.contexts, negatives)]
        assert metrics[f"auc_f/{kind}"] == pytest.approx(naive_auc(golds, others), abs=1e-9)
    selection = trainer.evaluator(SelectionEvaluator)
    hits = 0
    for context, gold, negatives in zip(valid.contexts, valid.responses, selection.negatives):
        logits = trainer.outputs([context], [[gold, *negatives]])[1]
        hits += bool(logits[0] > logits[1:].max())
    assert metrics["recall_at_1"] == pytest.approx(hits / len(valid), abs=1e-6)
