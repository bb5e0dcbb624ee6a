"""The Gradio app, served on 127.0.0.1 with a tiny checkpoint and called through gradio_client."""

import io
import json
import os
import re
import threading
from concurrent.futures import ThreadPoolExecutor

import httpx
import numpy as np
import pytest
from gradio_client import Client, handle_file

from density_metric.io.tables import read_rows
from tests.density_metric.comparison.test_significance import naive_holm

from ..ports import free_port

CONTEXT = "hi\nhow are you"
REPLIES = ["fine thanks", "the weather is nice", "you you you"]


@pytest.fixture(scope="module")
def demo(tiny_checkpoint, tmp_path_factory):
    """The app served on a free port; gradio's uploads and copies go to a pytest folder, not the shared /tmp/gradio."""
    from app import build_demo, launch

    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("GRADIO_TEMP_DIR", str(tmp_path_factory.mktemp("gradio")))
        demo = build_demo(str(tiny_checkpoint))
        demo.port = free_port()
        launch(demo, server_name="127.0.0.1", server_port=demo.port, prevent_thread_lock=True, quiet=True)
        yield demo
        demo.close()
        demo.downloads.cleanup()


@pytest.fixture(scope="module")
def served(demo):
    return f"http://127.0.0.1:{demo.port}/"


@pytest.fixture(scope="module")
def client(served, tmp_path_factory):
    return Client(served, verbose=False, download_files=tmp_path_factory.mktemp("downloads"))


@pytest.fixture(scope="module")
def app_scorer(tiny_checkpoint):
    """What the app computes, with the app's default dtype."""
    from density_metric import DensityScorer

    return DensityScorer(str(tiny_checkpoint), progress=False)


def test_score_replies_ranks_candidates_by_raw_score(client, app_scorer, tiny_checkpoint):
    table, plot = client.predict(CONTEXT, "\n".join(REPLIES), str(tiny_checkpoint), api_name="/score_replies")
    expected = app_scorer.score([CONTEXT.splitlines()] * 3, REPLIES)
    order = np.argsort(-expected.scores)
    assert [row[1] for row in table["data"]] == [REPLIES[i] for i in order]
    np.testing.assert_allclose([row[2] for row in table["data"]], expected.scores[order], atol=1e-3)
    np.testing.assert_allclose([row[3] for row in table["data"]], expected.calibrated[order], atol=1e-3)
    assert plot["type"] == "matplotlib"


def test_the_score_tables_say_why_a_row_is_floored(client, tiny_checkpoint):
    """Issue 60: an emoji reply showed -130.36 with no word why."""
    table, _ = client.predict(CONTEXT, "fine thanks\n😀😀\n?!", str(tiny_checkpoint), api_name="/score_replies")
    assert table["headers"][4] == "flags"
    flags = {row[1]: row[4] for row in table["data"]}
    assert flags == {"fine thanks": "", "😀😀": "floored: unreadable", "?!": "floored: punctuation"}
    _, turns, _ = client.predict("hi\nhello how are you\n😀", "mean", str(tiny_checkpoint), api_name="/score_dialogue")
    assert [row[4] for row in turns["data"]] == ["", "floored: unreadable"]


def test_score_dialogue_gives_per_turn_scores_and_the_aggregate(client, app_scorer, tiny_checkpoint):
    dialogue = ["hi", "hello how are you", "fine thanks", "good day"]
    summary, turns, chart = client.predict(
        "\n".join(dialogue), "mean", str(tiny_checkpoint), api_name="/score_dialogue"
    )
    expected = app_scorer.score_dialogue(dialogue)
    assert f"{expected['score']:.3f}" in summary
    np.testing.assert_allclose([row[2] for row in turns["data"]], expected["turn_scores"], atol=1e-3)
    assert [row[0] for row in chart["data"]] == [2, 3, 4]


def test_score_file_returns_every_row_with_scores_and_marks_bad_rows(client, app_scorer, tiny_checkpoint, tmp_path):
    rows = [
        {"context": ["hi"], "response": "hello"},
        {"context": ["hi"]},
        {"context": "how are you", "response": "fine"},
    ]
    (tmp_path / "in.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    path, summary = client.predict(
        handle_file(str(tmp_path / "in.jsonl")), "", str(tiny_checkpoint), api_name="/score_file"
    )
    out = [json.loads(line) for line in open(path)]
    assert len(out) == 3 and "Scored 2 of 3 rows; 1 bad row(s)" in summary
    assert out[1]["density"] is None and "missing field 'response'" in out[1]["density_error"]
    expected = app_scorer.score([["hi"], ["how are you"]], ["hello", "fine"]).scores
    np.testing.assert_allclose([out[0]["density"], out[2]["density"]], expected, rtol=1e-5)


@pytest.mark.parametrize(
    "context, replies, message",
    [
        ("", "hello", "Context is empty"),
        ("hi", "   ", "Candidate replies is empty"),
        ("x" * 5000, "hello", "at most 4,000"),
        ("hi", "\n".join(f"reply {i}" for i in range(11)), "at most 10"),
    ],
)
def test_bad_input_gets_a_friendly_message_not_a_traceback(client, tiny_checkpoint, context, replies, message):
    with pytest.raises(Exception, match=message) as error:
        client.predict(context, replies, str(tiny_checkpoint), api_name="/score_replies")
    assert "Traceback" not in str(error.value)


def test_malformed_upload_gets_a_friendly_message(client, tiny_checkpoint, tmp_path):
    (tmp_path / "bad.txt").write_text("not a table")
    with pytest.raises(Exception, match="Invalid file type.*jsonl.*csv"):  # Gradio's own check
        client.predict(handle_file(str(tmp_path / "bad.txt")), "", str(tiny_checkpoint), api_name="/score_file")
    (tmp_path / "empty.csv").write_text("")
    with pytest.raises(Exception, match="has no rows"):
        client.predict(handle_file(str(tmp_path / "empty.csv")), "", str(tiny_checkpoint), api_name="/score_file")
    (tmp_path / "latin1.csv").write_bytes(b"context,response\ncaf\xe9,fine\n")
    with pytest.raises(Exception, match=r"latin1\.csv: not UTF-8 text") as error:
        client.predict(handle_file(str(tmp_path / "latin1.csv")), "", str(tiny_checkpoint), api_name="/score_file")
    assert "/latin1.csv" not in str(error.value)  # the name only, not the server's temporary path
    (tmp_path / "broken.jsonl").write_text("{not json\n[1, 2]\n")
    path, summary = client.predict(
        handle_file(str(tmp_path / "broken.jsonl")), "", str(tiny_checkpoint), api_name="/score_file"
    )
    assert "Scored 0 of 2 rows; 2 bad row(s)" in summary
    assert [json.loads(line)["density_error"].split(":")[0] for line in open(path)] == ["line 1", "line 2"]
    (tmp_path / "other.jsonl").write_text('{"ctx": "hi", "response": "fine"}\n')
    with pytest.raises(Exception, match=r"other\.jsonl: no row has the field 'context' \(columns: 'ctx', 'response'\)"):
        client.predict(handle_file(str(tmp_path / "other.jsonl")), "", str(tiny_checkpoint), api_name="/score_file")


@pytest.mark.parametrize(
    "name, text",
    [
        ("bom.jsonl", '{"context": ["hi"], "response": "hello"}\n{"context": "hi", "response": "fine"}\n'),
        ("bom.csv", 'context,response\nhi,hello\n"[""hi""]",fine\n'),
    ],
)
def test_uploads_with_a_utf8_byte_order_mark_are_scored(client, app_scorer, tiny_checkpoint, tmp_path, name, text):
    (tmp_path / name).write_bytes(b"\xef\xbb\xbf" + text.encode("utf-8"))
    path, summary = client.predict(handle_file(str(tmp_path / name)), "", str(tiny_checkpoint), api_name="/score_file")
    assert "Scored 2 of 2 rows." in summary
    out = read_rows(path)
    expected = app_scorer.score([["hi"], ["hi"]], ["hello", "fine"]).scores
    np.testing.assert_allclose([float(row.record["density"]) for row in out], expected, rtol=1e-5)


def test_an_upload_over_the_size_limit_is_refused_before_it_is_read(
    client, served, tiny_checkpoint, tmp_path, monkeypatch
):
    import app

    assert "10 MB" in app.BATCH_HELP
    (tmp_path / "big.jsonl").write_bytes(b" " * (app.MAX_FILE_BYTES + 1))
    # gradio_client reads the limit from the server's config and refuses to send the file...
    with pytest.raises(Exception, match="exceeds the maximum file size of 10485760 bytes"):
        client.predict(handle_file(str(tmp_path / "big.jsonl")), "", str(tiny_checkpoint), api_name="/score_file")
    # ...and the server stops reading an upload (from a browser, say) once it is past the limit.
    with open(tmp_path / "big.jsonl", "rb") as handle:
        response = httpx.post(served + "gradio_api/upload", files={"files": ("big.jsonl", handle)}, timeout=60)
    assert response.status_code == 413 and "File size exceeded maximum allowed size" in response.text
    # score_file checks too, for a server launched without launch(): a clear message naming the limit.
    monkeypatch.setattr(app, "MAX_FILE_BYTES", 1000)
    (tmp_path / "small.jsonl").write_text('{"context": "hi", "response": "hello"}\n' * 30)
    with pytest.raises(
        Exception, match=r"small\.jsonl is 1,170 bytes; the demo takes files up to 1,000 bytes\."
    ) as error:
        client.predict(handle_file(str(tmp_path / "small.jsonl")), "", str(tiny_checkpoint), api_name="/score_file")
    assert "Traceback" not in str(error.value)


def test_about_shows_the_signature(client, tiny_checkpoint):
    text = client.predict(str(tiny_checkpoint), api_name="/about")
    assert "What the scores mean" in text and "density_metric=0.1.0|checkpoint=" in text


def test_several_clients_at_once_each_get_their_own_result(served, app_scorer, tiny_checkpoint):
    contexts = [f"hi\n{word} day" for word in ("good", "nice", "what", "the", "fine", "and")]
    results, errors = {}, []

    def ask(context):
        try:
            table, _ = Client(served, verbose=False).predict(
                context, "fine thanks", str(tiny_checkpoint), api_name="/score_replies"
            )
            results[context] = table["data"][0][2]
        except Exception as err:  # collected, then asserted
            errors.append(err)

    threads = [threading.Thread(target=ask, args=(context,)) for context in contexts]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=120)
    assert not errors
    expected = app_scorer.score([c.splitlines() for c in contexts], ["fine thanks"] * len(contexts)).scores
    np.testing.assert_allclose([results[c] for c in contexts], expected, atol=1e-3)


def write_system(path, responses, contexts=("hi", "how are you", "good morning", "see you")):
    path.write_text("".join(json.dumps({"context": c, "response": r}) + "\n" for c, r in zip(contexts, responses)))
    return handle_file(str(path))


def test_compare_files_gives_the_table_the_grid_and_the_plot(client, app_scorer, tiny_checkpoint, tmp_path):
    good, bad = ["hello", "fine thanks", "morning", "bye"], ["you you you", "the the", "a a a", "x x"]
    files = [write_system(tmp_path / "good.jsonl", good), write_system(tmp_path / "bad.jsonl", bad)]
    table, grid, plot, summary = client.predict(files, "", str(tiny_checkpoint), api_name="/compare_files")
    contexts = [["hi"], ["how are you"], ["good morning"], ["see you"]]
    expected = {name: app_scorer.score(contexts, replies) for name, replies in (("good", good), ("bad", bad))}
    assert [row[0] for row in table["data"]] == ["good", "bad"]
    np.testing.assert_allclose(
        [row[2] for row in table["data"]], [r.scores.mean() for r in expected.values()], atol=1e-3
    )
    np.testing.assert_allclose(
        [row[5] for row in table["data"]], [r.calibrated.mean() for r in expected.values()], atol=1e-3
    )
    delta = expected["good"].scores.mean() - expected["bad"].scores.mean()
    assert grid["headers"] == ["row - column", "good", "bad"]
    assert float(grid["data"][0][2].rstrip("*")) == pytest.approx(delta, abs=1e-4)
    assert float(grid["data"][1][1].rstrip("*")) == pytest.approx(-delta, abs=1e-4)
    assert plot["type"] == "matplotlib"
    assert "test:ar|ar:10000|bs:1000|seed:12345|rtol:1e-05|density_metric=" in summary


def test_compare_files_against_a_baseline_tests_only_its_pairs(client, tiny_checkpoint, tmp_path):
    good = ["hello", "fine thanks", "morning", "bye"]
    files = [
        write_system(tmp_path / name, replies)
        for name, replies in (("base.jsonl", good), ("copy.jsonl", good[::-1]), ("empty.jsonl", [""] * 4))
    ]
    _, grid, _, summary = client.predict(files, "", str(tiny_checkpoint), " base ", api_name="/compare_files")
    assert "Holm's correction for 2 tests (against the baseline 'base')" in summary
    assert len(re.findall(r"Holm-corrected [0-9.]+\)", summary)) == 2  # base-copy, base-empty; not copy-empty
    assert grid["data"][1][3] == "" and grid["data"][0][2] != ""  # copy - empty untested; base - copy tested
    with pytest.raises(Exception, match=r"baseline 'nope' is not one of the systems \['base', 'copy', 'empty'\]"):
        client.predict(files, "", str(tiny_checkpoint), "nope", api_name="/compare_files")


def test_compare_files_names_the_differing_row_by_file_name(client, tiny_checkpoint, tmp_path):
    files = [
        write_system(tmp_path / "a.jsonl", ["x", "y", "z", "w"]),
        write_system(tmp_path / "b.jsonl", ["x", "y", "z", "w"], contexts=("hi", "how are you", "other", "see you")),
    ]
    with pytest.raises(Exception, match=r"b\.jsonl, line 3: its context \['other'\] differs") as error:
        client.predict(files, "", str(tiny_checkpoint), api_name="/compare_files")
    assert str(tmp_path) not in str(error.value) and "Traceback" not in str(error.value)


def test_compare_files_needs_two_files(client, tiny_checkpoint, tmp_path):
    with pytest.raises(Exception, match="Upload 2 to 6 files, one per system; got 1"):
        client.predict(
            [write_system(tmp_path / "a.jsonl", ["x"] * 4)], "", str(tiny_checkpoint), api_name="/compare_files"
        )


def test_compare_files_counts_degenerate_and_truncated_rows_apart_and_says_holms_correction(
    client, tiny_checkpoint, tmp_path
):
    """Issue 60: truncated rows (long human dialogues) were counted with the degenerate ones, and the verdicts, decided
    on Holm-corrected p-values, showed only the uncorrected p."""
    good = ["hello", "fine thanks", "morning", "bye"]
    long = [" ".join([reply] * 40) for reply in good]  # past the tiny checkpoint's max_length of 64
    files = [
        write_system(tmp_path / "good.jsonl", good),
        write_system(tmp_path / "empty.jsonl", [""] * 4),
        write_system(tmp_path / "long.jsonl", long),
    ]
    table, _, _, summary = client.predict(files, "", str(tiny_checkpoint), api_name="/compare_files")
    assert table["headers"][-2:] == ["degenerate rows", "truncated rows"]
    assert [row[-2:] for row in table["data"]] == [["0", "0"], ["4 (4 empty)", "0"], ["0", "4 (4 reply)"]]
    assert "Holm's correction for 3 tests (all pairs)" in summary
    found = re.findall(r"p = ([0-9.]+), Holm-corrected ([0-9.]+)\)", summary)
    assert len(found) == 3
    raw, corrected = ([float(values[j]) for values in found] for j in (0, 1))
    np.testing.assert_allclose(corrected, naive_holm(raw), atol=2e-4)  # from 4-digit p-values


# ---------------------------------------------------------------- the plots and the help text (issue 68)


def rendered(fig) -> np.ndarray:
    """The figure drawn as the app serves it (Agg, no tight bounding box): (height, width, 4) RGBA floats."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    canvas = FigureCanvasAgg(fig)
    canvas.draw()
    return np.asarray(canvas.buffer_rgba(), dtype=np.float64) / 255


def test_two_floored_replies_on_the_histogram_are_both_visible(app_scorer):
    """Two floored replies get one score; the second one's line was drawn over the first, which was hidden."""
    from matplotlib.colors import to_rgba

    from app import distribution_plot

    result = app_scorer.score([["hi"]] * 3, ["?!", "...", "fine thanks"], warn=False)
    assert result.scores[0] == result.scores[1] and result.flags[:2] == [["punctuation"]] * 2
    fig = distribution_plot(app_scorer, ["?!", "...", "fine thanks"], result.scores)
    image, ax = rendered(fig), fig.axes[0]
    column = int(round(ax.transData.transform((result.scores[0], 0))[0]))
    top, bottom = (int(image.shape[0] - y) for y in ax.transAxes.transform([(0, 1), (0, 0)])[:, 1])
    strip = image[top + 2 : bottom - 2, column - 1 : column + 2, :3]  # the floor's line, inside the axes
    for line in ax.get_lines()[:2]:
        assert line.get_xdata()[0] == result.scores[0]
        shown = np.all(np.abs(strip - to_rgba(line.get_color())[:3]) < 0.08, axis=-1)
        assert shown.sum() > 20, f"{line.get_label()}: {shown.sum()} pixels of its colour on the line"
    numbers = [text for text in ax.texts if text.get_text() in ("#1", "#2")]
    assert len(numbers) == 2
    first, second = (text.get_window_extent() for text in numbers)
    assert not first.overlaps(second)


def test_the_differences_plots_caption_is_inside_the_figure(tmp_path):
    """It was cut off at "p < 0." once long system names narrowed the axes."""
    from app import differences_plot
    from density_metric import compare

    result = compare(
        {"a-system-with-a-long-name": [1.0, 2, 3, 4, 5, 6, 7, 8], "the-baseline": [0.0, 1, 1, 2, 2, 2, 3, 3]},
        resamples=100,
        trials=100,
    )
    fig = differences_plot(result)
    rendered(fig)
    label = fig.axes[0].xaxis.label
    assert label.get_text().endswith("p < 0.05)")
    box = label.get_window_extent()
    assert box.x0 >= 0 and box.x1 <= fig.bbox.width and box.y0 >= 0, (box, fig.bbox)


def test_the_plots_are_figures_of_their_own_drawn_by_threads_at_once(app_scorer, monkeypatch):
    """pyplot's one list of open figures would be shared by requests served at once: no plot is made through it."""
    import matplotlib.pyplot as plt

    from app import differences_plot, distribution_plot
    from density_metric import compare

    def through_pyplot(*args, **kwargs):
        raise AssertionError("a plot made through pyplot")

    monkeypatch.setattr(plt, "figure", through_pyplot)
    monkeypatch.setattr(plt, "subplots", through_pyplot)
    labels = [[f"reply {i}", "fine thanks"] for i in range(4)]
    with ThreadPoolExecutor(len(labels)) as pool:
        figures = list(pool.map(lambda pair: distribution_plot(app_scorer, pair, np.array([-8.0, -9.0])), labels))
    for figure, pair in zip(figures, labels):
        legend = [text.get_text() for text in figure.axes[0].get_legend().get_texts()]
        assert legend == ["human replies", f"#1 {pair[0]}", "#2 fine thanks"]
        png = io.BytesIO()
        figure.savefig(png, format="png")  # as gradio renders it
        assert png.getvalue().startswith(b"\x89PNG")
    differences = differences_plot(compare({"a": [1.0, 2, 3, 4], "b": [0.0, 1, 1, 2]}, resamples=50, trials=50))
    differences.savefig(io.BytesIO(), format="png")


def test_a_checkpoint_loading_keeps_no_request_for_another_waiting(monkeypatch):
    """Every request waited under one lock while any checkpoint loaded (a Hub download can take minutes)."""
    import app

    release, made = threading.Event(), []

    class Loading:
        def __init__(self, name, progress):
            made.append(name)
            if name == "slow":
                assert release.wait(timeout=30)

    monkeypatch.setattr(app, "DensityScorer", Loading)
    scorers = app.Scorers("fast")
    with ThreadPoolExecutor(3) as pool:
        try:
            slow = [pool.submit(scorers, "slow") for _ in range(2)]
            fast = pool.submit(scorers, "fast")
            assert fast.result(timeout=10) is scorers("fast")
            assert not any(future.done() for future in slow)
        finally:  # a failure above must not leave the pool waiting on the load
            release.set()
        assert slow[0].result(timeout=10) is slow[1].result(timeout=10)
    assert sorted(made) == ["fast", "slow"]  # each loaded once


def test_the_compare_tabs_help_names_each_test_once():
    """It read "approximate randomization (approximate randomization, 10,000 trials; ...)"."""
    from app import COMPARE_HELP

    assert COMPARE_HELP.count("approximate randomization") == 1 and COMPARE_HELP.count("paired bootstrap") == 1
    assert (
        "approximate randomization (10,000 trials; it decides) and paired bootstrap (1,000 resamples)" in COMPARE_HELP
    )


# ---------------------------------------------------------------- start-up and files left behind


def test_a_broken_default_checkpoint_fails_at_start_with_one_error_line(tmp_path):
    import subprocess
    import sys
    from pathlib import Path

    env = {**os.environ, "DENSITY_CHECKPOINT": str(tmp_path / "no-such-checkpoint"), "HF_HUB_OFFLINE": "1"}
    app = Path(__file__).resolve().parents[2] / "app.py"
    try:
        run = subprocess.run([sys.executable, str(app)], env=env, capture_output=True, text=True, timeout=120)
    except subprocess.TimeoutExpired:
        pytest.fail("the app started serving a checkpoint that does not exist")
    assert run.returncode == 2
    last = run.stderr.strip().splitlines()[-1]
    assert last.startswith("error: cannot serve the checkpoints") and "no-such-checkpoint" in last, run.stderr


def test_scored_files_go_to_the_apps_own_folder_not_tmp_folders_of_their_own(client, demo, tiny_checkpoint, tmp_path):
    import tempfile
    import uuid
    from pathlib import Path

    name = f"mine-{uuid.uuid4().hex}"  # no other run writes this name
    (tmp_path / f"{name}.jsonl").write_text('{"context": "hi", "response": "hello"}\n')
    client.predict(handle_file(str(tmp_path / f"{name}.jsonl")), "", str(tiny_checkpoint), api_name="/score_file")
    assert not list(Path(tempfile.gettempdir()).glob(f"tmp*/{name}.scored.jsonl"))  # where the app wrote them
    assert demo.downloads.root.name.startswith("density-app-")
    assert list(demo.downloads.root.glob(f"*/{name}.scored.jsonl"))


def test_the_apps_scored_files_are_removed_once_old_and_all_at_cleanup(monkeypatch):
    import app

    downloads = app.Downloads()
    first = downloads.path("a.scored.jsonl")
    first.write_text("{}\n")
    monkeypatch.setattr(app, "DOWNLOAD_MAX_AGE_S", -1)  # every earlier file is old now
    second = downloads.path("b.scored.jsonl")
    assert not first.parent.exists() and second.parent.exists()
    downloads.cleanup()
    assert not downloads.root.exists()


def test_a_scored_file_is_given_its_path_when_another_request_swept_a_listed_folder(monkeypatch):
    """Two requests that finished at once both listed an old folder; the one whose sweep came second failed on it
    (FileNotFoundError: the user saw "Something went wrong" after the whole file was scored)."""
    import app

    downloads = app.Downloads()
    old = downloads.path("a.scored.jsonl").parent
    os.utime(old, (0, 0))

    class Swept(type(downloads.root)):
        def iterdir(self):
            yield self / "swept-by-another-request"  # listed, then removed before this request's stat
            yield from super().iterdir()

    downloads.root = Swept(downloads.root)
    path = downloads.path("b.scored.jsonl")
    assert path.parent.is_dir() and not old.exists()
    downloads.cleanup()


def test_the_checkpoint_list_may_have_spaces_after_its_commas(monkeypatch):
    """``DENSITY_CHECKPOINTS="org/a, org/b"`` gave the name " org/b", not a repo id: the app refused to start."""
    import app

    built = []
    monkeypatch.setenv("DENSITY_CHECKPOINTS", " org/a, org/b ,, bundled")
    monkeypatch.delenv("DENSITY_CHECKPOINT", raising=False)
    monkeypatch.setattr(app, "build_demo", lambda default, extra: built.append((default, extra)))
    monkeypatch.setattr(app, "launch", lambda demo, **options: None)
    app.main()
    assert built == [(None, ("org/a", "org/b", "bundled"))]
