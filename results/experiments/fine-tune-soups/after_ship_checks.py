"""Two checks of the bundled model after a ship, whose numbers the README and the integration test's docstring quote:
the app's second example (app.py), and the integration test's 300 probe cases (seed 2) against echoes and the previous
turn + gold. Usage, from the repository root: PYTHONPATH=. python results/experiments/fine-tune-soups/after_ship_checks.py
(output of the second-round soup: after_ship_checks.txt)."""

from density_train.data.corpora import load_dailydialog

from benchmarks.probes import make_probes
from density_metric import DensityScorer

s = DensityScorer("density_metric/default", device="cpu", dtype="float32")
ctx = ["Excuse me, could you tell me where the train station is?"]
for r in [
    "Sure, go straight two blocks and turn left. You can't miss it.",
    "I like turtles.",
    "station station station",
]:
    print(round(float(s.score([ctx], [r]).scores[0]), 2), r)
cases = make_probes(list(load_dailydialog("../shared/data/dailydialog", "test")["turns"]), 300, seed=2)
contexts = [c["context"] for c in cases]
gold = s.score(contexts, [c["gold"] for c in cases]).scores
for probe in ("echo", "speaker_confused"):
    copy = s.score(contexts, [c[probe] for c in cases]).scores
    print(probe, (gold > copy).mean())
