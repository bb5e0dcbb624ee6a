"""Sharded scoring over 2 CPU processes (gloo) gathers exactly the single-process scores."""

import json
import os
import subprocess

import numpy as np
import torch.distributed as dist
import torch.multiprocessing as mp

from ..ports import torchrun
from ..tiny import synthetic_pairs

N_ROWS = 7  # odd, so the two shards differ in size


def _worker(rank, world_size, init_file, checkpoint, out_dir):
    from density_metric import DensityScorer
    from density_metric.distributed import is_distributed, score_distributed

    dist.init_process_group("gloo", init_method=f"file://{init_file}", rank=rank, world_size=world_size)
    try:
        assert is_distributed()
        scorer = DensityScorer(checkpoint, device="cpu", dtype="float32", batch_size=2)
        shard_sizes = []
        features_and_flags = scorer.features_and_flags
        scorer.features_and_flags = lambda c, r: shard_sizes.append(len(r)) or features_and_flags(c, r)
        result = score_distributed(scorer, *synthetic_pairs(N_ROWS, seed=20))
        assert shard_sizes == [4 - rank]  # rank 0 scores rows 0, 2, 4, 6; rank 1 rows 1, 3, 5
        np.save(os.path.join(out_dir, f"rank{rank}.npy"), np.stack([result.scores, result.calibrated]))
    finally:
        dist.destroy_process_group()


def test_two_gloo_processes_gather_the_single_process_scores(tiny_checkpoint, tiny_scorer, tmp_path):
    mp.spawn(_worker, args=(2, str(tmp_path / "init"), str(tiny_checkpoint), str(tmp_path)), nprocs=2, join=True)
    expected = tiny_scorer.score(*synthetic_pairs(N_ROWS, seed=20))
    for rank in (0, 1):
        scores, calibrated = np.load(tmp_path / f"rank{rank}.npy")
        np.testing.assert_allclose(scores, expected.scores, rtol=1e-5)
        np.testing.assert_allclose(calibrated, expected.calibrated, rtol=1e-5, atol=1e-9)


def test_cli_under_torchrun_writes_all_rows_once(tiny_checkpoint, tiny_scorer, tmp_path):
    contexts, responses = synthetic_pairs(N_ROWS, seed=21)
    rows = [{"context": c, "response": r} for c, r in zip(contexts, responses)]
    (tmp_path / "in.jsonl").write_text("".join(json.dumps(row) + "\n" for row in rows))
    command = torchrun(
        "-m",
        "density_metric",
        "score",
        tmp_path / "in.jsonl",
        "-o",
        tmp_path / "out.jsonl",
        "--checkpoint",
        tiny_checkpoint,
        "--device",
        "cpu",
        "--dtype",
        "float32",
        "--no-progress",
    )
    run = subprocess.run(
        command, capture_output=True, text=True, timeout=300, env={**os.environ, "OMP_NUM_THREADS": "1"}
    )
    assert run.returncode == 0, run.stderr
    out = [json.loads(line) for line in (tmp_path / "out.jsonl").read_text().splitlines()]
    assert [row["response"] for row in out] == responses
    np.testing.assert_allclose(
        [row["density"] for row in out], tiny_scorer.score(contexts, responses).scores, rtol=1e-5
    )
