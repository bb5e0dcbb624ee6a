"""The evaluations of a training run: Recall@1 and MRR over each validation pair's candidates,
per-kind AUCs by f(c, r) and by DEnsity distance, correlations with human judgments
(:mod:`train.validation` has the measures), and the choice of the model kept in ``best/``
(:mod:`train.selection`).
"""

from __future__ import annotations

import time

import numpy as np
import torch

from density_metric.correlation import auc, pearson, spearman
from density_metric.encoding.features import rows_to_batch
from density_metric.encoding.packing import pack
from density_metric.gaussian import GaussianAccumulator, GaussianStats

from .bland import bland_list, require_bland_list, use_bland_list
from .config import TrainConfig
from .data import SelectionData
from .grounding_validation import group_metrics
from .losses import recall_and_mrr
from .negatives import KINDS, validation_candidates
from .selection import required_metrics, selection_value
from .validation import last_turn_overlap


def encode_groups(tokenizer, config: TrainConfig, contexts, candidates) -> dict[str, torch.Tensor]:
    """Model inputs of every (context, candidate) of the groups, group after group, in the run's layout."""
    rows = pack(config.pair_format, tokenizer, contexts, candidates).rows
    return rows_to_batch(rows, tokenizer.pad_token_id, config.pair_format.pooling)


class Evaluation:
    """The evaluation half of :class:`train.loop.Trainer`, its base class. It reads the trainer's
    ``config``, ``accelerator``, ``model``, ``tokenizer``, ``train_data``, ``valid_data``,
    ``valid_negatives``, ``valid_kinds``, ``fit_rows``, ``plain_fit_rows``, ``dev``, ``grounding_sets`` and
    ``progress``, and calls its
    ``_retrieval_index``, ``_log`` and ``save_state``."""

    def metric_names(self) -> list[str]:
        """The names :meth:`evaluate` logs in this run (the per-kind and dev ones on one process only)."""
        names = ["recall_at_1", "mrr"]
        if self.accelerator.num_processes == 1:
            names += [f"auc_f/{kind}" for kind in self.valid_kinds]
            density = [f"auc_density/{kind}" for kind in self.valid_kinds]
            density += ["gold_overlap_spearman"] if self.valid_kinds else []
            if self.dev is not None:
                suffixes = ("pearson", "spearman", "overlap_spearman")
                density += [f"{self.dev.name}_{suffix}" for suffix in suffixes]
            for grounding in self.grounding_sets:
                density += list(grounding.metric_names())
            names += density
            names += [f"plain/{name}" for name in density] if self.plain_fit_rows is not None else []
            names += [f"{self.dev.name}_human_overlap_spearman"] if self.dev is not None else []  # no Gaussian in it
        return names

    def _validation_candidates(self, valid: SelectionData) -> dict[str, list[str]]:
        """One fixed negative per validation pair for each kind of ``config.validation_kinds``.

        ``all`` leaves out ``same-dialogue`` without dialogues, ``retrieved`` without a
        validation index file and ``bland`` when the training split has no bland reply; an index built for
        another pool is still an error. ``bland`` draws from the *training* split's list (:mod:`train.bland`).
        """
        from .retrieval import split_path

        wanted = self.config.validation_kinds
        if not wanted:
            return {}
        if wanted == "all":
            kinds = [k for k in KINDS if k != "same-dialogue" or valid.dialogues is not None]
            index = self.config.retrieval_index
            if not index or not split_path(index, "validation").is_file():
                kinds.remove("retrieved")
        else:
            kinds = [kind.strip() for kind in wanted.split(",")]
            unknown = [kind for kind in kinds if kind not in KINDS]
            if unknown:
                raise ValueError(f"validation_kinds: unknown kind(s) {unknown}; kinds: {KINDS}")
        if "bland" in kinds:  # the training split's list, never one mined from the validation pairs
            if wanted == "all" and not bland_list(self.train_data):
                kinds.remove("bland")
            else:
                use_bland_list(valid, require_bland_list(self.train_data, "--validation-kinds"))
        retrieval = self._retrieval_index(valid.pool, "validation") if "retrieved" in kinds else None
        return validation_candidates(valid, kinds, seed=self.config.negatives_seed, retrieval=retrieval)

    def _evaluate_and_select(self, epoch: int) -> None:
        """Evaluate, log, and keep the model in best/ if its :func:`selection_value` improved."""
        started = time.monotonic()
        metrics = self.evaluate()
        seconds = round(time.monotonic() - started, 1)
        self._log({"type": "eval", "epoch": epoch, "step": self.progress["global_step"], "seconds": seconds, **metrics})
        names = required_metrics(self.config.select_on, self.config.select_floor)
        missing = [name for name in names if name not in metrics]
        if missing:
            raise ValueError(f"the selection reads {missing}, which are not validation metrics: {sorted(metrics)}")
        if self.progress["global_step"] == 0:  # the start, which a relative --select-floor reads
            self.progress["start"] = {name: metrics[name] for name in names}
        value = selection_value(metrics, self.config.select_on, self.config.select_floor, self.progress.get("start"))
        if value > self.progress["best"]:
            self.progress["best"] = value
            if self.accelerator.is_main_process:
                self.accelerator.unwrap_model(self.model).save(self.out_dir / "best", self.tokenizer)
        self.save_state()

    @torch.no_grad()
    def evaluate(self) -> dict:
        """The validation signals of :mod:`train.validation`: Recall@1 and MRR over each pair's
        1 + N candidates (sharded over processes), then, on one process, the per-kind AUCs by
        f(c, r) and by DEnsity distance and the human-judgment correlations if there are any."""
        config, accelerator = self.config, self.accelerator
        self.model.eval()
        data, group_size = self.valid_data, 1 + (config.valid_negatives or config.negatives)
        mine = range(accelerator.process_index, len(data), accelerator.num_processes)
        totals = torch.zeros(3, device=accelerator.device)
        if len(mine):
            contexts = [data.contexts[i] for i in mine]
            candidates = [[data.responses[i], *self.valid_negatives[i]] for i in mine]
            _, logits = self._outputs(contexts, candidates)
            recall, mrr = recall_and_mrr(torch.from_numpy(logits), group_size)
            totals += torch.tensor([recall.sum().item(), mrr.sum().item(), float(len(mine))], device=totals.device)
        totals = accelerator.reduce(totals, "sum")
        metrics = {"recall_at_1": (totals[0] / totals[2]).item(), "mrr": (totals[1] / totals[2]).item()}
        if accelerator.num_processes == 1 and (self.valid_kinds or self.dev is not None or self.grounding_sets):
            metrics.update(self._density_metrics())
        self.model.train()
        return metrics

    def _outputs(self, contexts, groups) -> tuple[np.ndarray, np.ndarray]:
        """Features (n, d) float64 and f(c, r) (n,) float64 of every candidate, group after group,
        ``eval_batch_size`` contexts per forward pass."""
        features, logits = [], []
        for start in range(0, len(contexts), self.config.eval_batch_size):
            stop = start + self.config.eval_batch_size
            batch = encode_groups(self.tokenizer, self.config, contexts[start:stop], groups[start:stop])
            with self.accelerator.autocast():
                f, g = self.model({name: tensor.to(self.accelerator.device) for name, tensor in batch.items()})
            features.append(f.double().cpu().numpy())
            logits.append(g.double().cpu().numpy())
        return np.concatenate(features), np.concatenate(logits)

    def _fit(self, rows) -> GaussianStats:
        """A Gaussian of the current encoder's features of the training golds ``rows``."""
        train = self.train_data
        features, _ = self._outputs([train.contexts[i] for i in rows], [[train.responses[i]] for i in rows])
        accumulator = GaussianAccumulator(features.shape[1])
        accumulator.update(features)
        return GaussianStats.fit(accumulator)

    def _density_metrics(self) -> dict:
        """Per-kind AUCs (f and DEnsity), dev correlations and grounding signals, with a Gaussian fitted now
        (see train.validation); with ``plain_fit_rows``, the density ones again under their Gaussian (plain/)."""
        gaussians = {"": self._fit(self.fit_rows)}
        if self.plain_fit_rows is not None:
            gaussians["plain/"] = self._fit(self.plain_fit_rows)
        metrics = {}
        if self.valid_kinds:
            data, kinds = self.valid_data, list(self.valid_kinds)
            groups = [[data.responses[i], *(self.valid_kinds[kind][i] for kind in kinds)] for i in range(len(data))]
            features, logits = self._outputs(data.contexts, groups)
            logits = logits.reshape(len(data), -1)
            for column, kind in enumerate(kinds, start=1):
                metrics[f"auc_f/{kind}"] = auc(logits[:, 0], logits[:, column])
            overlap = last_turn_overlap(data.contexts, data.responses)
            for prefix, stats in gaussians.items():
                scores = -stats.distances(features).reshape(len(data), -1)
                for column, kind in enumerate(kinds, start=1):
                    metrics[f"{prefix}auc_density/{kind}"] = auc(scores[:, 0], scores[:, column])
                metrics[f"{prefix}gold_overlap_spearman"] = 100 * spearman(scores[:, 0], overlap)
        if self.dev is not None:
            features, _ = self._outputs(self.dev.contexts, [[response] for response in self.dev.responses])
            overlap = last_turn_overlap(self.dev.contexts, self.dev.responses)
            for prefix, stats in gaussians.items():
                scores, name = -stats.distances(features), prefix + self.dev.name
                metrics[f"{name}_pearson"] = 100 * pearson(scores, self.dev.human)
                metrics[f"{name}_spearman"] = 100 * spearman(scores, self.dev.human)
                metrics[f"{name}_overlap_spearman"] = 100 * spearman(scores, overlap)
            metrics[f"{self.dev.name}_human_overlap_spearman"] = 100 * spearman(self.dev.human, overlap)
        for grounding in self.grounding_sets:  # golds of grounded dialogues with their echoes and distractors
            features, _ = self._outputs(grounding.contexts, grounding.groups())
            for prefix, stats in gaussians.items():
                found = group_metrics(-stats.distances(features), grounding)
                metrics.update({prefix + name: value for name, value in found.items()})
        return metrics
