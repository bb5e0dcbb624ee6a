"""The device command's profile section (benchmarks/device_train.py ``profile``) on this CPU, with the real
all-MiniLM-L6-v2 and the paper's recipe: how many operator calls a training step makes (E1/README.md, Speed).

    bash results/experiments/gpu-schedule/prepare_carry.sh   # .carry/backbone and .carry/data
    PYTHONPATH=. python results/experiments/gpu-schedule/cpu_profile.py [--per-tensor-adamw] > /tmp/cpu_profile.json

Float32, 4 steps timed and 4 profiled after 2 warm-up steps, on the first 4,000 training pairs; about a minute on 2
cores. The trainer's AdamW is fused, on CUDA and (since c542e66) on the CPU: one kernel for every tensor, so this
counts about what a CUDA step dispatches. ``--per-tensor-adamw`` swaps in torch's default per-tensor loop, which the
trainer ran on the CPU before.
"""

import json
import sys
import tempfile
import time
from pathlib import Path

import torch

from benchmarks import device_train
from density_train.loop.trainer import Trainer

if "--per-tensor-adamw" in sys.argv[1:]:

    def per_tensor(self, model):
        found = own(self, model)
        lr, decay = found.defaults["lr"], found.defaults["weight_decay"]
        return torch.optim.AdamW(model.parameters(), lr=lr, weight_decay=decay, foreach=False, fused=False)

    own, Trainer._optimizer = Trainer._optimizer, per_tensor

work = Path(tempfile.mkdtemp())
args = device_train.parse_args(
    ["paper", "--profile-steps", "4", "--profile-warm-up", "2", "--start", ".carry/backbone", "--data-dir",
     ".carry/data", "--out", str(work / "out"), "--work", str(work), "--mixed-precision", "no"]
)  # fmt: skip
(work / "out").mkdir()
found = {}
device_train.profile(device_train.TrainRun(args, time.monotonic(), {}, work), found, time.monotonic() + 3600)
print(json.dumps(found, indent=1))
