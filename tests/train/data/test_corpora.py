"""Corpora as datasets, training pairs, and negatives."""

import json
from pathlib import Path

import pytest

from density_train.data.corpora import (
    load_convai2,
    load_dailydialog,
    load_hub_dialogues,
    load_jsonl_dialogues,
    response_pairs,
    response_pairs_with_dialogues,
)
from density_train.data.examples import SelectionData, epoch_negatives

DATA = Path(__file__).resolve().parents[4] / "shared" / "data"

CONVAI2 = """1 your persona: i like dogs.
2 your persona: i am a nurse.
3 hi how are you ?\tgood , just walked my dog .
4 what breed ?\ta poodle .
1 your persona: i sing.
2 hello\thi there , i just sang .
"""


def test_convai2_persona_is_prefix_and_only_self_turns_are_responses(tmp_path):
    (tmp_path / "c.txt").write_text(CONVAI2)
    corpus = load_convai2(tmp_path / "c.txt")
    assert len(corpus) == 2
    contexts, responses = response_pairs(corpus)
    assert responses == ["good , just walked my dog .", "a poodle .", "hi there , i just sang ."]
    assert contexts[1] == [
        "your persona: i like dogs.",
        "your persona: i am a nurse.",
        "hi how are you ?",
        "good , just walked my dog .",
        "what breed ?",
    ]
    assert contexts[2] == ["your persona: i sing.", "hello"]


def test_pairs_with_dialogues_add_each_pairs_turns_and_gold_index_without_the_prefix(tmp_path):
    (tmp_path / "c.txt").write_text(CONVAI2)
    corpus = load_convai2(tmp_path / "c.txt")
    contexts, responses, turns, indices = response_pairs_with_dialogues(corpus)
    assert (contexts, responses) == response_pairs(corpus)
    assert indices == [1, 3, 1]
    assert turns[0] == ["hi how are you ?", "good , just walked my dog .", "what breed ?", "a poodle ."]
    assert turns[0] is turns[1]  # one list per dialogue
    assert all(t[i] == r for t, i, r in zip(turns, indices, responses))
    plain = response_pairs_with_dialogues([["a", "b", "c"]])
    assert plain == ([["a"], ["a", "b"]], ["b", "c"], [["a", "b", "c"], ["a", "b", "c"]], [1, 2])
    data = SelectionData.from_pairs(*response_pairs_with_dialogues(corpus))
    assert data.turn_indices == indices
    # With the dialogues known, the pool of random negatives holds the utterances only, never a persona line.
    utterances = {turn for dialogue in turns for turn in dialogue}
    assert data.pool == sorted(utterances)
    assert set(SelectionData.from_pairs(*response_pairs(corpus)).pool) - utterances == {
        line for context in contexts for line in context if line.startswith("your persona:")
    }
    plain_data = SelectionData.from_pairs(*plain)
    assert plain_data.pool == SelectionData.from_pairs(*plain[:2]).pool == ["a", "b", "c"]


def test_malformed_convai2_line_names_file_and_line(tmp_path):
    (tmp_path / "c.txt").write_text("1 your persona: x.\n2 no tab here\n")
    with pytest.raises(ValueError, match=r"c.txt, line 2: expected 'partner<TAB>self'"):
        load_convai2(tmp_path / "c.txt")


@pytest.mark.parametrize("corpus", ["dailydialog", "convai2"])
def test_a_text_corpus_that_is_not_utf8_is_refused_naming_the_file(tmp_path, corpus):
    path, text = {
        "dailydialog": (tmp_path / "dialogues_train.txt", "caf\u00e9 ? __eou__ yes . __eou__\n"),
        "convai2": (tmp_path / "c.txt", CONVAI2.replace("poodle", "caf\u00e9")),
    }[corpus]
    load = {"dailydialog": lambda: load_dailydialog(tmp_path, "train"), "convai2": lambda: load_convai2(path)}[corpus]
    path.write_bytes(text.encode("latin-1"))
    with pytest.raises(ValueError, match=f"{path.name}: not UTF-8 text"):
        load()
    if corpus == "dailydialog":  # a byte order mark is no text of the first turn
        path.write_bytes(b"\xef\xbb\xbf" + text.encode())
        assert response_pairs(load())[0][0] == ["caf\u00e9 ?"]


def test_jsonl_dialogues_make_every_later_turn_a_response(tmp_path):
    (tmp_path / "d.jsonl").write_text(json.dumps(["a", "b", "c"]) + "\n" + json.dumps({"turns": ["x", "y"]}) + "\n")
    contexts, responses = response_pairs(load_jsonl_dialogues(tmp_path / "d.jsonl"))
    assert responses == ["b", "c", "y"] and contexts == [["a"], ["a", "b"], ["x"]]
    (tmp_path / "bad.jsonl").write_text(json.dumps({"turns": "not a list"}) + "\n")
    with pytest.raises(ValueError, match="bad.jsonl, line 1"):
        load_jsonl_dialogues(tmp_path / "bad.jsonl")


@pytest.mark.parametrize("lines", [[], [["only one"], []]], ids=["empty file", "one-turn dialogues"])
def test_a_jsonl_file_without_a_pair_is_refused_naming_it(tmp_path, lines):
    """An empty file failed inside datasets ("Keys mismatch ..."), one of one-turn dialogues as "0 training pairs
    give no full step", naming neither the file nor the cause."""
    (tmp_path / "d.jsonl").write_text("".join(json.dumps(turns) + "\n" for turns in lines))
    with pytest.raises(ValueError, match=rf"d.jsonl: no dialogue of 2 or more turns \({len(lines)} dialogues\)"):
        load_jsonl_dialogues(tmp_path / "d.jsonl")
    (tmp_path / "d.jsonl").write_text(json.dumps(["a"]) + "\n" + json.dumps(["x", "y"]) + "\n")
    assert response_pairs(load_jsonl_dialogues(tmp_path / "d.jsonl"))[1] == ["y"]  # one-turn ones among others


def test_blank_jsonl_turns_are_dropped_and_others_stripped(tmp_path):
    """A blank turn was kept as a turn: a reply of no words to train on, and a context turn of none."""
    (tmp_path / "d.jsonl").write_text(json.dumps(["a ", "   ", "b", ""]) + "\n" + json.dumps(["x", " \t"]) + "\n")
    contexts, responses = response_pairs(load_jsonl_dialogues(tmp_path / "d.jsonl"))
    assert responses == ["b"] and contexts == [["a"]]


def test_a_jsonl_corpus_that_is_not_utf8_is_refused_naming_it(tmp_path):
    (tmp_path / "d.jsonl").write_bytes(b'["caf\xe9", "ok"]\n')
    with pytest.raises(ValueError, match=r"d.jsonl: not UTF-8 text"):
        load_jsonl_dialogues(tmp_path / "d.jsonl")
    (tmp_path / "d.jsonl").write_bytes(b'\xef\xbb\xbf["hi", "ok"]\n')  # a byte order mark is no text
    assert response_pairs(load_jsonl_dialogues(tmp_path / "d.jsonl")) == ([["hi"]], ["ok"])


def test_hub_style_dataset_folder_loads_through_datasets(tmp_path):
    for split in ("train", "validation"):
        (tmp_path / f"{split}.jsonl").write_text(json.dumps({"turns": [f"{split} a", f"{split} b"]}) + "\n")
    assert response_pairs(load_hub_dialogues(str(tmp_path), "validation"))[1] == ["validation b"]


@pytest.mark.skipif(not (DATA / "dailydialog").is_dir(), reason="shared data not beside the checkout")
def test_dailydialog_and_convai2_pair_counts_match_their_sources():
    assert len(response_pairs(load_dailydialog(DATA / "dailydialog", "validation"))[1]) == 7_069
    assert len(response_pairs(load_convai2(DATA / "convai2" / "valid_self_original_no_cands.txt"))[1]) == 7_801


def test_negatives_never_include_the_gold_or_a_context_turn_and_are_seeded():
    contexts = [["u1", "u2"], ["u3"], ["u4", "u5", "u6"]] * 5
    responses = ["r1", "r2", "r3"] * 5
    data = SelectionData.from_pairs(contexts, responses)
    negatives = data.negatives(3, seed=42)
    for context, gold, chosen in zip(contexts, responses, negatives):
        assert len(chosen) == len(set(chosen)) == 3
        assert gold not in chosen and not set(context) & set(chosen)
    assert negatives == data.negatives(3, seed=42)
    assert epoch_negatives(data, 3, 42, epoch=1, resample=False) == negatives
    assert epoch_negatives(data, 3, 42, epoch=1, resample=True) != negatives


def test_train_cli_names_the_missing_corpus_option(train_cli_error):
    assert "--corpus dailydialog needs --data-dir" in train_cli_error(["fit", "--out", "unused"])
    assert "--corpus jsonl needs --valid-file" in train_cli_error(
        ["train", "--corpus", "jsonl", "--train-file", "a.jsonl", "--out", "unused"]
    )


# --- the corpora of issue 50: clean DailyDialog, Self-dialogue, Chit-Chat, the weighted mix ------------------


def write_dailydialog(folder, train, validation, test):
    """DailyDialog files (``__eou__`` after every turn) from lists of turns."""
    for split, dialogues in (("train", train), ("validation", validation), ("test", test)):
        lines = ["".join(f"{turn} __eou__ " for turn in turns) for turns in dialogues]
        (folder / f"dialogues_{split}.txt").write_text("\n".join(lines) + "\n", encoding="utf-8")


def corpus_args(**flags):
    import argparse

    from density_train.data.corpora import add_corpus_arguments

    parser = argparse.ArgumentParser()
    add_corpus_arguments(parser)
    argv = [str(part) for name, value in flags.items() for part in ("--" + name.replace("_", "-"), value)]
    return parser.parse_args(argv)


def test_clean_dailydialog_train_drops_dialogues_of_validation_or_test_case_and_spacing_aside(tmp_path):
    from density_train.data.corpora import clean_dailydialog_train

    train = [["Hi .", "Hello ."], ["Thank you.How much ?", "Ten ."], ["Keep me .", "Sure ."], ["A b", "C d"]]
    validation = [["hi  .", "HELLO ."]]  # case and spacing differ
    test = [["Thank you . How much ?", "Ten ."], ["A", "b C d"]]  # spacing inside a turn, and a turn boundary
    write_dailydialog(tmp_path, train, validation, test)
    kept, dropped = clean_dailydialog_train(tmp_path)
    assert dropped == 3
    assert [row["turns"] for row in kept] == [["Keep me .", "Sure ."]]


def test_load_corpus_trains_on_clean_dailydialog_by_default_and_logs_the_count(tmp_path, caplog):
    from density_train.data.corpora import load_corpus

    write_dailydialog(tmp_path, [["a", "b"], ["c", "d"]], [["c", "d"]], [["e", "f"]])
    with caplog.at_level("INFO", logger="density_train.data.corpora"):
        (contexts, responses), _ = load_corpus(corpus_args(data_dir=tmp_path))
    assert responses == ["b"]
    assert "1 dialogues left out" in caplog.text
    (_, responses), _ = load_corpus(corpus_args(data_dir=tmp_path, dailydialog_train="official"))
    assert responses == ["b", "d"]


@pytest.mark.skipif(not (DATA / "dailydialog").is_dir(), reason="shared data not beside the checkout")
def test_clean_dailydialog_train_leaves_out_258_dialogues_of_the_published_files():
    from density_train.data.corpora import clean_dailydialog_train

    kept, dropped = clean_dailydialog_train(DATA / "dailydialog")
    assert (len(kept), dropped) == (10_860, 258)


def test_validation_split_is_a_seeded_five_percent_by_dialogue():
    from density_train.data.corpora import validation_split

    chosen = validation_split(1000)
    assert len(chosen) == 50 and len(set(chosen.tolist())) == 50
    assert (chosen == validation_split(1000)).all() and not (chosen == validation_split(1000, seed=1)).all()
    assert len(validation_split(3)) == 1  # at least one dialogue, and some left to train on


def test_self_dialogue_turns_split_into_disjoint_train_and_validation(tmp_path):
    from density_train.data.corpora import load_self_dialogue, validation_split

    lines = [json.dumps({"id": str(i), "topic": "music", "turns": [f"q{i}", f"a{i}", f"b{i}"]}) for i in range(40)]
    lines.append(json.dumps({"id": "short", "topic": "music", "turns": ["alone"]}))  # fewer than 2 turns: dropped
    (tmp_path / "dialogues.jsonl").write_text("\n".join(lines) + "\n")
    train, valid = (load_self_dialogue(tmp_path, split) for split in ("train", "validation"))
    assert len(train) + len(valid) == 40 and len(valid) == 2
    assert [row["turns"][0] for row in valid] == [f"q{i}" for i in validation_split(40)]
    first = min(set(range(40)) - set(validation_split(40).tolist()))
    assert train[0] == {"turns": [f"q{first}", f"a{first}", f"b{first}"], "prefix": [], "responses": [1, 2]}
    (tmp_path / "bad.jsonl").write_text(json.dumps({"id": "x", "turns": "no list"}) + "\n")
    with pytest.raises(ValueError, match="bad.jsonl, line 1"):
        load_self_dialogue(tmp_path / "bad.jsonl", "train")


def chitchat_message(text, sender):
    return {"text": text, "timestamp": "2018-05-02T19:38:15Z", "sender": sender}


def test_chitchat_joins_each_persons_consecutive_messages_and_keeps_two_sided_chats(tmp_path):
    from density_train.data.corpora import read_chitchat

    data = {
        "two": {
            "messages": [
                [chitchat_message("Hello", "a"), chitchat_message("How are you?", "a")],
                [chitchat_message("fine", "b")],
                [chitchat_message("  ", "a")],  # empty: dropped, so b's next message joins b's turn
                [chitchat_message("and you?", "b")],
                [chitchat_message("good", "a")],
            ]
        },
        "one-sided": {"messages": [[chitchat_message("anyone?", "a")], [chitchat_message("hello?", "a")]]},
    }
    (tmp_path / "dataset.json").write_text(json.dumps(data))
    assert read_chitchat(tmp_path / "dataset.json") == [["Hello How are you?", "fine and you?", "good"]]


def test_chitchat_is_read_from_the_installed_package():
    pytest.importorskip("chitchat_dataset")
    from density_train.data.corpora import read_chitchat

    dialogues = read_chitchat()
    # 4,018 chats have messages from both people; in one of them the second person's only message is empty
    assert len(dialogues) == 4_017
    assert all(len(turns) >= 2 for turns in dialogues)


@pytest.mark.parametrize(
    "text, message",
    [
        ("dailydialog:0", "must be a positive number"),
        ("dailydialog:x", "must be a positive number"),
        ("opensubtitles", "unknown corpus"),
        ("chitchat,chitchat:2", "given twice"),
        ("convai2,jsonl", "mix at most one"),
    ],
)
def test_a_bad_corpus_mix_is_an_error_naming_the_flag(text, message):
    from density_train.data.corpora import parse_corpus_mix

    with pytest.raises(ValueError, match=f"--corpus '{text}'.*{message}"):
        parse_corpus_mix(text)


def test_parse_corpus_mix_reads_weights_and_bare_names():
    from density_train.data.corpora import parse_corpus_mix

    assert parse_corpus_mix("dailydialog") == (("dailydialog", 1.0),)
    assert parse_corpus_mix("dailydialog:1, self_dialogue:0.5,chitchat") == (
        ("dailydialog", 1.0),
        ("self_dialogue", 0.5),
        ("chitchat", 1.0),
    )


def test_a_mix_gives_each_corpus_its_share_of_pairs_without_repeating_a_dialogue():
    from density_train.data.corpora import every_turn, mix_dialogues
    from density_train.data.rows import corpus_dataset as dataset

    big = dataset([every_turn([f"b{i}", f"b{i}x"]) for i in range(300)])  # 300 pairs
    small = dataset([every_turn([f"s{i}", f"s{i}x", f"s{i}y"]) for i in range(50)])  # 100 pairs
    mixed, sources = mix_dialogues([("big", 1.0, big), ("small", 0.5, small)])
    pairs = {"big": 0, "small": 0}
    for row, source in zip(mixed, sources):
        assert row["turns"][0][0] == source[0]
        pairs[source] += len(row["responses"])
    assert pairs == {"big": 200, "small": 100}  # small sets the size: all of it, and twice as much of big
    assert len({tuple(row["turns"]) for row in mixed}) == len(mixed)
    assert sources[:20].count("small") not in (0, 20)  # interleaved, not one corpus after the other
    again, _ = mix_dialogues([("big", 1.0, big), ("small", 0.5, small)])
    assert again["turns"] == mixed["turns"]
    alone, names = mix_dialogues([("big", 3.0, big)])
    assert alone["turns"] == big["turns"] and set(names) == {"big"}


def test_load_corpus_with_dialogues_names_each_pairs_corpus(tmp_path):
    from density_train.data.corpora import load_corpus

    write_dailydialog(tmp_path, [[f"d{i}", f"e{i}"] for i in range(40)], [["v", "w"]], [["t", "u"]])
    lines = [json.dumps({"id": str(i), "turns": [f"s{i}", f"t{i}"]}) for i in range(200)]
    (tmp_path / "dialogues.jsonl").write_text("\n".join(lines) + "\n")
    args = corpus_args(corpus="dailydialog:1,self_dialogue:1", data_dir=tmp_path, self_dialogue=tmp_path)
    train, valid = load_corpus(args, with_dialogues=True)
    contexts, responses, turns, indices, sources = train
    assert sources.count("dailydialog") == sources.count("self_dialogue") == 40
    assert all(r[0] == {"dailydialog": "e", "self_dialogue": "t"}[s] for r, s in zip(responses, sources))
    assert len(load_corpus(args)[0]) == 2  # without dialogues: (contexts, responses) as before


def test_valid_corpus_sets_the_validation_pairs_apart_from_the_training_mix(tmp_path):
    from density_train.data.corpora import load_corpus

    write_dailydialog(tmp_path, [[f"d{i}", f"e{i}"] for i in range(40)], [["v", "w"], ["x", "y"]], [["t", "u"]])
    lines = [json.dumps({"id": str(i), "turns": [f"s{i}", f"t{i}"]}) for i in range(200)]
    (tmp_path / "dialogues.jsonl").write_text("\n".join(lines) + "\n")
    flags = dict(corpus="dailydialog:1,self_dialogue:1", data_dir=tmp_path, self_dialogue=tmp_path)
    mixed_train, mixed_valid = load_corpus(corpus_args(**flags), with_dialogues=True)
    assert set(mixed_valid[4]) == {"dailydialog", "self_dialogue"}  # without the flag: the mix's own validation
    train, valid = load_corpus(corpus_args(**flags, valid_corpus="dailydialog"), with_dialogues=True)
    assert train == mixed_train  # the training pairs do not change
    assert valid[1] == ["w", "y"] and set(valid[4]) == {"dailydialog"}
    with pytest.raises(ValueError, match="--valid-corpus self_dialogue needs --self-dialogue"):
        load_corpus(corpus_args(corpus="dailydialog", data_dir=tmp_path, valid_corpus="self_dialogue"))
    with pytest.raises(ValueError, match="--valid-corpus 'nope': unknown corpus"):
        load_corpus(corpus_args(corpus="dailydialog", data_dir=tmp_path, valid_corpus="nope"))


def test_the_train_command_trains_on_a_weighted_corpus_mix(backbone, tmp_path):
    from density_train.commands import main
    from tests.train.loop.test_training import synthetic_dialogues

    dialogues = synthetic_dialogues(24, 0)
    write_dailydialog(tmp_path, dialogues[:12], dialogues[12:14], [["x", "y"]])
    lines = [json.dumps({"id": str(i), "turns": [t.upper() for t in turns]}) for i, turns in enumerate(dialogues)]
    (tmp_path / "dialogues.jsonl").write_text("\n".join(lines * 4) + "\n")
    out = tmp_path / "run"
    argv = ["train", "--corpus", "dailydialog:1,self_dialogue:1", "--data-dir", tmp_path, "--self-dialogue", tmp_path]
    argv += ["--backbone", backbone, "--out", out, "--negatives", "3", "--epochs", "1", "--batch-size", "4"]
    argv += [
        "--max-length",
        "48",
        "--max-response-length",
        "16",
        "--validation-kinds",
        "",
        "--max-steps-per-epoch",
        "2",
    ]
    main([str(arg) for arg in argv])
    assert (out / "checkpoint" / "density_gaussian.safetensors").is_file()
    state = json.loads((out / "state" / "trainer_state.json").read_text())
    assert state["data"]["train_pairs"] == 2 * 12 * 3  # each corpus half of the pairs: all 12 DailyDialog dialogues


def test_a_mix_with_a_corpus_without_pairs_is_an_error_naming_it():
    """A corpus with no pairs in a split made the mix's size 0, and every other corpus still gave one dialogue."""
    from density_train.data.corpora import every_turn, mix_dialogues
    from density_train.data.rows import corpus_dataset as dataset

    full = dataset([every_turn([f"b{i}", f"b{i}x"]) for i in range(10)])
    empty = dataset([every_turn(["only one turn"])])  # a dialogue, but no response turn
    with pytest.raises(ValueError, match="'empty' has no pairs"):
        mix_dialogues([("full", 1.0, full), ("empty", 1.0, empty)])


def test_hub_dialogues_clean_their_turns_as_jsonl_ones(tmp_path):
    import datasets

    datasets.Dataset.from_dict({"turns": [["a ", " ", "b"]]}).to_json(tmp_path / "train.jsonl")
    hub = response_pairs(load_hub_dialogues("json", "train", data_files=str(tmp_path / "train.jsonl")))
    (tmp_path / "d.jsonl").write_text(json.dumps(["a ", " ", "b"]) + "\n")
    assert hub == response_pairs(load_jsonl_dialogues(tmp_path / "d.jsonl")) == ([["a"]], ["b"])
