"""The evaluations of a training run, as evaluator objects that :class:`density_train.loop.trainer.Trainer` holds. Each holds its
data, says the metrics it logs (``metric_names``, in the order it returns them) and returns them as a dict that
holds its ``primary_metric``; the trainer calls each with the current model's :class:`ModelOutputs` and the
Gaussians of :class:`GaussianFits`, fitted once per evaluation:

- :class:`SelectionEvaluator`: Recall@1 and MRR over each validation pair's 1 + N candidates (sharded over
  processes);
- :class:`KindAUCs`: per-kind AUCs by f(c, r) and by DEnsity distance, and how the golds' density follows their
  last-turn overlap;
- :class:`HumanJudgments`: correlations with human judgments (``--dev-judgments``);
- :class:`GroundingSignals`: one grounding set's signals (:mod:`density_train.evaluation.grounding_validation`).

The last three read the Gaussians, so they run on one process (:func:`build_evaluators`), each under every
Gaussian (the run's, and ``plain/``: ``--plain-fit-corpus``'s). :mod:`density_train.evaluation.validation` describes the signals,
:mod:`density_metric.correlation` computes the AUCs and correlations, :mod:`density_train.evaluation.model_selection` chooses the model
kept in ``best/``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np
import torch

from density_metric.correlation import auc, pearson, spearman
from density_metric.encoding.features import rows_to_batch
from density_metric.encoding.packing import pack
from density_metric.gaussian import GaussianAccumulator, GaussianStats

from ..data.examples import SelectionData
from ..losses.response_selection import recall_and_mrr
from ..negatives.bland import bland_list, require_bland_list, use_bland_list
from ..negatives.mix import KINDS
from .grounding_validation import GroundingSet, group_metrics
from .validation import DevJudgments, last_turn_overlap

if TYPE_CHECKING:  # for the annotations only: the recipe sits above evaluation (it checks --select-on's metrics)
    from ..config.recipe import TrainConfig


def encode_groups(tokenizer, config: TrainConfig, contexts, candidates) -> dict[str, torch.Tensor]:
    """Model inputs of every (context, candidate) of the groups, group after group, in the run's layout, padded
    to a multiple of ``--pad-multiple`` tokens."""
    rows = pack(config.pair_format, tokenizer, contexts, candidates).rows
    return rows_to_batch(rows, tokenizer.pad_token_id, config.pair_format.pooling, multiple=config.pad_multiple)


class ModelOutputs:
    """The model's features and f(c, r) of (context, candidates) groups, ``eval_batch_size`` contexts per
    forward pass on this process's device; ``accelerator`` for the evaluators that share work over processes."""

    def __init__(self, model, tokenizer, config: TrainConfig, accelerator):
        self.model, self.tokenizer, self.config, self.accelerator = model, tokenizer, config, accelerator

    @torch.no_grad()
    def __call__(self, contexts, groups) -> tuple[np.ndarray, np.ndarray]:
        """Features (n, d) float64 and f(c, r) (n,) float64 of every candidate, group after group."""
        features, logits, size = [], [], self.config.eval_batch_size
        for start in range(0, len(contexts), size):
            batch = encode_groups(
                self.tokenizer, self.config, contexts[start : start + size], groups[start : start + size]
            )
            if self.config.cuda_graphs:  # each batch its own CUDA-graph iteration: copied out before the next
                torch.compiler.cudagraph_mark_step_begin()
            with self.accelerator.autocast():
                f, g = self.model({name: tensor.to(self.accelerator.device) for name, tensor in batch.items()})
            features.append(f.double().cpu().numpy())
            logits.append(g.double().cpu().numpy())
        return np.concatenate(features), np.concatenate(logits)

    def golds(self, data: SelectionData, rows) -> np.ndarray:
        """Features (n, d) of the golds of ``data`` at ``rows``, each with its context."""
        features, _ = self([data.contexts[i] for i in rows], [[data.responses[i]] for i in rows])
        return features


class GaussianFits:
    """The evaluation Gaussians, fitted afresh at each evaluation to the current encoder's features of training
    golds: ``rows`` maps each metric prefix to its golds' rows of ``train`` (``""``: ``valid_fit_pairs`` seeded
    golds; ``"plain/"``: as many of ``--plain-fit-corpus``'s, seeded)."""

    def __init__(self, train: SelectionData, rows: dict[str, np.ndarray]):
        self.train, self.rows = train, rows

    @classmethod
    def of(cls, config: TrainConfig, train: SelectionData) -> GaussianFits:
        """The run's: a ValueError names ``--plain-fit-corpus`` with fewer than 2 training pairs of it."""
        fit = min(config.valid_fit_pairs, len(train))
        rows = {"": np.sort(np.random.default_rng(config.seed).choice(len(train), size=fit, replace=False))}
        if config.plain_fit_corpus:  # the second evaluation Gaussian: golds of that corpus only, seeded
            own = np.flatnonzero(np.asarray(train.sources or [], dtype=object) == config.plain_fit_corpus)
            if len(own) < 2:
                raise ValueError(f"--plain-fit-corpus {config.plain_fit_corpus}: fewer than 2 training pairs of it")
            size = min(config.valid_fit_pairs, len(own))
            rows["plain/"] = np.sort(np.random.default_rng(config.seed).choice(own, size=size, replace=False))
        return cls(train, rows)

    @property
    def prefixes(self) -> list[str]:
        return list(self.rows)

    def __call__(self, outputs: ModelOutputs) -> dict[str, GaussianStats]:
        fitted = {}
        for prefix, rows in self.rows.items():
            features = outputs.golds(self.train, rows)
            accumulator = GaussianAccumulator(features.shape[1])
            accumulator.update(features)
            fitted[prefix] = GaussianStats.fit(accumulator)
        return fitted


class SelectionEvaluator:
    """Recall@1 and MRR of each validation gold among its ``negatives`` (fixed random candidates), the paper's
    task; each process scores its share of the pairs."""

    primary_metric = "recall_at_1"
    needs_gaussians = False

    def __init__(self, valid: SelectionData, negatives: list[list[str]]):
        self.valid, self.negatives = valid, negatives

    def metric_names(self) -> list[str]:
        return ["recall_at_1", "mrr"]

    def __call__(self, outputs: ModelOutputs, gaussians: dict) -> dict[str, float]:
        accelerator, data = outputs.accelerator, self.valid
        mine = range(accelerator.process_index, len(data), accelerator.num_processes)
        totals = torch.zeros(3, device=accelerator.device)
        if len(mine):
            candidates = [[data.responses[i], *self.negatives[i]] for i in mine]
            _, logits = outputs([data.contexts[i] for i in mine], candidates)
            recall, mrr = recall_and_mrr(torch.from_numpy(logits), len(candidates[0]))
            totals += torch.tensor([recall.sum().item(), mrr.sum().item(), float(len(mine))], device=totals.device)
        totals = accelerator.reduce(totals, "sum")
        return {"recall_at_1": (totals[0] / totals[2]).item(), "mrr": (totals[1] / totals[2]).item()}


class KindAUCs:
    """Per negative kind, the AUC of the validation golds against that kind's fixed negative of the same context
    (``kinds``: kind -> one negative per pair), by f(c, r) and by DEnsity's -distance under each Gaussian, and
    how the golds' density follows their word overlap with the last turn (``gold_overlap_spearman``)."""

    needs_gaussians = True

    def __init__(self, valid: SelectionData, kinds: dict[str, list[str]], prefixes: Sequence[str]):
        self.valid, self.kinds, self.prefixes = valid, kinds, list(prefixes)
        self.primary_metric = f"auc_density/{next(iter(kinds))}"

    def metric_names(self) -> list[str]:
        names = [f"auc_f/{kind}" for kind in self.kinds]
        for prefix in self.prefixes:
            names += [f"{prefix}auc_density/{kind}" for kind in self.kinds] + [f"{prefix}gold_overlap_spearman"]
        return names

    def __call__(self, outputs: ModelOutputs, gaussians: dict[str, GaussianStats]) -> dict[str, float]:
        data, kinds = self.valid, list(self.kinds)
        groups = [[data.responses[i], *(self.kinds[kind][i] for kind in kinds)] for i in range(len(data))]
        features, logits = outputs(data.contexts, groups)
        logits = logits.reshape(len(data), -1)
        metrics = {f"auc_f/{kind}": auc(logits[:, 0], logits[:, column]) for column, kind in enumerate(kinds, 1)}
        overlap = last_turn_overlap(data.contexts, data.responses)
        for prefix, stats in gaussians.items():
            scores = -stats.distances(features).reshape(len(data), -1)
            for column, kind in enumerate(kinds, start=1):
                metrics[f"{prefix}auc_density/{kind}"] = auc(scores[:, 0], scores[:, column])
            metrics[f"{prefix}gold_overlap_spearman"] = 100 * spearman(scores[:, 0], overlap)
        return metrics


class HumanJudgments:
    """DEnsity's -distance of the ``dev`` replies against their human scores (Pearson, Spearman, x100) under each
    Gaussian, how it follows their last-turn overlap, and how the people's scores do (no Gaussian in it)."""

    needs_gaussians = True

    def __init__(self, dev: DevJudgments, prefixes: Sequence[str]):
        self.dev, self.prefixes = dev, list(prefixes)
        self.primary_metric = f"{dev.name}_spearman"

    def metric_names(self) -> list[str]:
        names = [f"{prefix}{self.dev.name}_{suffix}" for prefix in self.prefixes for suffix in _HUMAN_SUFFIXES]
        return names + [f"{self.dev.name}_human_overlap_spearman"]

    def __call__(self, outputs: ModelOutputs, gaussians: dict[str, GaussianStats]) -> dict[str, float]:
        dev, metrics = self.dev, {}
        features, _ = outputs(dev.contexts, [[response] for response in dev.responses])
        overlap = last_turn_overlap(dev.contexts, dev.responses)
        for prefix, stats in gaussians.items():
            scores, name = -stats.distances(features), prefix + dev.name
            metrics[f"{name}_pearson"] = 100 * pearson(scores, dev.human)
            metrics[f"{name}_spearman"] = 100 * spearman(scores, dev.human)
            metrics[f"{name}_overlap_spearman"] = 100 * spearman(scores, overlap)
        metrics[f"{dev.name}_human_overlap_spearman"] = 100 * spearman(dev.human, overlap)
        return metrics


_HUMAN_SUFFIXES = ("pearson", "spearman", "overlap_spearman")


class GroundingSignals:
    """The signals of one grounding set (its golds with their echoes and distractors; :func:`group_metrics`)
    under each Gaussian."""

    needs_gaussians = True

    def __init__(self, data: GroundingSet, prefixes: Sequence[str]):
        self.data, self.prefixes = data, list(prefixes)
        self.primary_metric = data.metric_names()[0]

    def metric_names(self) -> list[str]:
        return [prefix + name for prefix in self.prefixes for name in self.data.metric_names()]

    def __call__(self, outputs: ModelOutputs, gaussians: dict[str, GaussianStats]) -> dict[str, float]:
        features, _ = outputs(self.data.contexts, self.data.groups())
        metrics = {}
        for prefix, stats in gaussians.items():
            found = group_metrics(-stats.distances(features), self.data)
            metrics.update({prefix + name: value for name, value in found.items()})
        return metrics


def validation_kinds(config: TrainConfig, train: SelectionData, valid: SelectionData) -> list[str]:
    """The negative kinds of ``config.validation_kinds`` that the validation pairs get one fixed negative of.

    ``all`` leaves out ``same-dialogue`` without dialogues, ``retrieved`` without a validation index file and
    ``bland`` when the training split has no bland reply; an index built for another pool is still an error.
    ``bland`` draws from the *training* split's list (:mod:`density_train.negatives.bland`), which this puts on ``valid``.
    """
    from ..negatives.retrieval import split_path

    wanted = config.validation_kinds
    if not wanted:
        return []
    if wanted == "all":
        kinds = [k for k in KINDS if k != "same-dialogue" or valid.dialogues is not None]
        if not config.retrieval_index or not split_path(config.retrieval_index, "validation").is_file():
            kinds.remove("retrieved")
    else:
        kinds = [kind.strip() for kind in wanted.split(",")]
        unknown = [kind for kind in kinds if kind not in KINDS]
        if unknown:
            raise ValueError(f"validation_kinds: unknown kind(s) {unknown}; kinds: {KINDS}")
    if "bland" in kinds:  # the training split's list, never one mined from the validation pairs
        if wanted == "all" and not bland_list(train):
            kinds.remove("bland")
        else:
            use_bland_list(valid, require_bland_list(train, "--validation-kinds"))
    return kinds


def grounding_sets(config: TrainConfig, given: Sequence[GroundingSet], tokenizer) -> list[GroundingSet]:
    """The grounding sets every evaluation scores: ``--grounding-valid``'s ConvAI2 golds first, then ``given``
    (the grounded corpora's held-out golds, train/commands/train.py), with their lines kept under ``--keep-lines``."""
    sets = list(given)
    if config.grounding_valid:
        try:
            convai2 = GroundingSet.load(config.grounding_valid, config.grounding_valid_pairs)
        except OSError as err:
            raise ValueError(f"--grounding-valid {config.grounding_valid}: {err.strerror or err}") from None
        sets.insert(0, convai2)
    if config.keep_lines:
        sets = [data.with_lines_kept(tokenizer, config.pair_format) for data in sets]
    return sets


def build_evaluators(
    config: TrainConfig,
    valid: SelectionData,
    kinds: dict[str, list[str]],
    fits: GaussianFits,
    dev: DevJudgments | None,
    grounding: Sequence[GroundingSet],
    processes: int,
) -> list:
    """The run's evaluators, in the order their metrics are logged: Recall@1 and MRR of ``valid`` (its
    negatives drawn here), then, on one process only, the per-kind AUCs (``kinds``: one negative per pair of each
    kind), the human judgments ``dev`` and each ``grounding`` set, under the Gaussians of ``fits``."""
    negatives = valid.negatives(config.valid_negatives or config.negatives, config.negatives_seed)
    evaluators: list = [SelectionEvaluator(valid, negatives)]
    if processes == 1:
        evaluators += [KindAUCs(valid, kinds, fits.prefixes)] if kinds else []
        evaluators += [HumanJudgments(dev, fits.prefixes)] if dev is not None else []
        evaluators += [GroundingSignals(data, fits.prefixes) for data in grounding]
    return evaluators
