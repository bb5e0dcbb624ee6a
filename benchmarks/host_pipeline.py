"""The scorer's host work alone: everything but the encoder's forward pass, former path against the packed one.

    python -m benchmarks.host_pipeline --data-dir ../shared/data --json benchmarks/host_pipeline_cpu.json

The encoder's features are swapped for zeros (:func:`zero_features`), so what is timed is the work a GPU would wait
on: tokenising, truncating, building rows, padding batches (and, in the former path, the shared-context layout's
(b, 1, t, t) mask, built on the host; the packed path builds it from segment ids on the device, so it is left out
with the forward pass). Two sets of pairs:

- ``dialogues``: every turn of every DailyDialog test dialogue against its prefix, as people score a dialogue (a
  turn recurs in every later context of its dialogue);
- ``distinct``: one pair from each of as many DailyDialog training dialogues, so that no context or turn repeats.

Timed, in turn, ``--repeats`` rounds, each method's best run counting:

- ``former``: ``benchmarks/reference_encoding.py`` (joined contexts tokenised per pair, per-row loops, host mask);
- ``packed``: ``Encoder.encode`` and ``Encoder.features`` (the features path of ``score()``);
- ``score``: the whole ``DensityScorer.score()`` call with the zero encoder (input checks, flags, the floor, the
  distances too);
- ``tokenizer``: the tokenizer alone, one batched call over exactly the texts the packed path reads (each distinct
  kept turn and reply once): the floor for any path that tokenises what it reads.
"""

from __future__ import annotations

import argparse
import functools
import json

import numpy as np
import torch

from density_metric import DensityScorer
from density_metric.encoding import features as features_module
from density_metric.encoding.device import machine_description
from density_metric.encoding.packing import pack
from density_metric.io.outputs import write_json
from density_train.data.corpora import load_dailydialog

from . import reference_encoding
from .command_line import check_checkpoint, check_counts, check_dailydialog, check_output
from .speed import timed_interleaved


def zero_features(dim: int):
    """Stands in for :func:`density_metric.encoding.features.batch_features`: zeros for every candidate of the batch, so
    that the encoder's forward pass and what runs beside it on the device (the mask from segment ids, the pooling)
    are left out."""

    def features(model, batch: dict[str, torch.Tensor]) -> torch.Tensor:
        count = int(batch["feature_valid"].sum()) if "feature_valid" in batch else len(batch["input_ids"])
        return torch.zeros((count, dim))

    return features


def dialogue_pairs(dialogues: list[list[str]]) -> tuple[list[list[str]], list[str]]:
    """Every turn of every dialogue against its prefix."""
    pairs = [(turns[:i], turns[i]) for turns in dialogues for i in range(1, len(turns))]
    return [context for context, _ in pairs], [response for _, response in pairs]


def distinct_pairs(dialogues: list[list[str]], n: int, seed: int = 0) -> tuple[list[list[str]], list[str]]:
    """One (prefix, turn) pair from each of ``n`` dialogues, no dialogue twice."""
    rng = np.random.default_rng(seed)
    picked = rng.choice(len(dialogues), size=min(n, len(dialogues)), replace=False)
    cut = [int(rng.integers(1, len(dialogues[d]))) for d in picked]
    return [dialogues[d][:i] for d, i in zip(picked, cut)], [dialogues[d][i] for d, i in zip(picked, cut)]


def former_path(scorer: DensityScorer, contexts, responses) -> int:
    """Rows and every batch as the former code built them; returns the batches built."""
    encoder = scorer.encoder
    rows = reference_encoding.encode_rows(encoder.pair_format, encoder.tokenizer, contexts, [[r] for r in responses])
    from density_metric.encoding.features import length_sorted_batches

    lengths, sizes = [len(row.ids) for row in rows], [len(row.features) for row in rows]
    batches = length_sorted_batches(lengths, encoder.pairs_per_batch(scorer.batch_size), encoder.max_tokens, sizes)
    for index in batches:
        reference_encoding.rows_to_batch([rows[i] for i in index], encoder.tokenizer.pad_token_id)
    return len(batches)


def packed_path(scorer: DensityScorer, contexts, responses) -> int:
    """The features path of ``score()`` with the zero encoder; returns the pairs it yielded."""
    encoder = scorer.encoder
    packing = encoder.encode(contexts, responses, batch_size=scorer.batch_size)
    pairs = []
    encoder.features(packing, scorer.batch_size, progress=False, each_batch=lambda index, _: pairs.append(len(index)))
    return sum(pairs)


def read_texts(scorer: DensityScorer, contexts, responses) -> list[str]:
    """The distinct texts the packed path tokenises: each kept context turn and each reply, once."""
    packed = pack(scorer.encoder.pair_format, scorer.encoder.tokenizer, contexts, [[r] for r in responses])
    text_ids = packed.text_ids
    return [text for text, code in text_ids.codes.items() if text_ids.lengths(np.array([code]))[0] >= 0]


def tokenizer_alone(tokenizer, texts: list[str]) -> int:
    ids = tokenizer(
        texts,
        add_special_tokens=False,
        split_special_tokens=True,
        verbose=False,
        return_attention_mask=False,
        return_token_type_ids=False,
    )["input_ids"]
    return sum(map(len, ids))


def measure(scorer: DensityScorer, contexts, responses, repeats: int) -> dict:
    texts = read_texts(scorer, contexts, responses)
    outputs, seconds = timed_interleaved(
        {
            "former": lambda: former_path(scorer, contexts, responses),
            "packed": lambda: packed_path(scorer, contexts, responses),
            "score": lambda: scorer.score(contexts, responses, warn=False),
            "tokenizer": lambda: tokenizer_alone(scorer.encoder.tokenizer, texts),
        },
        repeats,
    )
    n = len(responses)
    return {
        "pairs": n,
        "distinct_contexts": len({tuple(context) for context in contexts}),
        "texts_read": len(texts),
        "tokens_read": outputs["tokenizer"],
        "pairs_per_s": {name: n / value for name, value in seconds.items()},
        "packed_over_former": seconds["former"] / seconds["packed"],
        "score_over_former": seconds["former"] / seconds["score"],
        "packed_over_tokenizer_time": seconds["packed"] / seconds["tokenizer"],
    }


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.host_pipeline", description=__doc__.split("\n")[0])
    parser.add_argument("--data-dir", default="../shared/data", help="folder with dailydialog/ (default: %(default)s)")
    parser.add_argument("--checkpoint", default=None, help="default: the bundled checkpoint")
    parser.add_argument("--distinct", type=int, default=4096, help="pairs of the all-distinct set (default: 4096)")
    parser.add_argument("--dialogues", type=int, default=None, help="test dialogues to read (default: all)")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--json", default=None, help="also write the results here")
    parser.add_argument(
        "--score-only",
        action="store_true",
        help="time score() alone, with nothing but DensityScorer: run it from a folder holding an earlier "
        "density_metric to time that one (results/experiments/gpu-device-check/NOTES.md)",
    )
    args = parser.parse_args(argv)
    check_counts(parser, args, "--distinct", "--repeats")
    if args.dialogues is not None:
        check_counts(parser, args, "--dialogues")
    check_output(parser, "--json", args.json)
    dailydialog = check_dailydialog(parser, args.data_dir, "train", "test")
    check_checkpoint(parser, args.checkpoint)

    scorer = DensityScorer(args.checkpoint, device="cpu", dtype="float32", progress=False)
    features_module.batch_features = zero_features(scorer.encoder.dim)
    test = list(load_dailydialog(dailydialog, "test")["turns"])[: args.dialogues]
    train = list(load_dailydialog(dailydialog, "train")["turns"])
    sets = {"dialogues": dialogue_pairs(test), "distinct": distinct_pairs(train, args.distinct)}
    if args.score_only:
        for name, (contexts, responses) in sets.items():
            scorer.score(contexts[:64], responses[:64], warn=False)
            _, seconds = timed_interleaved(
                {"score": functools.partial(scorer.score, contexts, responses, warn=False)}, args.repeats
            )
            print(
                json.dumps(
                    {"set": name, "signature": scorer.signature, "score_pairs_per_s": len(responses) / seconds["score"]}
                )
            )
        return
    results = {
        "command": "python -m benchmarks.host_pipeline "
        + " ".join(argv if argv is not None else __import__("sys").argv[1:]),
        "machine": machine_description("cpu"),
        "checkpoint": scorer.signature,
        "layout": scorer.encoder.pair_format.layout,
        "batch_size": scorer.encoder.pairs_per_batch(scorer.batch_size),
        "max_tokens": scorer.encoder.max_tokens,
        "sets": {name: measure(scorer, *pairs, args.repeats) for name, pairs in sets.items()},
    }
    print("| set | pairs | former | packed | score() | tokenizer alone | packed / former | packed time / tokenizer |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- |")
    for name, entry in results["sets"].items():
        rate = entry["pairs_per_s"]
        print(
            f"| {name} | {entry['pairs']} | {rate['former']:.0f} | {rate['packed']:.0f} | {rate['score']:.0f} | "
            f"{rate['tokenizer']:.0f} | {entry['packed_over_former']:.2f}x | {entry['packed_over_tokenizer_time']:.2f} |"
        )
    print(json.dumps(results, indent=2))
    if args.json:
        write_json(args.json, results)


if __name__ == "__main__":
    main()
