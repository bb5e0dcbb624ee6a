"""``--compile inductor`` (and with ``--compile-mode reduce-overhead --pad-multiple 16``, whose CUDA graphs a CPU
skips: what it checks here is that the mode and the padding compile and keep the numbers) against no compilation on
this CPU: the float32 losses of 6 steps of a tiny shared-context run, without dropout (inductor draws dropout masks
with its own generator), and the seconds each run took (the compiled ones' include compiling). The trainer's own
test uses ``aot_eager`` instead, which compiles no code.

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
arms = {
    "eager": {},
    "inductor": {"compile": "inductor"},
    "reduce-overhead": {"compile": "inductor", "compile_mode": "reduce-overhead", "pad_multiple": 16},
}
for name, flags in arms.items():
    config = config_for(
        work / "tiny", epochs=1, max_steps_per_epoch=6, validation_kinds="", pair_format=pair_format,
        dropout=False, attention_dropout=0.0, **flags,
    )  # fmt: skip
    out = work / name
    started = time.perf_counter()
    Trainer(config, train, valid, out).train(stop_after_steps=6)
    losses = [
        row["loss"] for row in map(json.loads, (out / "log.jsonl").read_text().splitlines()) if row["type"] == "train"
    ]
    found[name] = {"losses": losses, "seconds": round(time.perf_counter() - started, 1)}
for name in list(arms)[1:]:
    found[f"max_abs_difference_{name}"] = max(
        abs(a - b) for a, b in zip(found["eager"]["losses"], found[name]["losses"])
    )
print(json.dumps(found, indent=1))
