"""The README's app screenshot: the app's first example scored by the bundled checkpoint in Debian's Chromium.

    python results/ship/app_screenshot.py docs/app.png

Serves ``app.build_demo()`` on 127.0.0.1 and drives it with the browser test's ``capture`` helper (it waits until
the best reply's score is on screen); prints each reply's raw and calibrated score, best first, for the README.
"""

import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from app import EXAMPLES, build_demo  # noqa: E402
from density_metric import DensityScorer  # noqa: E402
from tests.ports import free_port  # noqa: E402
from tests.test_app_browser import capture  # noqa: E402


def main(out: str) -> None:
    context, replies = EXAMPLES[0]
    lines = replies.split("\n")
    result = DensityScorer(progress=False).score([context.split("\n")] * len(lines), lines)
    for i in np.argsort(-result.scores):
        print(f"{result.scores[i]:9.3f}  {result.calibrated[i]:.3f}  {lines[i]}")
    port = free_port()
    demo = build_demo()
    demo.launch(server_name="127.0.0.1", server_port=port, prevent_thread_lock=True, quiet=True)
    try:
        best = f"{round(float(np.max(result.scores)), 3)}"
        capture(f"http://127.0.0.1:{port}/", context, replies, best, Path(out))
    finally:
        demo.close()


if __name__ == "__main__":
    main(sys.argv[1])
