"""Where a training step's operator calls come from: the paper's recipe on the real all-MiniLM-L6-v2, one step under
``torch.profiler`` with Python stacks, on this CPU (E1/README.md, Speed).

    bash results/experiments/gpu-schedule/prepare_carry.sh   # .carry/backbone and .carry/data
    PYTHONPATH=. python results/experiments/gpu-schedule/op_sites.py

Float32, the fused AdamW the trainer uses, one step after one, on 4,000 training pairs. Counts the operators called
from Python (not nested in another operator or in the backward pass) by the nearest Python frame outside torch's own
files, per file and per line.
"""

import tempfile
from collections import Counter
from pathlib import Path

from torch.profiler import ProfilerActivity, profile

from benchmarks import device_train
from density_train.data.corpora import load_selection_data
from density_train.loop.trainer import Trainer

work = Path(tempfile.mkdtemp())
args = device_train.parse_args(
    ["paper", "--start", ".carry/backbone", "--data-dir", ".carry/data", "--out", str(work), "--mixed-precision", "no"]
)
argv = device_train.train_argv(args, work / "run", 1) + [
    "--limit",
    "4000",
    "--epochs",
    "1",
    "--max-steps-per-epoch",
    "0",
]
parsed = device_train.parsed_train_args(argv)
trainer = Trainer(parsed.config, *load_selection_data(parsed), work / "run")
trainer.save_state = lambda: None
trainer.train(stop_after_steps=1)
with profile(activities=[ProfilerActivity.CPU], with_stack=True) as profiler:
    trainer.train(stop_after_steps=1)

events = [e for e in profiler.events() if e.device_type.name == "CPU"]
operators = [e for e in events if e.name.startswith("aten::")]
sites = Counter()
for event in operators:
    parent, site = event.cpu_parent, None
    while parent is not None:
        if parent.name.startswith(("aten::", "autograd::")):
            break  # nested: not called from Python
        if site is None and ".py(" in parent.name and "site-packages/torch/" not in parent.name:
            site = parent.name
        parent = parent.cpu_parent
    else:
        sites[site or "?"] += 1
print(f"operator calls in the step: {len(operators)}; called from Python: {sum(sites.values())}\n")
files = Counter()
for site, count in sites.items():
    files[site.split("(")[0].split("site-packages/")[-1]] += count
for name, count in files.most_common():
    print(f"{count:5d}  {name}")
print()
for site, count in sites.most_common(20):
    print(f"{count:5d}  {site.split('site-packages/')[-1]}")
