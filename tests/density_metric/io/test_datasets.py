"""Scoring a datasets.Dataset: streamed in chunks, score columns added, rows named in errors."""

import datasets
import numpy as np
import pytest

from density_metric import DensityScorer

from ...tiny import synthetic_pairs


@pytest.fixture
def spied_scorer(tiny_checkpoint):
    """A scorer that records how many rows each scoring call receives."""
    scorer = DensityScorer(str(tiny_checkpoint), device="cpu", dtype="float32", batch_size=8)
    scorer.calls = []
    score_checked = scorer._score_checked
    scorer._score_checked = lambda c, r: scorer.calls.append(len(r)) or score_checked(c, r)
    return scorer


def test_dataset_gets_score_columns_equal_to_list_scoring(spied_scorer, tiny_scorer):
    contexts, responses = synthetic_pairs(50, seed=30)
    ds = datasets.Dataset.from_dict({"context": contexts, "response": responses})
    scored = spied_scorer.score_dataset(ds, chunk_size=16)
    expected = tiny_scorer.score(contexts, responses)
    np.testing.assert_allclose(scored["density"], expected.scores, rtol=1e-5)
    np.testing.assert_allclose(scored["density_calibrated"], expected.calibrated, rtol=1e-5, atol=1e-9)
    assert scored.column_names == [
        "context",
        "response",
        "density",
        "density_calibrated",
        "density_flags",
        "density_signature",
    ]
    assert set(scored["density_signature"]) == {tiny_scorer.signature}


def test_dataset_is_scored_chunk_by_chunk(spied_scorer):
    ds = datasets.Dataset.from_dict(dict(zip(("context", "response"), synthetic_pairs(50, seed=31))))
    spied_scorer.score_dataset(ds, chunk_size=16)
    assert spied_scorer.calls == [16, 16, 16, 2]


def test_iterable_dataset_is_scored_lazily(spied_scorer, tiny_scorer):
    contexts, responses = synthetic_pairs(20, seed=32)
    ds = datasets.Dataset.from_dict({"context": contexts, "response": responses}).to_iterable_dataset()
    scored = spied_scorer.score_dataset(ds, chunk_size=8)
    assert spied_scorer.calls == []
    values = [row["density"] for row in scored]
    np.testing.assert_allclose(values, tiny_scorer.score(contexts, responses).scores, rtol=1e-5)


def test_custom_columns_and_missing_column(tiny_scorer):
    ds = datasets.Dataset.from_dict({"history": [["hi"]], "reply": ["hello"]})
    scored = tiny_scorer.score_dataset(ds, context_column="history", response_column="reply", output_column="s")
    assert scored.column_names == ["history", "reply", "s", "s_calibrated", "s_flags", "s_signature"]
    with pytest.raises(ValueError, match="dataset has no column 'context'"):
        tiny_scorer.score_dataset(ds)


def test_bad_row_error_names_its_dataset_row(tiny_scorer):
    contexts, responses = synthetic_pairs(30, seed=33)
    responses[21] = ""
    ds = datasets.Dataset.from_dict({"context": contexts, "response": responses})
    ds = ds.map(lambda row, i: {"response": None if i == 21 else row["response"]}, with_indices=True)
    with pytest.raises(ValueError, match=r"^response\[21\] must be a string"):
        tiny_scorer.score_dataset(ds, chunk_size=8)


def test_datasets_and_tables_share_one_scoring_step(tiny_scorer, monkeypatch):
    """score_dataset and tables.score_rows both turn chunks into columns with results.score_columns."""
    from density_metric import results, scoring
    from density_metric.io import tables

    contexts, responses = synthetic_pairs(10, seed=34)
    chunk_sizes = []
    score_columns = results.score_columns
    assert tables.score_columns is scoring.score_columns is score_columns
    for module in (tables, scoring):
        monkeypatch.setattr(
            module, "score_columns", lambda fn, c, r, **kw: chunk_sizes.append(len(r)) or score_columns(fn, c, r, **kw)
        )
    ds = datasets.Dataset.from_dict({"context": contexts, "response": responses})
    scored = tiny_scorer.score_dataset(ds, chunk_size=4)
    rows = [tables.Row({}, f"row {i}", c, r) for i, (c, r) in enumerate(zip(contexts, responses))]
    tables.score_rows(rows, tiny_scorer.score, chunk_rows=4)
    assert chunk_sizes == [4, 4, 2] * 2
    np.testing.assert_array_equal([row.record["density"] for row in rows], scored["density"])
    np.testing.assert_array_equal([row.record["density_calibrated"] for row in rows], scored["density_calibrated"])


def test_a_dataset_on_disk_is_scored_once_then_read_from_the_cache(spied_scorer, tmp_path):
    """The map function hashes as the scorer's signature and columns: the same request hits
    datasets' cache, another output column or checkpoint does not."""
    datasets.Dataset.from_dict(dict(zip(("context", "response"), synthetic_pairs(20, seed=35)))).save_to_disk(
        tmp_path / "ds"
    )
    ds = datasets.load_from_disk(tmp_path / "ds")
    first = spied_scorer.score_dataset(ds, chunk_size=8)
    assert spied_scorer.calls == [8, 8, 4]
    again = spied_scorer.score_dataset(ds, chunk_size=8)
    assert spied_scorer.calls == [8, 8, 4]  # read back, not scored again
    assert again["density"] == first["density"]
    spied_scorer.score_dataset(ds, chunk_size=8, output_column="other")
    assert spied_scorer.calls == [8, 8, 4, 8, 8, 4]


def test_a_missing_column_of_an_iterable_dataset_is_a_value_error_naming_it(tiny_scorer):
    def rows():
        yield {"history": ["hi"], "reply": "hello"}

    ds = datasets.IterableDataset.from_generator(rows)  # its columns are known only once it is read
    with pytest.raises(ValueError, match=r"dataset has no column 'context'; columns: \['history', 'reply'\]"):
        list(tiny_scorer.score_dataset(ds))


@pytest.mark.parametrize("iterable", [False, True])
def test_a_dataset_dict_asks_for_a_split(tiny_scorer, iterable):
    ds = datasets.Dataset.from_dict({"context": [["hi"]], "response": ["hello"]})
    splits = datasets.DatasetDict({"train": ds, "test": ds})
    if iterable:
        splits = datasets.IterableDatasetDict({name: split.to_iterable_dataset() for name, split in splits.items()})
    with pytest.raises(ValueError, match=r"one split.*'train', 'test'.*dataset\['train'\]"):
        tiny_scorer.score_dataset(splits)


def test_bad_row_errors_name_the_column(tiny_scorer):
    ds = datasets.Dataset.from_dict({"history": [["hi"], ["ok", None]], "reply": ["a", "b"]})
    with pytest.raises(ValueError, match=r"^history\[1\]\[1\] must be a string, got NoneType"):
        tiny_scorer.score_dataset(ds, context_column="history", response_column="reply")


def test_a_pandas_data_frame_is_a_value_error_that_says_what_to_pass(tiny_scorer):
    import pandas as pd

    frame = pd.DataFrame({"context": [["hi"]], "response": ["hello"]})
    with pytest.raises(ValueError, match=r"got DataFrame: pass datasets\.Dataset\.from_pandas\(dataset\)"):
        tiny_scorer.score_dataset(frame)
