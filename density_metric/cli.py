"""Command line: ``python -m density_metric score INPUT -o OUTPUT`` and ``python -m density_metric install``."""

from __future__ import annotations

import argparse
import csv
import functools
import json
import logging
import os
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tqdm.auto import tqdm

from .inputs import as_context, as_response

logger = logging.getLogger("density_metric")

FORMATS = {".jsonl": "jsonl", ".json": "jsonl", ".csv": "csv", ".parquet": "parquet"}
CHUNK_ROWS = 4096


@dataclass
class Row:
    """One input row: its record (written back unchanged), where it was, and its pair or error."""

    record: dict[str, Any]
    where: str
    context: list[str] | None = None
    response: str | None = None
    error: str | None = None


def file_format(path: Path, given: str | None) -> str:
    if given:
        return given
    if path.suffix.lower() not in FORMATS:
        raise SystemExit(f"error: cannot tell the format of {path}; use --format jsonl|csv|parquet")
    return FORMATS[path.suffix.lower()]


def read_records(path: Path, fmt: str) -> list[tuple[dict[str, Any] | None, str, str | None]]:
    """(record, location, parse error) per row, in file order."""
    if fmt == "jsonl":
        rows = []
        with open(path, encoding="utf-8") as handle:
            for number, line in enumerate(handle, start=1):
                if not line.strip():
                    continue
                try:
                    record = json.loads(line)
                except json.JSONDecodeError as err:
                    rows.append(({"line": line.rstrip("\n")}, f"line {number}", f"invalid JSON ({err.msg})"))
                    continue
                if not isinstance(record, dict):
                    rows.append(({"value": record}, f"line {number}", "not a JSON object"))
                else:
                    rows.append((record, f"line {number}", None))
        return rows
    if fmt == "csv":
        with open(path, encoding="utf-8", newline="") as handle:
            reader = csv.DictReader(handle)
            rows = []
            for record in reader:
                rows.append((dict(record), f"line {reader.line_num}", None))
            return rows
    import pyarrow.parquet as pq

    return [(record, f"row {index}", None) for index, record in enumerate(pq.read_table(path).to_pylist())]


def parse_row(record, where, error, args) -> Row:
    row = Row(record, where, error=error)
    if error:
        return row
    try:
        for field in (args.context_field, args.response_field):
            if field not in record:
                raise ValueError(f"missing field {field!r}")
        context = record[args.context_field]
        if isinstance(context, str) and args.context_sep is not None:
            context = context.split(args.context_sep) if context else []
        row.context = as_context(context, 0, field=args.context_field)
        row.response = as_response(record[args.response_field], 0, field=args.response_field)
    except ValueError as err:
        row.error = str(err).replace("[0]", "")
    return row


def score_rows(rows: list[Row], score_chunk, *, field: str = "density", chunk_rows: int = CHUNK_ROWS,
               track=iter, error_column: bool = False) -> None:  # fmt: skip
    """Score the good rows chunk by chunk and write ``field`` and ``field_calibrated`` into every record.

    ``score_chunk(contexts, responses)`` returns a DensityResult; ``track`` wraps the list of
    chunks (a progress bar). Bad rows get None, and with ``error_column`` every row gets
    ``field_error`` (None, or where and what the problem is).
    """
    good = [row for row in rows if not row.error]
    for chunk in track([good[i : i + chunk_rows] for i in range(0, len(good), chunk_rows)]):
        result = score_chunk([row.context for row in chunk], [row.response for row in chunk])
        for row, raw, calibrated in zip(chunk, result.scores, result.calibrated):
            row.record[field], row.record[f"{field}_calibrated"] = float(raw), float(calibrated)
    for row in rows:
        if row.error:
            row.record[field] = row.record[f"{field}_calibrated"] = None
        if error_column:
            row.record[f"{field}_error"] = f"{row.where}: {row.error}" if row.error else None


def write_records(path: Path, fmt: str, records: list[dict[str, Any]]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    if fmt == "jsonl":
        with open(path, "w", encoding="utf-8") as handle:
            for record in records:
                handle.write(json.dumps(record, ensure_ascii=False) + "\n")
    elif fmt == "csv":
        fields = list(dict.fromkeys(key for record in records for key in record))
        with open(path, "w", encoding="utf-8", newline="") as handle:
            writer = csv.DictWriter(handle, fieldnames=fields)
            writer.writeheader()
            writer.writerows(records)
    else:
        import pyarrow as pa
        import pyarrow.parquet as pq

        pq.write_table(pa.Table.from_pylist(records), path)


def score_command(args: argparse.Namespace) -> int:
    in_fmt = file_format(args.input, args.format)
    out_fmt = file_format(args.output, args.output_format)
    rows = [parse_row(*entry, args) for entry in read_records(args.input, in_fmt)]
    bad = [row for row in rows if row.error]
    if bad and args.on_error == "raise":
        row = bad[0]
        raise SystemExit(
            f"error: {args.input}, {row.where}: {row.error} ({len(bad)} bad row(s) in all; "
            "--on-error skip scores the others and marks these)"
        )

    from .distributed import is_distributed, score_distributed
    from .scoring import DensityScorer

    rank = int(os.environ.get("RANK", 0))
    device = args.device
    if int(os.environ.get("WORLD_SIZE", 1)) > 1:
        import torch
        import torch.distributed as dist

        use_cuda = torch.cuda.is_available() and device in ("auto", "cuda")
        dist.init_process_group("nccl" if use_cuda else "gloo")
        if use_cuda:
            device = f"cuda:{int(os.environ.get('LOCAL_RANK', 0))}"
    scorer = DensityScorer(
        args.checkpoint,
        args.revision,
        device=device,
        dtype=args.dtype,
        batch_size=args.batch_size,
        max_length=args.max_length,
        progress=False,
    )
    def track(chunks):
        with tqdm(total=sum(map(len, chunks)), desc="DEnsity", unit="pair", disable=args.no_progress or rank != 0) as bar:
            for chunk in chunks:
                yield chunk
                bar.update(len(chunk))

    score_rows(rows, functools.partial(score_distributed, scorer), field=args.output_field, track=track,
               error_column=args.on_error == "skip")  # fmt: skip
    if is_distributed():
        import torch.distributed as dist

        dist.destroy_process_group()
    if rank != 0:
        return 0
    good = len(rows) - len(bad)
    write_records(args.output, out_fmt, [row.record for row in rows])
    for row in bad:
        logger.warning("skipped %s, %s: %s", args.input, row.where, row.error)
    logger.info(
        "scored %d of %d rows (%d skipped) -> %s | %s", good, len(rows), len(bad), args.output, scorer.signature
    )
    return 0


def install_command(args: argparse.Namespace) -> int:
    from .install import install_evaluate_module

    print(f"evaluate module installed: {install_evaluate_module()}")
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m density_metric", description="DEnsity dialogue response scores")
    commands = parser.add_subparsers(dest="command", required=True)

    score = commands.add_parser("score", help="score a JSONL, CSV or parquet file of (context, response) rows")
    score.add_argument("input", type=Path)
    score.add_argument("-o", "--output", type=Path, required=True)
    score.add_argument("--format", choices=sorted(set(FORMATS.values())), help="input format (default: from the extension)")
    score.add_argument("--output-format", choices=sorted(set(FORMATS.values())), help="default: from the extension")
    score.add_argument("--context-field", default="context", help="column with the context (list of turns or string)")
    score.add_argument("--response-field", default="response")
    score.add_argument("--context-sep", default=None,
                       help="split string contexts into turns on this separator (default: a string is one turn)")
    score.add_argument("--output-field", default="density", help="adds FIELD and FIELD_calibrated (default: density)")
    score.add_argument("--on-error", choices=("raise", "skip"), default="raise",
                       help="a bad row stops the run (raise), or is kept unscored and reported (skip)")
    score.add_argument("--checkpoint", default=None, help="local directory or Hub repo id (default: bundled)")
    score.add_argument("--revision", default=None, help="Hub revision; a commit hash pins the scores")
    score.add_argument("--device", default="auto")
    score.add_argument("--dtype", default="auto", choices=("auto", "float32", "bfloat16", "float16"))
    score.add_argument("--batch-size", type=int, default=64)
    score.add_argument("--max-length", type=int, default=None)
    score.add_argument("--no-progress", action="store_true")
    score.set_defaults(func=score_command)

    install = commands.add_parser("install", help="install the evaluate module so evaluate.load('density') works offline")
    install.set_defaults(func=install_command)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(levelname)s %(name)s: %(message)s", stream=sys.stderr)
    return args.func(args)
