"""The model card states the run's recipe: negatives, layout, contrastive exclusions, selection."""

import re

from density_metric.pair_format import PairFormat
from train.card import card_fields, render_card
from train.loop import TrainConfig

METRICS = {"recall_at_1": 0.5, "mrr": 0.6}


def card(**overrides) -> str:
    config = TrainConfig(backbone="minilm", **overrides)
    fields = card_fields(
        config=config,
        corpus="dailydialog",
        name="x",
        repo_id="org/x",
        metrics=METRICS,
        train_pairs=10,
        valid_pairs=5,
        command="python -m train train",
    )
    text = render_card(fields)
    assert not re.search(r"\$[a-z_]+", text)
    return " ".join(text.split())  # the template wraps lines


def test_the_default_card_describes_the_papers_recipe():
    text = card()
    assert "15 random negatives (utterances of the same split" in text
    assert "sampled once, seed 42" in text
    assert "the paper's layout" in text
    assert "stay out of it" not in text
    assert "16 contexts per step and process" in text
    assert "after each epoch, and the checkpoint with the best Recall@1 was kept" in text


def test_a_mix_run_card_names_the_mix_the_exclusions_the_layout_and_the_selection():
    text = card(
        negative_mix="random:8,echo:1,drop:1",
        contrastive_exclude="speaker,repeat,drop,shuffle",
        pair_format=PairFormat(layout="shared-context"),
        batch_size=4,
        grad_accum=4,
        evals_per_epoch=2,
        select_on="zhao_dev_spearman",
        hard_negatives_after=130,
    )
    assert "random negatives (utterances" not in text
    assert "negatives drawn from the mix `random:8,echo:1,drop:1`" in text
    assert "random negatives only for the first 130 steps" in text
    assert "the kinds speaker,repeat,drop,shuffle stay out of it" in text
    assert "the shared-context layout" in text
    assert "16 contexts per step and process" in text
    assert "2 times per epoch" in text
    assert "best Spearman correlation with the human ratings of DailyDialog-Zhao" in text
