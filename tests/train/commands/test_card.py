"""The model card states the run's recipe (negatives, layout, contrastive exclusions, selection) and its cost."""

import os
import re
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

from density_metric.encoding.pair_format import PairFormat
from density_train.commands.card import card_fields, compute_description, render_card
from density_train.config.recipe import TrainConfig

METRICS = {"recall_at_1": 0.5, "mrr": 0.6}


def fields_for(corpus="dailydialog", metrics=METRICS, compute="not recorded", **overrides) -> dict:
    """The card's fields for a run on ``corpus`` with the recipe's defaults, or ``overrides``."""
    config = TrainConfig(backbone="minilm", **overrides)
    return card_fields(
        config=config,
        corpus=corpus,
        name="x",
        repo_id="org/x",
        metrics=metrics,
        train_pairs=10,
        valid_pairs=5,
        command="python -m train train",
        compute=compute,
    )


def card(metrics=METRICS, compute="not recorded", **overrides) -> str:
    text = render_card(fields_for(metrics=metrics, compute=compute, **overrides))
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
    assert "final-layer `[CLS]` feature of `[CLS] context [SEP] response [SEP]`" in text
    assert "Compute: not recorded." in text


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
    assert "the mean of this model's final-layer states over the response's block" not in text  # feature token
    assert "the `[CLS]` that opens the response's block" in text


def test_the_card_states_the_compute_the_kept_step_and_the_pooled_feature():
    cost = {"steps": 9506, "chunks": 6, "wall_seconds": 9.25 * 3600, "eval_seconds": 0.5 * 3600, "evaluations": 6}
    compute = compute_description(
        cost, contexts_per_step=16, train_contexts=76053, hardware="Some CPU", precision="bf16"
    )
    assert compute == (
        "9,506 optimizer steps of 16 contexts (152,096 contexts, 2.00 passes over the 76,053 training contexts), "
        "9.2 hours of wall time in 6 chunks, each resumed from the last one's saved state; the last ran on Some CPU, "
        "in bf16 autocast; 6 validation runs took 0.5 hours of it"
    )
    one = dict(cost, chunks=1)
    assert "hours of wall time on Some CPU, in float32;" in compute_description(
        one, contexts_per_step=16, train_contexts=76053, hardware="Some CPU", precision="no"
    )
    metrics = {"step": 1584, "recall_at_1": 0.67, "mrr": 0.79, "zhao_dev_pearson": 50.126, "zhao_dev_spearman": 48.644}
    text = card(pair_format=PairFormat(layout="shared-context", pooling="mean"), metrics=metrics, compute=compute)
    assert f"Compute: {compute}." in text
    assert "The kept checkpoint is the one evaluated after step 1,584; there, DailyDialog-Zhao `dev`" in text
    assert "Pearson / Spearman x100 50.13 / 48.64." in text
    assert "the mean of this model's final-layer states over the response's block" in text


def test_the_wheel_ships_the_card_templates_where_the_card_code_finds_them(tmp_path):
    """An installed package (not a checkout) can write a card: the wheel holds hub_card/ inside
    density_train, and density_train.commands.card's TEMPLATE points there."""
    root = Path(__file__).resolve().parents[3]
    source = tmp_path / "source"  # a copy, so that the build leaves nothing in the checkout
    tracked = subprocess.run(["git", "ls-files"], cwd=root, capture_output=True, text=True, check=True).stdout
    for name in tracked.splitlines():
        if name.split("/")[0] in ("pyproject.toml", "README.md", "density_metric", "train", "hub_card"):
            (source / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(root / name, source / name)
    build = subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            "--no-deps",
            "--no-build-isolation",
            "-q",
            "-w",
            tmp_path / "wheel",
            ".",
        ],
        cwd=source,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert build.returncode == 0, build.stderr
    [wheel] = (tmp_path / "wheel").glob("*.whl")
    with zipfile.ZipFile(wheel) as archive:
        names = set(archive.namelist())
        assert {"density_train/hub_card/model_card.md", "density_train/hub_card/space_README.md"} <= names
        archive.extractall(tmp_path / "installed")
    code = "import density_train.commands.card as card; card.check_template(); print(card.TEMPLATE)"
    # cwd and PYTHONPATH: the unpacked wheel comes first, before the checkout and any editable install
    env = {**os.environ, "PYTHONPATH": str(tmp_path / "installed")}
    found = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, env=env, capture_output=True, text=True)
    assert found.returncode == 0, found.stderr
    assert Path(found.stdout.strip()) == tmp_path / "installed" / "density_train" / "hub_card" / "model_card.md"


def test_a_fine_tune_with_the_density_term_says_where_it_started_and_states_the_term():
    metrics = {"step": 600, "recall_at_1": 0.79, "mrr": 0.87, "auc_density/random": 0.9609, "auc_density/echo": 0.6688}
    text = card(
        metrics=metrics,
        init_from="density_metric/default",
        dropout=False,
        density_weight=4.0,
        density_margin=3.0,
        density_copies=4,
        copy_mix="echo:1,speaker:2,earlier:1",
        bank_size=2048,
        bank_shrinkage=0.1,
        anchor_weight=1.0,
    )
    assert "fine-tuned from the DEnsity checkpoint `density_metric/default`" in text
    assert "(its encoder, head and pair format)" in text
    assert "Plus 4 x the density term relu(3 + d(gold) - d(copy)) over 4 copies of the context per gold" in text
    assert "drawn from the mix `echo:1,speaker:2,earlier:1`" in text
    assert "the shrunk covariance 0.9 S + 0.1 tr(S)/d I of the last 2,048 gold features" in text
    assert "plus 1 x the Mahalanobis drift of the golds" in text
    assert "every dropout off." in text
    assert "gold against one negative of each kind per validation pair: random 0.961, echo 0.669." in text
    plain = card()
    assert "fine-tuned from" not in plain and "density term" not in plain and "AUC" not in plain


def test_a_fine_tune_names_its_starts_revision_and_the_validation_candidates(tiny_checkpoint, tmp_path):
    """A path such as density_metric/default names another model once the fine-tune is bundled there;
    the revision does not. Recall@1 is measured over --valid-negatives random candidates, not the
    training negatives."""
    from density_metric.checkpoint.sources import resolve_checkpoint

    start = tmp_path / "start"
    shutil.copytree(tiny_checkpoint, start)
    revision = resolve_checkpoint(start).revision
    assert re.fullmatch(r"sha256:[0-9a-f]{16}", revision)
    (start / "README.md").write_text("---\nlicense: mit\nbase_model: org/encoder\n---\n# the start\n")
    text = card(init_from=str(start), negatives=4, valid_negatives=15, epochs=1, max_steps_per_epoch=2400)
    assert "base_model: org/encoder " in text  # the start's encoder, not --backbone's default
    assert "Backbone: `org/encoder`, fine-tuned from" in text
    assert "1 round of at most 2,400 steps" in text
    assert f"fine-tuned from the DEnsity checkpoint `{start}` at revision `{revision}` (its encoder" in text
    assert "softmax over 1 gold and 4 " in text
    assert "Response selection (1 gold + 15 random negatives)" in text
    assert "pairs (1 gold + 15 random candidates)" in text
    shutil.rmtree(start)
    gone = card(init_from=str(start))
    assert f"fine-tuned from the DEnsity checkpoint `{start}` (its encoder" in gone
    assert f"base_model: {start} " in gone
    assert "(1 gold + 15 random candidates)" in card()  # the paper's 15 when --valid-negatives is not given


def test_the_card_states_each_corpus_licence_and_a_mix_carries_the_most_restrictive():
    """Self-dialogue is BSD-3-Clause and Chit-Chat MIT; a mix with DailyDialog inherits its non-commercial licence
    (a mix fell back to 'other' with a generic note, and DailyDialog's restriction was lost)."""
    assert fields_for("self_dialogue")["license"] == "bsd-3-clause"
    assert fields_for("chitchat")["license"] == "mit"
    mixed = fields_for("dailydialog:1,self_dialogue:0.5,chitchat:0.5")
    assert mixed["license"] == "cc-by-nc-sa-4.0"
    for words in ("non-commercial", "BSD-3-Clause", "MIT"):
        assert words in mixed["license_note"]
    assert "DailyDialog" in mixed["dataset_name"] and "Chit-Chat" in mixed["dataset_name"]
    permissive = fields_for("self_dialogue:1,chitchat:1")
    assert permissive["license"] == "other" and "BSD-3-Clause" in permissive["license_note"]
    assert fields_for("jsonl")["license"] == "other"
    # a corpus of unknown licence binds the mix with whatever it holds: nothing more restrictive can be claimed
    unknown = fields_for("dailydialog:1,jsonl:1")
    assert unknown["license"] == "other" and "non-commercial" in unknown["license_note"]


def test_the_cards_metadata_lists_every_corpus_of_a_mix():
    """The YAML's datasets: named the mix's first corpus alone."""
    mixed = fields_for("dailydialog:1,self_dialogue:0.5,chitchat:0.5")
    assert mixed["datasets"].splitlines() == [
        "- li2017dailydialog/daily_dialog",
        "- self_dialogue",
        "- chitchat-dataset",
    ]
    assert fields_for("dailydialog")["datasets"] == "- li2017dailydialog/daily_dialog"
    from huggingface_hub import ModelCard

    metadata = ModelCard(render_card(mixed)).data  # the YAML as the Hub reads it
    assert metadata.datasets == ["li2017dailydialog/daily_dialog", "self_dialogue", "chitchat-dataset"]
