"""Where the scorer's time goes on a GPU: the host's work against the device's, for the same pairs and batches.

    python3 -m benchmarks.gpu_split --data-dir ../shared/data --max-tokens 32768 --dtype bfloat16

Times, each the best of ``--repeats`` after a warm-up, on every DailyDialog test pair:

- ``score``: the whole ``DensityScorer.score()`` call (what a user waits for);
- ``rows``: tokenising and packing the rows (``Encoder.encode``);
- ``batches``: padding every batch on the host (``rows_to_batch``), no copy;
- ``forward``: the encoder over every batch already on the device (``batch_features``), synchronised: the device's
  share, with no host work in between.

If ``score`` is near ``forward``, the GPU is the bound; if near ``rows + batches``, the host is.
"""

from __future__ import annotations

import argparse
import json
import time

import torch

from density_metric import DensityScorer
from density_metric.encoding.features import batch_features, length_sorted_batches, rows_to_batch
from density_metric.io.outputs import write_json

from .device_check import dailydialog_test_pairs


def best_of(repeats: int, function) -> float:
    best = float("inf")
    for _ in range(repeats):
        if torch.cuda.is_available():
            torch.cuda.synchronize()
        start = time.perf_counter()
        function()
        if torch.cuda.is_available():
            torch.cuda.synchronize()
        best = min(best, time.perf_counter() - start)
    return best


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.gpu_split", description=__doc__.split("\n")[0])
    parser.add_argument("--data-dir", default="../shared/data", help="folder with dailydialog/ (default: %(default)s)")
    parser.add_argument("--dtype", default="bfloat16", choices=("float32", "bfloat16"))
    parser.add_argument("--max-tokens", type=int, default=None, help="the scorer's token budget (default: its own)")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--pairs", type=int, default=0, help="the first N of the seeded test pairs (default: all)")
    parser.add_argument("--checkpoint", default=None, help="default: the bundled checkpoint")
    parser.add_argument("--batch-size", type=int, default=None, help="the scorer's pair cap (default: its own)")
    parser.add_argument(
        "--score-only",
        action="store_true",
        help="time score() alone, with nothing but DensityScorer's arguments: also runs an earlier density_metric",
    )
    parser.add_argument("--json", default=None, help="also write the results here")
    args = parser.parse_args(argv)
    options = {
        name: value for name, value in (("max_tokens", args.max_tokens), ("batch_size", args.batch_size)) if value
    }
    scorer = DensityScorer(args.checkpoint, dtype=args.dtype, progress=False, **options)
    encoder = scorer.encoder
    contexts, responses = dailydialog_test_pairs(args.data_dir, args.pairs)
    scorer.score(contexts[:256], responses[:256], warn=False)  # warm-up: kernels, the allocator's pool
    if args.score_only:
        seconds = best_of(args.repeats, lambda: scorer.score(contexts, responses, warn=False))
        report = {"pairs": len(responses), "options": options, "dtype": args.dtype, "score_seconds": seconds}
        report.update(pairs_per_s=len(responses) / seconds, signature=scorer.signature)
        print(json.dumps(report, indent=1))
        return
    rows = encoder.encode(contexts, responses, batch_size=scorer.batch_size).rows
    batches = length_sorted_batches(
        rows.lengths, encoder.pairs_per_batch(scorer.batch_size), encoder.max_tokens, rows.sizes
    )
    pooling, pad = encoder.pair_format.pooling, encoder.tokenizer.pad_token_id
    on_device = [
        {name: value.to(encoder.device) for name, value in rows_to_batch(rows, pad, pooling, index).items()}
        for index in batches
    ]

    def forward():
        with torch.inference_mode(), encoder._autocast():
            for batch in on_device:
                batch_features(encoder.model, batch)

    forward()
    seconds = {
        "score": best_of(args.repeats, lambda: scorer.score(contexts, responses, warn=False)),
        "rows": best_of(args.repeats, lambda: encoder.encode(contexts, responses, batch_size=scorer.batch_size)),
        "batches": best_of(args.repeats, lambda: [rows_to_batch(rows, pad, pooling, index) for index in batches]),
        "forward": best_of(args.repeats, forward),
    }
    n = len(responses)
    report = {
        "pairs": n,
        "batches": len(batches),
        "dtype": args.dtype,
        "max_tokens": encoder.max_tokens,
        "padded_tokens": int(sum(len(index) * int(rows.lengths[index].max()) for index in batches)),
        "device": str(encoder.device),
        "seconds": seconds,
        "pairs_per_s": {name: n / value for name, value in seconds.items()},
        "torch_threads": torch.get_num_threads(),
    }
    print(json.dumps(report, indent=1))
    if args.json:
        write_json(args.json, report, indent=1)


if __name__ == "__main__":
    main()
