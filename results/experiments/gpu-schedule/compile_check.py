"""``--compile inductor`` against no compilation on this CPU: the float32 losses of 6 steps of a tiny shared-context
run, without dropout (inductor draws dropout masks with its own generator), and the seconds each run took (the
compiled one's include compiling). The trainer's own test uses ``aot_eager`` instead, which compiles no code.

    PYTHONPATH=. python results/experiments/gpu-schedule/compile_check.py
"""

import json
import sys
import tempfile
import time
from pathlib import Path

from density_metric.encoding.pair_format import PairFormat
from density_train.loop.trainer import Trainer

sys.path.insert(0, str(Path(__file__).resolve().parents[3]))
from tests.tiny import build_tiny_encoder  # noqa: E402
from tests.train.loop.test_training import config_for, data  # noqa: E402

work = Path(tempfile.mkdtemp())
model, tokenizer = build_tiny_encoder(work / "tiny")
model.save_pretrained(work / "tiny")
tokenizer.save_pretrained(work / "tiny")
train, valid = data()
pair_format = PairFormat(max_length=48, max_response_length=16, layout="shared-context")
found = {}
for backend in ("", "inductor"):
    config = config_for(
        work / "tiny", epochs=1, max_steps_per_epoch=6, validation_kinds="", pair_format=pair_format,
        compile=backend, dropout=False, attention_dropout=0.0,
    )  # fmt: skip
    out = work / (backend or "eager")
    started = time.perf_counter()
    Trainer(config, train, valid, out).train(stop_after_steps=6)
    losses = [
        row["loss"] for row in map(json.loads, (out / "log.jsonl").read_text().splitlines()) if row["type"] == "train"
    ]
    found[backend or "eager"] = {"losses": losses, "seconds": round(time.perf_counter() - started, 1)}
found["max_abs_difference"] = max(abs(a - b) for a, b in zip(found["eager"]["losses"], found["inductor"]["losses"]))
print(json.dumps(found, indent=1))
