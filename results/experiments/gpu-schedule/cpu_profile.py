"""The device command's profile section (benchmarks/device_train.py ``profile``) on this CPU, with the real
all-MiniLM-L6-v2 and the paper's recipe: how many operator calls a training step makes (E1/README.md, Speed).

    bash results/experiments/gpu-schedule/prepare_carry.sh   # .carry/backbone and .carry/data
    PYTHONPATH=. python results/experiments/gpu-schedule/cpu_profile.py > /tmp/cpu_profile.json

Float32, 4 steps after 2 warm-up steps, on the first 4,000 training pairs; about 40 s on 2 cores.
"""

import json
import tempfile
import time
from pathlib import Path

from benchmarks import device_train

work = Path(tempfile.mkdtemp())
args = device_train.parse_args(
    ["paper", "--profile-steps", "4", "--profile-warm-up", "2", "--start", ".carry/backbone", "--data-dir",
     ".carry/data", "--out", str(work / "out"), "--work", str(work), "--mixed-precision", "no"]
)  # fmt: skip
(work / "out").mkdir()
found = {}
device_train.profile(device_train.TrainRun(args, time.monotonic(), {}, work), found, 0.0)
print(json.dumps(found, indent=1))
