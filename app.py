"""DEnsity demo for a Hugging Face Space: score replies, a whole dialogue, or a file; compare systems.

    python app.py                       # serves on http://127.0.0.1:7860 with the bundled checkpoint
    DENSITY_CHECKPOINT=org/repo python app.py
    DENSITY_CHECKPOINTS=org/a,org/b python app.py   # more choices in the checkpoint dropdown

API (gradio_client): /score_replies, /score_dialogue, /score_file, /compare_files, /about.
"""

from __future__ import annotations

import functools
import logging
import os
import shutil
import sys
import tempfile
import threading
import time
from pathlib import Path

os.environ.setdefault("GRADIO_ANALYTICS_ENABLED", "False")

import gradio as gr  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402

from density_metric import DensityScorer, resolve_checkpoint  # noqa: E402
from density_metric.app_plots import differences_plot, distribution_plot  # noqa: E402
from density_metric.comparison.result import (  # noqa: E402
    ALPHA,
    TESTS,
    correction_text,
    flagged_cell,
    grid_cells,
    truncated_cell,
)
from density_metric.comparison.significance import DEFAULT_RESAMPLES, DEFAULT_SEED, DEFAULT_TRIALS  # noqa: E402
from density_metric.comparison.systems import compare_tables, read_system  # noqa: E402
from density_metric.io.tables import (  # noqa: E402
    output_columns,
    raise_for_missing_column,
    read_table,
    score_rows,
    table_format,
    write_records,
)
from density_metric.row_flags import FLOORED  # noqa: E402

logger = logging.getLogger("density_app")

BUNDLED = "bundled"
MAX_TURNS = 40
MAX_CHARS = 4000  # per text field
MAX_CANDIDATES = 10
MAX_ROWS = 2000  # per uploaded file
MAX_SYSTEMS = 6  # files in one comparison
# Per uploaded file. 2,000 rows of dialogue fit in well under 10 MB; reading a table takes about
# 10x its size in memory, so a 120 MB upload once took 1.2 GB. launch() makes the server refuse
# larger uploads; score_file checks again, for a demo launched another way.
MAX_FILE_BYTES = 10 * 2**20
CONCURRENCY = 2
# A scored file is needed only until gradio has copied it into its own cache, as the function returns; the app's
# copies older than this are removed at the next request, and all of them when the app's process ends.
DOWNLOAD_MAX_AGE_S = 600
# gradio's own copies (in GRADIO_TEMP_DIR): checked hourly, removed after an hour, and all when the server stops.
GRADIO_DELETE_CACHE = (3600, 3600)

EXAMPLES = [
    [
        "Hi! How was your weekend?\nPretty good. I finally went to that new Italian place downtown.",
        "Oh nice, how was the food? I've heard their pasta is amazing.\n"
        "The mitochondria is the powerhouse of the cell.\n"
        "Italian Italian place place downtown downtown downtown.\n"
        "Pretty good. I finally went to that new Italian place downtown.",
    ],
    [
        "Excuse me, could you tell me where the train station is?",
        "Sure, go straight two blocks and turn left. You can't miss it.\nI like turtles.\nstation station station",
    ],
]
DIALOGUE_EXAMPLE = (
    "Hi, can I help you?\nYes, I'm looking for a birthday present for my sister.\n"
    "How old is she?\nShe's turning twenty.\nHow about this scarf? It's very popular this season.\n"
    "Scarf scarf scarf."
)


def file_size(size: int) -> str:
    """``"10 MB"`` (binary megabytes, 3 digits) from a megabyte on, else ``"1,230 bytes"``."""
    return f"{size / 2**20:.3g} MB" if size >= 2**20 else f"{size:,} bytes"


BATCH_HELP = (
    f"A `.jsonl` or `.csv` file with `context` (list or string) and `response`; up to {MAX_ROWS:,} rows "
    f"and {file_size(MAX_FILE_BYTES)}."
)


COMPARE_HELP = (
    f"Two to {MAX_SYSTEMS} `.jsonl` or `.csv` files, one per system, with the same `context`s in the same order "
    "and each system's `response`. Files that all have a `density` column (the Batch tab's output) are not "
    "scored again; a mix of scored and unscored files is refused. "
    f"p-values: {TESTS['ar']} ({DEFAULT_TRIALS:,} trials; it decides) and {TESTS['bs']} "
    f"({DEFAULT_RESAMPLES:,} resamples), seed {DEFAULT_SEED}. With a baseline (a file's name without its extension), each other system is "
    "tested against it only, and Holm's correction counts those tests, not every pair."
)


class UserError(gr.Error):
    """A problem with the input, shown to the user as is (and not logged as a server error)."""

    def __init__(self, message: str):
        super().__init__(message, title="Please check the input", print_exception=False)


def friendly(function):
    """Input problems become a clear message; anything else is logged and never shown as a traceback."""

    @functools.wraps(function)
    def wrapper(*args, **kwargs):
        try:
            return function(*args, **kwargs)
        except gr.Error:
            raise
        except ValueError as err:
            raise UserError(str(err)) from None
        except Exception:
            logger.exception("request failed")
            raise gr.Error("Something went wrong while scoring; please try again or check the input.") from None

    return wrapper


def flag_text(flags: list[str]) -> str:
    """A row's flags for a table cell: why its score means little (``floored: empty``), or nothing."""
    floored = [flag for flag in flags if flag in FLOORED]
    rest = [flag for flag in flags if flag not in FLOORED]
    return ", ".join([f"floored: {flag}" for flag in floored] + rest)


def lines(text: str | None, field: str, limit: int) -> list[str]:
    if text is None or not text.strip():
        raise UserError(f"{field} is empty: write one item per line.")
    if len(text) > MAX_CHARS:
        raise UserError(f"{field} has {len(text):,} characters; the demo takes at most {MAX_CHARS:,}.")
    items = [line.strip() for line in text.splitlines() if line.strip()]
    if len(items) > limit:
        raise UserError(f"{field} has {len(items)} lines; the demo takes at most {limit}.")
    return items


class Scorers:
    """One loaded DensityScorer per checkpoint, created on first use (thread-safe); the default is loaded at once,
    so that a broken one fails at start rather than in every request (a ValueError or OSError naming it).

    Each checkpoint loads under a lock of its own: requests for a checkpoint wait for its one load (a Hub download
    can take minutes), and those for the checkpoints loaded already are served meanwhile."""

    def __init__(self, default: str | None):
        self.default = default or BUNDLED
        self._scorers: dict[str, DensityScorer] = {}
        self._loading: dict[str, threading.Lock] = {}
        self._lock = threading.Lock()  # over _loading
        self(self.default)

    def __call__(self, name: str | None) -> DensityScorer:
        name = name or self.default
        scorer = self._scorers.get(name)
        if scorer is not None:
            return scorer
        with self._lock:
            loading = self._loading.setdefault(name, threading.Lock())
        with loading:
            if name not in self._scorers:  # a failed load leaves nothing: the next request tries again
                self._scorers[name] = DensityScorer(None if name == BUNDLED else name, progress=False)
            return self._scorers[name]


def upload_path(upload, what: str) -> Path:
    """The path of an uploaded table, checked for its type and size before it is read."""
    path = Path(upload if isinstance(upload, str) else upload.name)
    try:
        table_format(path)
    except ValueError:
        raise UserError(f"{path.name}: use a .jsonl or .csv file.") from None
    size = path.stat().st_size
    if size > MAX_FILE_BYTES:  # before reading: memory grows with the file
        raise UserError(f"{path.name} is {file_size(size)}; the demo takes {what} up to {file_size(MAX_FILE_BYTES)}.")
    return path


class Downloads:
    """The app's own folder for scored files (``density-app-*`` in the temporary directory), removed with the app's
    process; each file gets a subfolder of its own, so that two users' files of one name do not meet."""

    def __init__(self):
        self._folder = tempfile.TemporaryDirectory(prefix="density-app-")  # removed at exit, or when collected
        self.root = Path(self._folder.name)

    def path(self, name: str) -> Path:
        """A new path for a file called ``name``; subfolders older than DOWNLOAD_MAX_AGE_S go first."""
        cutoff = time.time() - DOWNLOAD_MAX_AGE_S
        for old in self.root.iterdir():
            try:
                expired = old.stat().st_mtime < cutoff
            except FileNotFoundError:  # another request's sweep removed it since the listing
                continue
            if expired:
                shutil.rmtree(old, ignore_errors=True)
        return Path(tempfile.mkdtemp(dir=self.root)) / name

    def cleanup(self) -> None:
        self._folder.cleanup()


def without_paths(message: str, paths: list[Path]) -> str:
    """A message naming uploads by their temporary paths, which mean nothing to the user: their names only."""
    for path in paths:
        message = message.replace(str(path), path.name)
    return message


# The ranked-replies table; a checkpoint with a few-shot rating head adds "predicted rating".
RANKED_HEADERS = ["rank", "reply", "raw score", "calibrated", "flags"]
TURN_HEADERS = ["turn", "text", "raw score", "calibrated", "flags"]
SYSTEM_HEADERS = [
    "system",
    "n",
    "mean score",
    "95% CI low",
    "95% CI high",
    "mean calibrated",
    "degenerate rows",
    "truncated rows",
]


class Handlers:
    """The demo's requests, one method an API endpoint (``/score_replies``, ``/score_dialogue``, ``/score_file``,
    ``/compare_files``, ``/about``): each reads its inputs, scores with the chosen checkpoint's scorer
    (:class:`Scorers`) and returns what its tab shows; scored files go to ``downloads``."""

    def __init__(self, scorers: Scorers, downloads: Downloads):
        self.scorers, self.downloads = scorers, downloads

    @friendly
    def score_replies(self, context: str, candidates: str, checkpoint: str):
        turns = lines(context, "Context", MAX_TURNS)
        replies = lines(candidates, "Candidate replies", MAX_CANDIDATES)
        scorer = self.scorers(checkpoint)
        result = scorer.score([turns] * len(replies), replies)
        order = np.argsort(-result.scores, kind="stable")
        table = [
            [rank + 1, replies[i], round(float(result.scores[i]), 3), round(float(result.calibrated[i]), 3)]
            + [flag_text(result.flags[i])]
            + ([round(float(result.ratings[i]), 3)] if result.ratings is not None else [])
            for rank, i in enumerate(order)
        ]
        headers = RANKED_HEADERS + (["predicted rating"] if result.ratings is not None else [])
        plot = distribution_plot(scorer, [replies[i] for i in order], result.scores[order])
        return pd.DataFrame(table, columns=headers), plot

    @friendly
    def score_dialogue(self, dialogue: str, aggregate: str, checkpoint: str):
        turns = lines(dialogue, "Dialogue", MAX_TURNS)
        if len(turns) < 2:
            raise UserError("A dialogue needs at least 2 turns, one per line.")
        result = self.scorers(checkpoint).score_dialogue(turns, aggregate=aggregate)
        rows = [
            [i + 2, turns[i + 1], round(s, 3), round(c, 3), flag_text(f)]
            for i, (s, c, f) in enumerate(zip(result["turn_scores"], result["turn_calibrated"], result["turn_flags"]))
        ]
        chart = {"turn": [r[0] for r in rows], "calibrated": [r[3] for r in rows]}
        summary = f"**Dialogue score ({aggregate}): {result['score']:.3f}**, mean calibrated {np.mean(result['turn_calibrated']):.3f}"
        return summary, rows, pd.DataFrame(chart)

    @friendly
    # Gradio injects a progress tracker through this default: its documented idiom.
    def score_file(self, upload, context_sep: str, checkpoint: str, progress=gr.Progress(track_tqdm=True)):  # noqa: B008
        if upload is None:
            raise UserError("Upload a .jsonl or .csv file with 'context' and 'response' columns.")
        path = upload_path(upload, "files")
        fmt = table_format(path)
        try:
            table = read_table(
                path, fmt, context_field="context", response_field="response", context_sep=context_sep or None
            )
        except ValueError as err:
            # The message names the upload's temporary path, which means nothing to the user: keep its name only.
            raise UserError(without_paths(str(err), [path])) from None
        rows = table.rows
        if not rows:
            raise UserError(f"{path.name} has no rows.")
        for field in ("context", "response"):
            try:  # a file of other columns: say so once, not one bad row at a time
                raise_for_missing_column(path.name, table, field)
            except ValueError as err:
                raise UserError(f"{err}; the demo reads 'context' and 'response'.") from None
        if len(rows) > MAX_ROWS:
            raise UserError(f"{path.name} has {len(rows):,} rows; the demo takes at most {MAX_ROWS:,}.")
        scorer = self.scorers(checkpoint)
        progress(0, desc="scoring")
        track = functools.partial(progress.tqdm, desc="scoring", unit="batch")
        rating = scorer.checkpoint.rating is not None
        score_rows(rows, scorer.score, chunk_rows=64, track=track, error_column=True, rating_column=rating)
        out = self.downloads.path(f"{path.stem}.scored{path.suffix}")
        columns = output_columns(table.columns, error_column=True, rating_column=rating)
        write_records(out, fmt, [row.record for row in rows], columns=columns)
        bad = sum(1 for row in rows if row.error)
        summary = f"Scored {len(rows) - bad:,} of {len(rows):,} rows" + (
            f"; {bad} bad row(s) kept unscored, see `density_error`." if bad else "."
        )
        return str(out), summary

    @friendly
    def compare_files(self, uploads, context_sep: str, checkpoint: str, baseline: str = ""):
        uploads = [upload for upload in uploads or [] if upload is not None]
        if not 2 <= len(uploads) <= MAX_SYSTEMS:
            raise UserError(f"Upload 2 to {MAX_SYSTEMS} files, one per system; got {len(uploads)}.")
        paths = [upload_path(upload, "files") for upload in uploads]
        try:
            systems = [read_system(path, context_sep=context_sep or None) for path in paths]
            for system in systems:
                if len(system.rows) > MAX_ROWS:
                    raise UserError(
                        f"{system.path.name} has {len(system.rows):,} rows; the demo takes at most {MAX_ROWS:,}."
                    )
            result, _ = compare_tables(
                systems, lambda: self.scorers(checkpoint), baseline=(baseline or "").strip() or None
            )
        except ValueError as err:
            raise UserError(without_paths(str(err), paths)) from None
        table = pd.DataFrame(
            [
                [s["name"], s["n"], round(s["mean"], 3), round(s["ci"][0], 3), round(s["ci"][1], 3)]
                + [None if s["calibrated_mean"] is None else round(s["calibrated_mean"], 3)]
                + [flagged_cell(s), truncated_cell(s)]
                for s in result.systems
            ],
            columns=SYSTEM_HEADERS,
        )
        names = [s["name"] for s in result.systems]
        grid = pd.DataFrame(grid_cells(result), columns=["row - column", *names])
        verdicts = [
            (
                f"- **{p['winner']}** is better than **{p['b'] if p['winner'] == p['a'] else p['a']}**"
                if p["winner"]
                else f"- {p['a']} vs {p['b']}: no significant difference"
            )
            + f" (delta {p['delta']:+.3f}, p = {p['p_value']:.4f}, Holm-corrected {p['p_holm']:.4f})"
            for p in result.pairs
        ]
        decided = f"Significant: p < {ALPHA} after {correction_text(result)}; p is uncorrected."
        warnings = [f"- **warning:** {warning}" for warning in result.warnings]
        summary = "\n".join([*verdicts, "", decided, "", *warnings, "", f"`{result.signature}`"])
        return table, grid, differences_plot(result), summary

    def about(self, checkpoint: str):
        scorer = self.scorers(checkpoint)
        card = scorer.checkpoint.card
        body = card.split("---", 2)[-1].strip() if card.startswith("---") else card
        return (
            "### What the scores mean\n"
            "- **raw score** s(r): minus the Mahalanobis distance of the (context, reply) feature to the "
            "Gaussian of human replies"
            + (", with the card's repetition term" if scorer.stats.repetition is not None else "")
            + ". Higher is more human-like; compare within one checkpoint only.\n"
            "- **calibrated**: the share of held-out human replies that are *less* typical. 0.9: more typical "
            "than 90 % of real human replies; human replies average 0.5.\n\n"
            f"### Checkpoint\n`{scorer.signature}`\n\n{body}"
        )


def _replies_tab(handlers: Handlers, checkpoint: gr.Dropdown) -> None:
    """The Score replies tab: a context, candidate replies, their ranking and where they fall."""
    with gr.Tab("Score replies"):
        with gr.Row():
            context = gr.Textbox(label="Context: one turn per line, oldest first", lines=6)
            candidates = gr.Textbox(label=f"Candidate replies: one per line (up to {MAX_CANDIDATES})", lines=6)
        score_button = gr.Button("Score", variant="primary")
        ranked = gr.Dataframe(headers=RANKED_HEADERS, label="Ranked replies", interactive=False)
        plot = gr.Plot(label="Where the replies fall among human replies")
        gr.Examples(EXAMPLES, [context, candidates], label="Examples: coherent, off-topic, repetitive, echo")
        score_button.click(
            handlers.score_replies, [context, candidates, checkpoint], [ranked, plot], api_name="score_replies"
        )


def _dialogue_tab(handlers: Handlers, checkpoint: gr.Dropdown) -> None:
    """The Score a dialogue tab: a dialogue's turns scored and aggregated."""
    with gr.Tab("Score a dialogue"):
        dialogue = gr.Textbox(label="Dialogue: one turn per line", lines=8, value=DIALOGUE_EXAMPLE)
        aggregate = gr.Radio(["mean", "rms"], value="mean", label="Aggregate of the turn scores")
        dialogue_button = gr.Button("Score dialogue", variant="primary")
        dialogue_summary = gr.Markdown()
        turns = gr.Dataframe(headers=TURN_HEADERS, interactive=False)
        chart = gr.BarPlot(x="turn", y="calibrated", y_lim=[0, 1], label="Calibrated score per turn")
        dialogue_button.click(
            handlers.score_dialogue,
            [dialogue, aggregate, checkpoint],
            [dialogue_summary, turns, chart],
            api_name="score_dialogue",
        )


def _batch_tab(handlers: Handlers, checkpoint: gr.Dropdown) -> None:
    """The Batch tab: a JSONL or CSV file scored, and the scored file to download."""
    with gr.Tab("Batch"):
        gr.Markdown(BATCH_HELP)
        upload = gr.File(label="File", file_types=[".jsonl", ".csv"])
        separator = gr.Textbox(label="Split string contexts into turns on (optional)", value="")
        batch_button = gr.Button("Score file", variant="primary")
        scored = gr.File(label="Scored file")
        batch_summary = gr.Markdown()
        batch_button.click(
            handlers.score_file, [upload, separator, checkpoint], [scored, batch_summary], api_name="score_file"
        )


def _compare_tab(handlers: Handlers, checkpoint: gr.Dropdown) -> None:
    """The Compare systems tab: 2 to MAX_SYSTEMS system files, their table, grid, plot and verdicts."""
    with gr.Tab("Compare systems"):
        gr.Markdown(COMPARE_HELP)
        system_files = gr.File(
            label="System files", file_count="multiple", file_types=[".jsonl", ".csv"], elem_id="system-files"
        )
        with gr.Row():
            compare_separator = gr.Textbox(label="Split string contexts into turns on (optional)", value="")
            baseline = gr.Textbox(label="Baseline system (optional): a file's name without its extension", value="")
        compare_button = gr.Button("Compare", variant="primary")
        system_table = gr.Dataframe(headers=SYSTEM_HEADERS, label="Systems", interactive=False)
        grid = gr.Dataframe(label=f"Row minus column; * Holm-corrected p < {ALPHA}", interactive=False)
        differences = gr.Plot(label="Paired differences with 95 % intervals")
        verdict = gr.Markdown()
        compare_button.click(
            handlers.compare_files,
            [system_files, compare_separator, checkpoint, baseline],
            [system_table, grid, differences, verdict],
            api_name="compare_files",
        )


def _about_tab(handlers: Handlers, checkpoint: gr.Dropdown) -> None:
    """The About tab: what the scores mean, and the checkpoint's card."""
    with gr.Tab("About"):
        about_text = gr.Markdown()
        about_button = gr.Button("Show checkpoint details")
        about_button.click(handlers.about, [checkpoint], [about_text], api_name="about")


def build_demo(default_checkpoint: str | None = None, extra_checkpoints: tuple[str, ...] = ()) -> gr.Blocks:
    """The demo, its default checkpoint loaded and the other choices found (a ValueError or OSError naming a
    broken one, before anything is served). ``demo.downloads`` holds the scored files (:class:`Downloads`)."""
    scorers = Scorers(default_checkpoint)
    for name in extra_checkpoints:
        if name not in (BUNDLED, scorers.default):
            resolve_checkpoint(name)  # loaded on first use; found and checked now
    choices = list(dict.fromkeys([scorers.default, *extra_checkpoints]))
    downloads = Downloads()
    handlers = Handlers(scorers, downloads)
    with gr.Blocks(title="DEnsity: how human-like is this reply?", delete_cache=GRADIO_DELETE_CACHE) as demo:
        gr.Markdown(
            "# DEnsity\nHow typical of human conversation is a reply? "
            "([paper](https://aclanthology.org/2023.findings-acl.896))"
        )
        checkpoint = gr.Dropdown(choices, value=scorers.default, label="Checkpoint", allow_custom_value=False)
        _replies_tab(handlers, checkpoint)
        _dialogue_tab(handlers, checkpoint)
        _batch_tab(handlers, checkpoint)
        _compare_tab(handlers, checkpoint)
        _about_tab(handlers, checkpoint)
    demo.queue(default_concurrency_limit=CONCURRENCY, max_size=64)
    demo.downloads = downloads
    return demo


def launch(demo: gr.Blocks, **options):
    """``demo.launch(**options)`` with the server refusing uploads over :data:`MAX_FILE_BYTES`."""
    return demo.launch(max_file_size=MAX_FILE_BYTES, **options)


def main() -> None:
    """``python app.py``: the checkpoints from DENSITY_CHECKPOINT and DENSITY_CHECKPOINTS; a broken one is one
    ``error:`` line and exit code 2 at start."""
    logging.basicConfig(level=logging.INFO)
    default = os.environ.get("DENSITY_CHECKPOINT") or None
    extra = tuple(c.strip() for c in os.environ.get("DENSITY_CHECKPOINTS", "").split(",") if c.strip())  # "a, b"
    try:
        demo = build_demo(default, extra)
    except (ValueError, OSError) as err:  # CheckpointError is a ValueError; OSError: Hub and file errors
        print(
            f"error: cannot serve the checkpoints of DENSITY_CHECKPOINT / DENSITY_CHECKPOINTS: {err}", file=sys.stderr
        )
        raise SystemExit(2) from None
    launch(demo, server_name=os.environ.get("GRADIO_SERVER_NAME", "127.0.0.1"), show_error=False)


if __name__ == "__main__":
    main()
