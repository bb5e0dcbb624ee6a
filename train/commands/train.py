"""``python -m train train``: a run folder from a corpus.

The run trains g and f (:mod:`density_train.loop.trainer`, resumable: rerun the same command), keeps the model at
its best evaluation in ``best/``, then writes ``checkpoint/``: that model, the Gaussian fitted on
the training pairs with it (:mod:`density_train.commands.fit`) and the model card (:mod:`density_train.commands.card`).
"""

from __future__ import annotations

import json
import logging
import math
import shlex
from pathlib import Path

import numpy as np

from density_metric.checkpoint.format import DensityConfig
from density_metric.encoding.device import machine_description
from density_metric.errors import fail
from density_metric.gaussian import ESTIMATORS

from ..arguments import check_at_least, check_out, check_processes, encoder_folder
from ..config.flags import add_recipe_arguments, config_from_args
from ..data.corpora import add_corpus_arguments, load_selection_data
from ..data.judgments import apply_protocol, context_of, load_sets
from ..evaluation.model_selection import selection_value
from ..evaluation.validation import DevJudgments
from ..loop.run_log import compute_summary, evaluations, read_log
from .card import card_fields, check_template, compute_description, render_card
from .fit import WEIGHT_DTYPES, fit_and_write

logger = logging.getLogger(__name__)


def add_train_arguments(parser) -> None:
    """The flags of ``python -m train train``."""
    add_corpus_arguments(parser)
    parser.add_argument("--out", type=Path, required=True, help="run folder; rerunning the command resumes it")
    parser.add_argument("--name", default="")
    parser.add_argument("--repo-id", default=None, help="for the model card's usage example")
    parser.add_argument("--fit-batch-size", type=int, default=64)
    parser.add_argument(
        "--fit-pairs",
        type=int,
        default=0,
        help="fit the final Gaussian on a seeded sample of this many training pairs (default 0: all; for pilots)",
    )
    parser.add_argument("--estimator", choices=ESTIMATORS, default="pinv", help="covariance estimator of the Gaussian")
    parser.add_argument(
        "--weights-dtype",
        choices=WEIGHT_DTYPES,
        default="float32",
        help="dtype of the encoder weights in the written checkpoint (the fit uses them)",
    )
    parser.add_argument(
        "--max-minutes",
        type=float,
        default=0,
        help="save the state and stop after this long (rerun to resume); 0: run to the end",
    )
    add_recipe_arguments(parser)


def load_dev_judgments(data_dir: str):
    """DailyDialog-Zhao's first 20 % (the authors' validation rows, protocol ``dev`` of
    train/data/judgments.py) as validation human judgments; a ValueError if ``data_dir`` has none."""
    if not Path(data_dir).is_dir():
        raise ValueError(
            f"--dev-judgments {data_dir}: no such folder (give the folder that holds dailydialog_zhao.normalized.jsonl)"
        )
    found = load_sets(data_dir, ["dailydialog_zhao"])
    if not found:
        raise ValueError(f"--dev-judgments {data_dir}: no dailydialog_zhao.normalized.jsonl below it")
    if len(found) > 1:
        raise ValueError(
            f"--dev-judgments {data_dir}: {len(found)} dailydialog_zhao.normalized.jsonl below it; name the folder of one"
        )
    [zhao] = found
    index, human = apply_protocol(zhao, "dev")
    if not len(index):
        raise ValueError(f"--dev-judgments {data_dir}: no row of dailydialog_zhao is left for the dev protocol")
    rows = [zhao.rows[i] for i in index]
    contexts = [context_of(row, False) for row in rows]
    return DevJudgments(contexts, [row["response"] for row in rows], np.asarray(human, dtype=np.float64), "zhao_dev")


def load_grounded_valid(args, corpora: list[str], pairs: int) -> list:
    """The grounding signal sets of ``--grounded-valid``: per corpus, up to ``pairs`` seeded golds of its held-out
    split (:meth:`density_train.evaluation.grounding_validation.GroundingSet.from_dialogues`), named ``grounding_<corpus>``; a
    ValueError names the corpus's missing folder flag."""
    from ..data.grounded_corpora import LOADERS
    from ..evaluation.grounding_validation import GroundingSet

    sets = []
    for name in corpora:
        flag = "--" + name.replace("_", "-")
        if not getattr(args, name, None):
            raise ValueError(f"--grounded-valid {name} needs {flag}")
        try:
            valid = LOADERS[name](getattr(args, name), "validation")
        except OSError as err:
            raise ValueError(f"--grounded-valid {name} ({flag}): {err.filename}: {err.strerror}") from None
        sets.append(GroundingSet.from_dialogues(valid, pairs, source=name, name=f"grounding_{name}"))
    return sets


def sample_pairs(pairs: tuple, n: int, seed: int) -> tuple:
    """A seeded sample of ``n`` of the (contexts, responses) ``pairs``, in corpus order; all if ``n`` is 0
    or not smaller than the corpus."""
    if n < 0:
        raise ValueError(f"--fit-pairs must be 0 (all) or positive, got {n}")
    total = len(pairs[0])
    if n == 0 or n >= total:
        return pairs
    index = np.sort(np.random.default_rng(seed).choice(total, size=n, replace=False))
    return tuple([side[i] for i in index] for side in pairs)


def train_command(args) -> None:
    """``python -m train train``: train (or resume) the run in ``--out``, then write its checkpoint."""
    from accelerate import Accelerator

    from ..loop.trainer import Trainer, resolve_mixed_precision

    try:
        check_out(args.out)
        check_at_least("--max-minutes", args.max_minutes, 0)
    except ValueError as err:
        fail(str(err))
    check_template()
    try:
        config = config_from_args(args)
        accelerator = Accelerator(mixed_precision=resolve_mixed_precision(config.mixed_precision))
        warning = check_processes(accelerator.num_processes)
        if warning:
            logger.warning(warning)
        if not config.init_from:
            encoder_folder(config.backbone, "--backbone")  # a missing folder before the corpus is read
        dev = load_dev_judgments(args.dev_judgments) if args.dev_judgments else None
        train_data, valid_data = load_selection_data(args)
        grounded = load_grounded_valid(args, config.grounded_corpora, config.grounding_valid_pairs)
        trainer = Trainer(
            config,
            train_data,
            valid_data,
            args.out,
            accelerator=accelerator,
            dev=dev,
            grounding_sets=grounded,
        )
        # The Gaussian is fitted on the pairs the trainer trained and was evaluated on: with --grounding, its
        # contexts carry their grounding lines, as in the evaluations' Gaussians that chose best/.
        fit_data = (trainer.train_data.contexts, trainer.train_data.responses)
        train_pairs = sample_pairs(fit_data, args.fit_pairs, config.seed)
        valid_pairs = (valid_data.contexts, valid_data.responses)
        progress = trainer.train(stop_after_seconds=args.max_minutes * 60 if args.max_minutes else None)
    except ValueError as err:
        fail(str(err))
    memory = peak_gpu_memory(trainer.accelerator.device)
    if progress["epoch"] < config.epochs:
        print(json.dumps({"stopped": progress, "resume": "run the same command again", **memory}))
        return
    if trainer.accelerator.is_main_process:
        write_checkpoint(args, config, trainer, progress, (train_pairs, valid_pairs), len(train_data), memory)


def peak_gpu_memory(device) -> dict:
    """``{"peak_gpu_memory_gib": ...}``, the most this process's CUDA tensors held on ``device`` (torch's
    ``max_memory_allocated``), or nothing off CUDA."""
    import torch

    if torch.device(device).type != "cuda":
        return {}
    return {"peak_gpu_memory_gib": round(torch.cuda.max_memory_allocated(device) / 2**30, 2)}


def write_checkpoint(
    args, config, trainer, progress: dict, fit_pairs: tuple, train_contexts: int, memory: dict | None = None
) -> None:
    """After a finished run: ``checkpoint/`` from the model kept in ``best/`` (the evaluation the selection
    chose, as the trainer did), the Gaussian fitted on ``fit_pairs``' training pairs with it (validated on its
    validation pairs), and the model card, which counts the corpus's ``train_contexts``."""
    train_pairs, valid_pairs = fit_pairs
    records = read_log(args.out / "log.jsonl")
    if progress["best"] == -math.inf:  # the trainer writes best/ only for an evaluation above -inf
        fail(f"no evaluation met --select-floor {config.select_floor}: nothing was kept in best/ to fit")
    start = progress.get("start")  # the step-0 evaluation's selection metrics, kept in the trainer's state
    best = max(evaluations(records), key=lambda r: selection_value(r, config.select_on, config.select_floor, start))
    accelerator = trainer.accelerator
    hardware = machine_description(accelerator.device)
    compute = compute_description(
        compute_summary(records),
        contexts_per_step=config.batch_size * config.grad_accum * accelerator.num_processes,
        train_contexts=train_contexts,
        hardware=hardware if accelerator.num_processes == 1 else f"{accelerator.num_processes} x {hardware}",
        precision=accelerator.mixed_precision,
    )
    name = args.name or args.out.name
    density_config = DensityConfig(pair_format=config.pair_format, name=name)
    card = render_card(
        card_fields(
            config=config,
            corpus=args.corpus,
            name=name,
            repo_id=args.repo_id or f"<org>/{name}",
            metrics=best,
            train_pairs=len(train_pairs[1]),
            valid_pairs=len(valid_pairs[1]),
            command="python -m train " + shlex.join(args.argv),
            estimator=args.estimator,
            compute=compute,
        )
    )
    report = fit_and_write(
        args.out / "best",
        density_config,
        train_pairs,
        valid_pairs,
        args.out / "checkpoint",
        card=card,
        batch_size=args.fit_batch_size,
        estimator=args.estimator,
        weights_dtype=args.weights_dtype,
    )
    print(json.dumps({"progress": progress, "best": best, "fit": report, **(memory or {})}, indent=2))
