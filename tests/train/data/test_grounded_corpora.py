"""The grounded corpora of issue 55 (train/data/grounded_corpora.py): PersonaChat's training subset and Topical-Chat's
validation conversations, their seeded splits, their grounding lines, the copies and negatives drawn from them, and
their held-out grounding signals (--grounded-valid) and the plain Gaussian (--plain-fit-corpus) in a training run."""

import ast
import json
import re
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest

from density_train.data.corpora import load_splits, parse_corpus_mix, response_pairs_with_dialogues
from density_train.data.examples import SelectionData
from density_train.data.grounded_corpora import (
    KNOWLEDGE_WORDS,
    load_personachat,
    load_topical_chat,
    read_personachat,
    read_topical_chat,
    shorten,
    turn_knowledge,
)
from density_train.evaluation.grounding_validation import GroundingSet
from density_train.evaluation.validation import DevJudgments
from density_train.negatives.mix import NegativeMix, draw_labelled_negatives


def persona_dialogue(n: int) -> dict:
    turns = []
    for i in range(6):
        speaker = "partner" if i % 2 == 0 else "persona_owner"
        turns.append({"speaker": speaker, "text": f" dialogue {n} turn {i} about hiking and dogs "})
    return {"id": f"p{n}", "persona_owner_persona": [f"i have {n} dogs.", "i like hiking."], "turns": turns}


def topical_conversation(n: int, flagged: bool = False) -> dict:
    lead = "First sentence about jazz. Second sentence about Miles Davis. " + "word " * 60
    knowledge = {
        agent: {f"FS{k}": {"entity": f"E{k}", "wiki_lead": f"{agent} FS{k}: {lead}"} for k in (1, 2, 3)}
        for agent in ("agent_1", "agent_2")
    }
    sources = [["FS1"], ["Personal Knowledge", "FS2"], ["AS1"], ["FS3", "FS1"], ["Personal Knowledge"]]
    turns = [
        {"speaker": f"agent_{1 + i % 2}", "text": f"conversation {n} turn {i}", "knowledge_source": source}
        for i, source in enumerate(sources)
    ]
    turns[3]["text"] = f"conversation {n} i love jazz"  # uses its line's words ("jazz")
    return {"id": f"t{n}", "overlaps_TopicalChat_USR": flagged, "knowledge": knowledge, "turns": turns}


def write_jsonl(path, rows) -> str:
    path.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")
    return str(path)


@pytest.fixture
def personachat(tmp_path):
    return write_jsonl(tmp_path / "personachat.jsonl", [persona_dialogue(n) for n in range(30)])


@pytest.fixture
def topical_chat(tmp_path):
    conversations = [topical_conversation(n) for n in range(30)] + [topical_conversation(99, flagged=True)]
    return write_jsonl(tmp_path / "topical.jsonl", conversations)


# --- PersonaChat --------------------------------------------------------------------------------


def test_personachat_puts_the_owners_persona_first_and_answers_only_with_the_owners_turns(personachat):
    rows = read_personachat(personachat)
    assert len(rows) == 30
    assert rows[3]["prefix"] == ["your persona: i have 3 dogs.", "your persona: i like hiking."]
    assert rows[3]["turns"][0] == "dialogue 3 turn 0 about hiking and dogs"  # stripped
    assert rows[3]["responses"] == [1, 3, 5]  # the persona owner's turns; the partner speaks first
    contexts, responses, _, _ = response_pairs_with_dialogues(load_personachat(personachat, "train"))
    assert all(context[:2] == [line for line in context if line.startswith("your persona:")] for context in contexts)
    assert all(
        response.endswith(
            ("turn 1 about hiking and dogs", "turn 3 about hiking and dogs", "turn 5 about hiking and dogs")
        )
        for response in responses
    )


@pytest.mark.parametrize(
    "line, problem",
    [
        ("{not json", "invalid JSON"),
        ('["a list"]', "expected an object"),
        ('{"turns": []}', "field 'persona_owner_persona'"),
        ('{"persona_owner_persona": ["x"], "turns": "no"}', "field 'turns'"),
        ('{"persona_owner_persona": ["x"], "turns": [{"speaker": "partner", "text": " "}]}', "'turns'[0].text"),
        ('{"persona_owner_persona": ["x"], "turns": [{"speaker": "me", "text": "hi"}]}', "'turns'[0].speaker"),
    ],
)
def test_a_malformed_personachat_line_names_the_file_the_line_and_the_field(tmp_path, line, problem):
    path = tmp_path / "bad.jsonl"
    path.write_text(json.dumps(persona_dialogue(0)) + "\n\n" + line + "\n", encoding="utf-8")
    with pytest.raises(ValueError, match=rf"bad.jsonl, line 3: .*{re.escape(problem)}"):
        read_personachat(path)


def test_the_split_is_seeded_by_dialogue_and_a_tenth_is_validation(personachat):
    train, valid = (load_personachat(personachat, split) for split in ("train", "validation"))
    assert len(valid) == 3 and len(train) == 27
    assert {tuple(r["turns"]) for r in train}.isdisjoint(tuple(r["turns"]) for r in valid)
    assert load_personachat(personachat, "validation")["turns"] == valid["turns"]
    with pytest.raises(ValueError, match="split"):
        load_personachat(personachat, "test")


# --- Topical-Chat -------------------------------------------------------------------------------


def test_shorten_keeps_whole_sentences_within_the_budget_else_the_first_words():
    assert shorten("  One two.\n Three  four. ") == "One two. Three four."
    assert shorten("One two. Three four five.", words=3) == "One two."
    assert shorten("one two three four five", words=3) == "one two three"  # no sentence fits: a hard cut


def test_a_turns_knowledge_is_the_speakers_first_cited_fact_section_shortened():
    conversation = topical_conversation(0)
    knowledge, turns = conversation["knowledge"], conversation["turns"]
    assert (
        turn_knowledge(knowledge, turns[1])
        == "agent_2 FS2: First sentence about jazz. Second sentence about Miles Davis."
    )
    assert turn_knowledge(knowledge, turns[3]).startswith("agent_2 FS3:")  # the first FS it lists, the speaker's
    assert turn_knowledge(knowledge, turns[2]) is None and turn_knowledge(knowledge, turns[4]) is None
    assert len(turn_knowledge(knowledge, turns[1]).split()) <= KNOWLEDGE_WORDS


def test_topical_chat_gives_one_row_per_response_with_its_knowledge_first_and_drops_flagged_ones(topical_chat):
    conversations = read_topical_chat(topical_chat)
    assert len(conversations) == 30  # the flagged conversation is left out
    rows = conversations[0]
    assert [row["responses"] for row in rows] == [[1], [2], [3], [4]]
    assert rows[1]["turns"] == [f"conversation 0 turn {i}" for i in range(3)]
    assert rows[2]["turns"][-1] == "conversation 0 i love jazz"
    assert [len(row["prefix"]) for row in rows] == [1, 0, 1, 0]
    contexts, responses, _, _ = response_pairs_with_dialogues(load_topical_chat(topical_chat, "train"))
    assert all("conversation 99" not in response for response in responses)
    grounded = [context for context in contexts if context[0].startswith("agent_")]
    assert len(grounded) == len(contexts) // 2  # turns 1 and 3 of each conversation cite a fact section
    assert all(turn.startswith("conversation") for context in contexts for turn in context[1:])


def test_a_topical_chat_conversation_is_wholly_in_one_split(topical_chat):
    train, valid = (load_topical_chat(topical_chat, split) for split in ("train", "validation"))
    ids = lambda data: {row["turns"][0] for row in data}  # noqa: E731  (turn 0 names the conversation)
    assert len(ids(valid)) == 3 and len(ids(train)) == 27 and ids(train).isdisjoint(ids(valid))


def test_a_topical_chat_turn_citing_a_missing_section_names_the_line_and_field(tmp_path):
    conversation = topical_conversation(0)
    del conversation["knowledge"]["agent_2"]["FS2"]
    path = write_jsonl(tmp_path / "tc.jsonl", [conversation])
    with pytest.raises(ValueError, match=r"tc.jsonl, line 1: field 'turns'\[1\] cites knowledge.agent_2.FS2.wiki_lead"):
        read_topical_chat(path)
    conversation = topical_conversation(0)
    conversation["overlaps_TopicalChat_USR"] = "no"
    with pytest.raises(ValueError, match="line 1: field 'overlaps_TopicalChat_USR'"):
        read_topical_chat(write_jsonl(tmp_path / "tc.jsonl", [conversation]))


# --- negatives and the mix ----------------------------------------------------------------------


def test_copies_and_random_negatives_never_use_a_grounding_line(personachat, topical_chat):
    for dialogues in (load_personachat(personachat, "train"), load_topical_chat(topical_chat, "train")):
        data = SelectionData.from_pairs(*response_pairs_with_dialogues(dialogues))
        lines = {line for context, i in zip(data.contexts, data.turn_indices) for line in context[: len(context) - i]}
        assert lines and lines.isdisjoint(data.pool)
        mix = NegativeMix.parse("random:1,echo:1,earlier:1,span:1,speaker:1")
        drawn = draw_labelled_negatives(data, range(len(data)), 5, mix, seed=0, epoch=0)
        for row in drawn:
            for _, text in row:
                assert not any(line in text for line in lines)


def test_the_grounded_corpora_mix_with_dailydialog_and_keep_their_own_pools(tmp_path, personachat, topical_chat):
    dailydialog = tmp_path / "dd"
    dailydialog.mkdir()
    for split in ("train", "validation", "test"):
        lines = [f"{split} {n} hello . __eou__ hi there . __eou__ how are you ? __eou__" for n in range(20)]
        (dailydialog / f"dialogues_{split}.txt").write_text("\n".join(lines) + "\n")
    assert parse_corpus_mix("dailydialog:2,personachat:1,topical_chat:1")[1:] == (
        ("personachat", 1.0),
        ("topical_chat", 1.0),
    )
    from density_train.data.corpora import load_corpus

    args = SimpleNamespace(
        corpus="dailydialog:1,personachat:1,topical_chat:1",
        valid_corpus="dailydialog",
        data_dir=str(dailydialog),
        dailydialog_train="official",
        personachat=personachat,
        topical_chat=topical_chat,
        limit=0,
    )
    train, valid = load_corpus(args, with_dialogues=True)
    data = SelectionData.from_pairs(*train)
    assert set(data.sources) == {"dailydialog", "personachat", "topical_chat"} and set(valid[4]) == {"dailydialog"}
    personachat_row = data.sources.index("personachat")
    assert all("dialogue" in text for text in data.pool_of(personachat_row))
    args.corpus = "personachat"
    args.personachat = None
    with pytest.raises(ValueError, match="--corpus personachat needs --personachat"):
        load_corpus(args)
    assert len(load_splits("topical_chat", args)[1]) == 3 * 4


# --- the held-out grounding signal --------------------------------------------------------------


def test_the_grounding_set_of_a_corpus_reads_its_lines_from_the_prefix_and_only_grounded_golds(topical_chat):
    valid = load_topical_chat(topical_chat, "validation")
    data = GroundingSet.from_dialogues(valid, n=100, distractors=2, name="grounding_topical_chat")
    assert len(data) == 3 * 2  # of 4 responses per conversation, turns 1 and 3 cite a fact section
    assert all(not context[0].startswith("conversation") for context in data.contexts)
    assert all(echo == context[-1] for echo, context in zip(data.echoes, data.contexts))
    # Content words of "conversation N i love jazz": conversation, love, jazz (and N from 10 on); only "jazz" is
    # in the line. "conversation N turn 1" shares none.
    for gold, overlap in zip(data.golds, data.persona):
        number = int(gold.split()[1])
        assert overlap == pytest.approx((1 / 3 if number < 10 else 1 / 4) if "jazz" in gold else 0.0)
    assert data.metric_names()[0] == "grounding_topical_chat/persona_spearman"


# --- in a training run: --grounded-valid and --plain-fit-corpus -------------------------------


def with_sources(data: SelectionData, sources: list[str]) -> SelectionData:
    return SelectionData.from_pairs(data.contexts, data.responses, data.dialogues, data.turn_indices, sources)


def test_every_evaluation_logs_each_grounded_corpus_and_the_plain_gaussian(backbone, tmp_path, personachat):
    from density_train.loop.trainer import Trainer
    from tests.train.loop.test_training import config_for, dialogue_data, read_log

    train, valid = dialogue_data()
    half = len(train) // 2
    train = with_sources(train, ["dailydialog"] * half + ["personachat"] * (len(train) - half))
    grounded = [
        GroundingSet.from_dialogues(load_personachat(personachat, "validation"), 6, name="grounding_personachat")
    ]
    config = config_for(backbone, plain_fit_corpus="dailydialog", validation_kinds="echo", valid_fit_pairs=12)
    trainer = Trainer(config, train, valid, tmp_path / "run", grounding_sets=grounded)
    rows = trainer.gaussian_fits.rows
    assert all(train.sources[row] == "dailydialog" for row in rows["plain/"])
    assert len(rows["plain/"]) == 12 and set(rows[""]) != set(rows["plain/"])
    names = set(trainer.metric_names())
    assert {"grounding_personachat/persona_spearman", "plain/grounding_personachat/echo_win"} <= names
    assert {"plain/auc_density/echo", "plain/gold_overlap_spearman"} <= names and "plain/recall_at_1" not in names
    trainer.train()
    evals = [record for record in read_log(tmp_path / "run") if record["type"] == "eval"]
    assert evals and all(names <= set(record) for record in evals)
    # Two Gaussians of different golds: the same features, other distances.
    assert any(r["auc_density/echo"] != r["plain/auc_density/echo"] for r in evals)


def test_the_plain_gaussian_of_a_one_corpus_run_is_its_own(backbone, tmp_path):
    from density_train.loop.trainer import Trainer
    from tests.train.loop.test_training import config_for, dialogue_data

    train, valid = dialogue_data()
    train = with_sources(train, ["dailydialog"] * len(train))
    config = config_for(backbone, plain_fit_corpus="dailydialog", validation_kinds="echo,speaker", valid_fit_pairs=12)
    dev = DevJudgments(valid.contexts[:12], valid.responses[:12], np.linspace(0, 1, 12), "toy_dev")
    trainer = Trainer(config, train, valid, tmp_path / "run", dev=dev)
    metrics = trainer.evaluate()
    assert metrics["auc_density/echo"] == metrics["plain/auc_density/echo"]
    assert metrics["auc_density/speaker"] == metrics["plain/auc_density/speaker"]
    assert metrics["toy_dev_spearman"] == metrics["plain/toy_dev_spearman"]
    # How people follow the overlap involves no Gaussian: logged once, not again under plain/.
    assert "toy_dev_human_overlap_spearman" in metrics and "plain/toy_dev_human_overlap_spearman" not in metrics
    assert set(trainer.metric_names()) <= set(metrics)
    assert {name for name in metrics if "/" in name or "toy_dev" in name} <= set(trainer.metric_names())


def test_the_plain_gaussian_and_grounded_valid_name_a_bad_value(backbone, tmp_path):
    from density_train.config.recipe import TrainConfig
    from density_train.loop.trainer import Trainer
    from tests.train.loop.test_training import config_for, dialogue_data

    with pytest.raises(ValueError, match="--grounded-valid: \\['convai2'\\] are not grounded corpora"):
        TrainConfig(grounded_valid="personachat,convai2")
    train, valid = dialogue_data()
    with pytest.raises(ValueError, match="--plain-fit-corpus dailydialog: fewer than 2 training pairs"):
        Trainer(config_for(backbone, plain_fit_corpus="dailydialog"), train, valid, tmp_path / "run")


# --- --overlap-source lines: the density term's fixed rows from golds that use their lines -------


def test_line_use_is_the_content_overlap_with_the_context_lines_only():
    from density_train.evaluation.grounding_validation import line_use

    contexts = [["your persona: i love hiking.", "your persona: i have two dogs.", "hello there", "do you hike?"]] * 3
    replies = ["hiking with my dogs", "hello there friend", "hiking"]
    # content words: (hiking, dogs) both in the lines: 1.0; (hello, friend) none (the turns do not count): 0.0;
    # with no line counted, 0.0 whatever the words.
    np.testing.assert_array_equal(line_use(contexts, replies, [2, 2, 0]), [1.0, 0.0, 0.0])


def test_overlap_source_lines_draws_the_fixed_rows_from_golds_that_use_their_lines(backbone, tmp_path, personachat):
    from density_train.config.recipe import TrainConfig
    from density_train.loop.trainer import Trainer
    from tests.train.loop.test_training import config_for, dialogue_data

    plain, valid = dialogue_data()
    grounded = SelectionData.from_pairs(*response_pairs_with_dialogues(load_personachat(personachat, "train")))
    half = len(grounded.responses) // 2  # half of the grounded golds stop using their lines
    responses = [f"reply {i} about nothing" if i < half else text for i, text in enumerate(grounded.responses)]
    dialogues = [list(d) for d in grounded.dialogues]
    for i, dialogue in enumerate(dialogues):
        dialogue[grounded.turn_indices[i]] = responses[i]
    train = SelectionData.from_pairs(
        plain.contexts + grounded.contexts,
        plain.responses + responses,
        plain.dialogues + dialogues,
        plain.turn_indices + grounded.turn_indices,
        ["dailydialog"] * len(plain) + ["personachat"] * len(responses),
    )
    assert train.line_counts() == [0] * len(plain) + [2] * len(responses)
    config = config_for(
        backbone,
        density_weight=1.0,
        dropout=False,
        anchor_weight=0,
        overlap_rows=2,
        overlap_source="lines",
        valid_fit_pairs=12,
    )
    trainer = Trainer(config, train, valid, tmp_path / "run")
    expected = [len(plain) + i for i in range(half, len(responses))]  # "... about hiking and dogs": both in the lines
    assert trainer.overlap_pool.tolist() == expected
    with pytest.raises(ValueError, match="overlap_source must be one of"):
        TrainConfig(overlap_source="persona")
    config = config_for(
        backbone, density_weight=1.0, dropout=False, anchor_weight=0, overlap_rows=2, overlap_source="lines"
    )
    with pytest.raises(ValueError, match="--overlap-source lines: no training gold uses its grounding lines"):
        Trainer(config, plain, valid, tmp_path / "other")


def train_modules_imported_by(name: str) -> set[str]:
    """The modules of train/data/ that train/data/<name>.py imports anywhere."""
    path = Path(__file__).resolve().parents[3] / "train" / "data" / f"{name}.py"
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.level == 1 and node.module:
            found.add(node.module.split(".")[0])
        elif isinstance(node, ast.ImportFrom) and (node.module or "").startswith("density_train.data."):
            found.add(node.module.split(".")[2])
    return found


def test_the_grounded_corpora_and_the_plain_ones_do_not_import_each_other():
    """density_train.data.corpora reads the grounded corpora for --corpus; what both need lives in density_train.data.rows."""
    assert "grounded_corpora" in train_modules_imported_by("corpora")
    assert "corpora" not in train_modules_imported_by("grounded_corpora")
    assert not {"corpora", "grounded_corpora"} & train_modules_imported_by("rows")
