"""Real-browser tests: Debian's Chromium, driven by Playwright, types or uploads, clicks, reads the result.

``.ci/run`` installs Debian's ``chromium`` (apt) and the ``dev`` extra brings the ``playwright`` package, which
downloads no browser. Elsewhere the tests are skipped where either is missing; under CI (``CI=true``) a missing one
fails them instead, so that CI cannot pass without running them. Run them with: pytest tests/app/test_app_browser.py
"""

import os
import shutil
from pathlib import Path

import numpy as np
import pytest

from ..ports import free_port

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
IN_CI = os.environ.get("CI") == "true"
if IN_CI:
    import playwright.sync_api as playwright  # .ci/run installs it: missing, the tests fail
else:
    playwright = pytest.importorskip(
        "playwright.sync_api", reason="pip install playwright (it needs no browser download)"
    )
pytestmark = pytest.mark.skipif(not IN_CI and not Path(CHROMIUM).exists(), reason="Debian's chromium is not installed")

# Chromium as root, offline: no sandbox, no calls home.
FLAGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


def capture(url: str, context: str, replies: str, expected: str, screenshot: Path) -> None:
    """Type a context and replies, click Score, wait until ``expected`` is shown, save a screenshot."""
    with playwright.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, headless=True, args=FLAGS)
        try:
            page = browser.new_page(viewport={"width": 1280, "height": 1100})
            page.goto(url)
            page.get_by_label("Context: one turn per line, oldest first").fill(context)
            page.get_by_label("Candidate replies: one per line", exact=False).fill(replies)
            page.get_by_role("button", name="Score", exact=True).click()
            page.locator(f":text-is('{expected}'):visible").first.wait_for(timeout=60_000)
            page.wait_for_timeout(500)  # let the plot finish drawing
            page.screenshot(path=str(screenshot), full_page=True)
        finally:
            browser.close()


def test_typing_and_clicking_score_shows_the_score_in_the_browser(tiny_checkpoint, tmp_path, monkeypatch):
    from app import build_demo
    from density_metric import DensityScorer

    port = free_port()
    monkeypatch.setenv("GRADIO_TEMP_DIR", str(tmp_path / "gradio"))  # the uploads: not left in /tmp/gradio
    demo = build_demo(str(tiny_checkpoint))
    demo.launch(server_name="127.0.0.1", server_port=port, prevent_thread_lock=True, quiet=True)
    try:
        replies = ["fine thanks", "what what what"]
        scores = DensityScorer(str(tiny_checkpoint), progress=False).score([["hi", "how are you"]] * 2, replies).scores
        best = f"{np.max(scores):.3f}".rstrip("0").rstrip(".")
        capture(f"http://127.0.0.1:{port}/", "hi\nhow are you", "\n".join(replies), best, tmp_path / "app.png")
        assert (tmp_path / "app.png").stat().st_size > 10_000
    finally:
        demo.close()
        demo.downloads.cleanup()


def test_uploading_two_systems_shows_the_comparison_in_the_browser(tiny_checkpoint, tmp_path, monkeypatch):
    import json

    from app import build_demo

    port = free_port()
    paths = []
    for name, replies in (("first", ["hello", "fine thanks"]), ("second", ["x x x", "y y y"])):
        path = tmp_path / f"{name}.jsonl"
        path.write_text(
            "".join(json.dumps({"context": c, "response": r}) + "\n" for c, r in zip(["hi", "bye"], replies))
        )
        paths.append(str(path))
    monkeypatch.setenv("GRADIO_TEMP_DIR", str(tmp_path / "gradio"))  # the uploads: not left in /tmp/gradio
    demo = build_demo(str(tiny_checkpoint))
    demo.launch(server_name="127.0.0.1", server_port=port, prevent_thread_lock=True, quiet=True)
    try:
        with playwright.sync_playwright() as p:
            browser = p.chromium.launch(executable_path=CHROMIUM, headless=True, args=FLAGS)
            try:
                page = browser.new_page(viewport={"width": 1280, "height": 1100})
                page.goto(f"http://127.0.0.1:{port}/")
                page.get_by_role("tab", name="Compare systems").click()
                page.locator("#system-files input[type=file]").set_input_files(paths)
                page.get_by_role("button", name="Compare", exact=True).click()
                page.locator(":text('seed:12345'):visible").first.wait_for(timeout=60_000)
                assert page.locator(":text-is('row - column'):visible").count() >= 1
                page.screenshot(path=str(tmp_path / "compare.png"), full_page=True)
            finally:
                browser.close()
        assert (tmp_path / "compare.png").stat().st_size > 10_000
    finally:
        demo.close()
        demo.downloads.cleanup()
