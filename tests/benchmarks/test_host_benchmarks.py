"""benchmarks/host_pipeline.py and benchmarks/gpu_split.py run end to end on a tiny checkpoint (no timing checked)."""

import json
from pathlib import Path

import pytest

from benchmarks import gpu_split, host_pipeline

DATA = Path(__file__).resolve().parents[3] / "shared" / "data"
needs_data = pytest.mark.skipif(not (DATA / "dailydialog").is_dir(), reason="../shared/data is not beside the checkout")


@needs_data
def test_host_pipeline_reports_every_path_on_both_sets(tiny_checkpoint, tmp_path, monkeypatch):
    from density_metric.encoding import features

    monkeypatch.setattr(features, "batch_features", features.batch_features)  # the benchmark swaps it for zeros
    out = tmp_path / "host.json"
    host_pipeline.main(
        ["--data-dir", str(DATA), "--checkpoint", str(tiny_checkpoint), "--dialogues", "4", "--distinct", "12",
         "--repeats", "1", "--json", str(out)]
    )  # fmt: skip
    report = json.loads(out.read_text())
    for name, entry in report["sets"].items():
        assert set(entry["pairs_per_s"]) == {"former", "packed", "score", "tokenizer"}, name
        assert entry["tokens_read"] > 0 and entry["pairs"] > 0
    assert report["sets"]["distinct"]["distinct_contexts"] == 12


@needs_data
def test_gpu_split_times_the_host_and_the_device_parts(tiny_checkpoint, tmp_path):
    out = tmp_path / "split.json"
    gpu_split.main(
        ["--data-dir", str(DATA), "--checkpoint", str(tiny_checkpoint), "--pairs", "24", "--repeats", "1",
         "--dtype", "float32", "--json", str(out)]
    )  # fmt: skip
    report = json.loads(out.read_text())
    assert report["pairs"] == 24 and set(report["seconds"]) == {"score", "rows", "batches", "forward"}
