"""Human-judgment sets (train/data/judgments.py) and --dev-judgments: a bad row is one error naming its file and
line before anything trains (a missing 'score_density' was a KeyError traceback, a number as a reply an
AttributeError after a whole epoch, a null rating NaN correlations in the log)."""

import json

import pytest

from density_train.commands.train import load_dev_judgments
from density_train.data.judgments import load_sets

GOOD = {"context": ["hi"], "response": "hello", "score": 3.0, "score_density": 0.5, "system": "a"}


def dev_folder(tmp_path, rows, name="dailydialog_zhao"):
    folder = tmp_path / "judgments"
    folder.mkdir(exist_ok=True)
    (folder / f"{name}.normalized.jsonl").write_text("".join(json.dumps(row) + "\n" for row in rows))
    return folder


@pytest.mark.parametrize(
    "change, says",
    [
        ({"response": 5}, "line 2: 'response' is int, not a string"),
        ({"context": ["a", 7]}, "line 2: 'context' has a turn that is not a string"),
        ({"score_density": None}, "line 2: 'score_density' is None, not a finite number"),
        ({"score": float("nan")}, "line 2: 'score' is nan, not a finite number"),
        ({"score": "4"}, "line 2: 'score' is '4', not a finite number"),
    ],
)
def test_a_bad_row_is_refused_naming_its_file_and_line(tmp_path, change, says):
    folder = dev_folder(tmp_path, [GOOD, {**GOOD, **change}])
    with pytest.raises(ValueError, match="dailydialog_zhao.normalized.jsonl: " + says.replace("(", r"\(")):
        load_sets(folder)


def test_a_dev_set_without_score_density_is_refused_naming_the_row(tmp_path):
    rows = [{key: value for key, value in GOOD.items() if key != "score_density"}] * 5
    with pytest.raises(ValueError, match="dailydialog_zhao: row 1 has no 'score_density', which the 'dev' protocol"):
        load_dev_judgments(str(dev_folder(tmp_path, rows)))


def test_a_dev_set_of_ground_truth_rows_only_is_refused(tmp_path):
    folder = dev_folder(tmp_path, [{**GOOD, "system": "ground-truth"}] * 5)
    with pytest.raises(ValueError, match="no row of dailydialog_zhao is left for the dev protocol"):
        load_dev_judgments(str(folder))


def test_two_dev_sets_below_the_folder_are_refused(tmp_path):
    for sub in ("a", "b"):
        (tmp_path / sub).mkdir()
        dev_folder(tmp_path / sub, [GOOD] * 5)
    with pytest.raises(ValueError, match="2 dailydialog_zhao.normalized.jsonl below it; name the folder of one"):
        load_dev_judgments(str(tmp_path))


def test_a_good_dev_set_loads(tmp_path):
    dev = load_dev_judgments(str(dev_folder(tmp_path, [GOOD] * 5)))
    assert dev.responses == ["hello"] and list(dev.human) == [0.5]  # the first 20 % of 5 rows


def test_a_missing_dev_folder_is_named_as_missing(tmp_path):
    with pytest.raises(ValueError, match="--dev-judgments .*nowhere: no such folder"):
        load_dev_judgments(str(tmp_path / "nowhere"))


def test_a_set_that_is_not_utf8_is_refused_naming_the_file_and_only_that(tmp_path):
    folder = dev_folder(tmp_path, [GOOD])
    path = folder / "dailydialog_zhao.normalized.jsonl"
    path.write_bytes(path.read_bytes() + b'{"context": ["caf\xe9"]}\n')  # Latin-1, not UTF-8
    with pytest.raises(ValueError) as raised:
        load_sets(folder)
    assert str(raised.value).startswith(f"{path}: not UTF-8 text")
    assert "not a human-judgment set" not in str(raised.value)  # a file of another encoding, not another schema


def test_a_set_with_a_byte_order_mark_loads_as_without(tmp_path):
    folder = dev_folder(tmp_path, [GOOD] * 5)
    path = folder / "dailydialog_zhao.normalized.jsonl"
    plain = load_dev_judgments(str(folder))
    path.write_bytes(b"\xef\xbb\xbf" + path.read_bytes())
    marked = load_dev_judgments(str(folder))
    assert marked.contexts == plain.contexts and marked.responses == plain.responses
