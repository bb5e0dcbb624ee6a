"""The device command's profile section (benchmarks/device_train.py ``profile``) on this CPU, with the real
all-MiniLM-L6-v2 and the paper's recipe: how many operator calls a training step makes (E1/README.md, Speed).

    bash results/experiments/gpu-schedule/prepare_carry.sh   # .carry/backbone and .carry/data
    PYTHONPATH=. python results/experiments/gpu-schedule/cpu_profile.py [--fused-adamw] > /tmp/cpu_profile.json

Float32, 4 steps after 2 warm-up steps, on the first 4,000 training pairs; about 40 s on 2 cores. The trainer uses
the fused AdamW on CUDA only (one kernel for every tensor); on the CPU torch's default is the per-tensor loop, about
2,000 of a step's operator calls. ``--fused-adamw`` swaps in the fused one here too, to count what a CUDA step
would dispatch.
"""

import json
import sys
import tempfile
import time
from pathlib import Path

import torch

from benchmarks import device_train
from density_train.loop.trainer import Trainer

if "--fused-adamw" in sys.argv[1:]:
    own = Trainer._optimizer

    def fused(self, model):
        found = own(self, model)
        lr, decay = found.defaults["lr"], found.defaults["weight_decay"]
        return torch.optim.AdamW(model.parameters(), lr=lr, weight_decay=decay, fused=True)

    Trainer._optimizer = fused

work = Path(tempfile.mkdtemp())
args = device_train.parse_args(
    ["paper", "--profile-steps", "4", "--profile-warm-up", "2", "--start", ".carry/backbone", "--data-dir",
     ".carry/data", "--out", str(work / "out"), "--work", str(work), "--mixed-precision", "no"]
)  # fmt: skip
(work / "out").mkdir()
found = {}
device_train.profile(device_train.TrainRun(args, time.monotonic(), {}, work), found, 0.0)
print(json.dumps(found, indent=1))
