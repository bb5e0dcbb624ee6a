"""How much a pair's score depends on the rest of its batch, per dtype.

    python -m benchmarks.batch_invariance --pairs 1000 --json benchmarks/batch_invariance_cpu.json

The same DailyDialog test pairs are scored as one call (batch size 64, the default), with
batch sizes 1 and 7, in reversed order, and split into calls of 100 rows; each way is compared
with the first, as the largest relative difference of a raw score. On a CPU with AVX512-BF16,
bf16 GEMMs (oneDNN) round a row differently depending on how many rows share the product, and
attention depends on the padded length, so bf16 scores move with the batch; float32 moves only
by float32 rounding. The result decides the CPU default dtype (README, "Speed"). The report names the
machine: on a CPU without bf16 instructions, bf16 is emulated and its numbers are not those of
the native path.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import numpy as np

from density_metric import DensityScorer
from density_metric.encoding.device import machine_description
from density_metric.io.outputs import write_json


def relative_differences(scorer: DensityScorer, contexts, responses) -> dict[str, float]:
    """Largest |s - s_ref| / |s_ref| of each way of batching against one call at the scorer's batch size."""
    reference = scorer.score(contexts, responses).scores
    n = len(responses)
    ways = {}
    batch_size = scorer.batch_size
    for size in (1, 7):
        scorer.batch_size = size
        ways[f"batch_size_{size}"] = scorer.score(contexts, responses).scores
    scorer.batch_size = batch_size
    ways["reversed"] = scorer.score(contexts[::-1], responses[::-1]).scores[::-1]
    ways["calls_of_100"] = np.concatenate(
        [scorer.score(contexts[i : i + 100], responses[i : i + 100]).scores for i in range(0, n, 100)]
    )
    return {name: float(np.max(np.abs(scores - reference) / np.abs(reference))) for name, scores in ways.items()}


def main(argv=None) -> None:
    # Imported here: the functions above serve benchmarks.device_check, where datasets may not import.
    from density_train.data.corpora import load_dailydialog, response_pairs

    from .command_line import check_checkpoint, check_counts, check_dailydialog, check_output

    parser = argparse.ArgumentParser(prog="python -m benchmarks.batch_invariance", description=__doc__.split("\n\n")[0])
    parser.add_argument("--checkpoint", default=None, help="default: the bundled checkpoint")
    parser.add_argument(
        "--data-dir", default="../shared/data", help="folder with dailydialog/ (default: ../shared/data)"
    )
    parser.add_argument("--pairs", type=int, default=1000)
    parser.add_argument("--json", type=Path, help="also write the report here")
    args = parser.parse_args(argv)
    check_counts(parser, args, "--pairs")
    check_output(parser, "--json", args.json)
    dailydialog = check_dailydialog(parser, args.data_dir, "test")
    check_checkpoint(parser, args.checkpoint)

    contexts, responses = response_pairs(load_dailydialog(dailydialog, "test"))
    pick = np.random.default_rng(0).choice(len(responses), size=min(args.pairs, len(responses)), replace=False)
    contexts, responses = [contexts[i] for i in pick], [responses[i] for i in pick]
    report = {"pairs": len(responses), "machine": machine_description("cpu"), "dtypes": {}}
    for dtype in ("float32", "bfloat16"):
        scorer = DensityScorer(args.checkpoint, device="cpu", dtype=dtype, progress=False)
        report["signature_" + dtype] = scorer.signature
        report["dtypes"][dtype] = relative_differences(scorer, contexts, responses)
    print(json.dumps(report, indent=2))
    if args.json:
        write_json(args.json, report)


if __name__ == "__main__":
    main()
