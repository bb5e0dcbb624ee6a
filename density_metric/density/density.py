"""DEnsity: dialogue response evaluation by density estimation, as an evaluate metric.

A thin wrapper: the model, batching and maths live in the ``density_metric`` package.
"""

import difflib
import inspect
import re

import datasets
import evaluate

from density_metric.io.inputs import as_context, as_response, check_pairs
from density_metric.scoring import DensityScorer

# `python -m density_metric install` writes its stamp here in the installed copy (the package's version, folder and
# script hash); the copy in the package says None. Checked when the metric is loaded: the install is shared by every
# environment with the same HF_HOME.
INSTALLED_FROM = None

_CITATION = """\
@inproceedings{park-etal-2023-density,
    title = "{DE}nsity: Open-domain Dialogue Evaluation Metric using Density Estimation",
    author = "Park, ChaeHun and Lee, Seungil and Rim, Daniel and Choo, Jaegul",
    booktitle = "Findings of the Association for Computational Linguistics: ACL 2023",
    year = "2023",
    publisher = "Association for Computational Linguistics",
    url = "https://aclanthology.org/2023.findings-acl.896",
    pages = "14222--14236",
}
"""

_DESCRIPTION = """\
DEnsity scores a dialogue response by how typical it is of human conversation. A
cross-encoder g reads the context and the response; a Gaussian (mean, pseudo-inverse
covariance) is fitted to g's features of human (context, response) pairs. The score is
the negative Mahalanobis distance s(r) = -sqrt((g(c,r) - mu) P (g(c,r) - mu)^T): higher means
more human-like (a checkpoint may add a repetition term inside the square root; the bundled one
does not). No reference response is needed.
"""

_KWARGS_DESCRIPTION = """
Args (`sources` and `predictions` are accepted as other names of `contexts` and `responses`, as COMET's module
names them and `evaluate.combine` passes them, by `compute` and `add_batch` (`add`: `source`, `prediction`);
`references` is accepted and not read, DEnsity needs none):
    contexts (`list` of `list` of `str`): per row, the dialogue turns before the response,
        oldest first. A plain string per row is read as one turn. An empty list is allowed.
    responses (`list` of `str`): the responses to score, one per row. An empty or blank string, one whose
        every token is unknown to the encoder (emoji only), or one without a letter or digit, gets the floor score: twice the
        largest distance of the checkpoint's held-out human replies, so below every one of them
        (calibrated 0.0); such rows are flagged.

Load-time options (`evaluate.load("density", ...)`):
    checkpoint (`str`, optional): a local checkpoint directory or a Hub model repo id;
        default: the bundled checkpoint. It may also be given as `evaluate.load`'s second argument (its
        `config_name`, as COMET's module takes its model): `evaluate.load("density", "org/name")`. A checkpoint
        that cannot be loaded is refused when the metric is loaded, in one error.
    checkpoint_revision (`str`, optional): Hub revision of `checkpoint`; a commit hash pins the
        scores. (`evaluate.load`'s own `revision` pins this metric script, not the model.)
    device (`str`): "auto" (CUDA if present, else CPU), "cpu", "cuda", "cuda:1", ...
    batch_size (`int`, optional): most pairs per forward pass; default `DensityScorer`'s: 64 on CPU, and on
        CUDA as many as its token budget allows, so that this module and `DensityScorer` score alike.
    dtype (`str`): "auto" (bfloat16 on CUDA, float32 on CPU), "float32", "bfloat16" (a faster
        CPU mode where native: scores then move by up to 2e-2 relative with the batch),
        "float16" (CUDA only).
    max_length (`int`, optional): most tokens per pair, default the checkpoint's (256 for
        the bundled one); the oldest context tokens are dropped first.
    max_response_length (`int`, optional): most reply tokens read, default the checkpoint's (64 for the bundled
        one; up to 320 there, what the encoder's positions leave beside the context, which keeps its budget); a
        longer reply is flagged "truncated_reply".
    Any other keyword that is not one of `evaluate.Metric`'s own (`cache_dir`, `experiment_id`,
    `seed`, ...) is refused with a ValueError naming it.

Returns:
    scores (`list` of `float`): raw DEnsity score s(r) per row (<= 0; higher is more human-like).
    calibrated (`list` of `float`): per row, the share of held-out human responses whose
        distance is larger, in [0, 1]. 0.9: more typical than 90% of real human replies.
    density (`float`): mean of `scores`.
    calibrated_mean (`float`): mean of `calibrated`.
    flags (`list` of `list` of `str`): per row, what makes its score mean little, `[]` for most rows:
        "empty" (an empty or blank reply), "unreadable" (every token unknown) and
        "punctuation" (no letter or digit: "...", "?!"), all three scored at the floor; "non-latin" (the reply or
        the context is mostly letters outside the Latin script: the model reads English; not floored);
        "truncated" (the encoder read part of the pair), with "truncated_reply" (the reply is longer than
        `max_response_length`) and/or "truncated_context" (the context did not fit `max_length` beside it).
        A flagged row also makes `compute` log one warning with the counts.
    signature (`str`): checkpoint id, revision or content hash, options (`floor=v2`: the floor's policy;
        `specials=text`: special-token text such as "[SEP]" in a turn or reply is read as text), library versions.
    ratings (`list` of `float`, only for a checkpoint with a few-shot rating head made by
        `python -m train calibrate`): predicted human rating per row, on the ratings' scale.

Examples:
    >>> density = evaluate.load("density")
    >>> results = density.compute(
    ...     contexts=[["Hi! How was your weekend?"], ["Can you pass me the salt?"]],
    ...     responses=["Great, I went hiking with my sister.", "Weekend weekend weekend."],
    ... )
    >>> sorted(results)
    ['calibrated', 'calibrated_mean', 'density', 'flags', 'scores', 'signature']
    >>> all(0.0 <= value <= 1.0 for value in results["calibrated"])
    True
"""


def _named_parameters(function) -> list[str]:
    """The parameters of ``function`` that can be passed by name, ``self`` and ``**kwargs`` left out."""
    kinds = (inspect.Parameter.POSITIONAL_OR_KEYWORD, inspect.Parameter.KEYWORD_ONLY)
    return [name for name, p in inspect.signature(function).parameters.items() if p.kind in kinds and name != "self"]


def check_options(given, own: list[str]) -> None:
    """A ValueError naming every keyword in ``given`` that is neither one of ``own`` nor one of
    evaluate.Metric's: evaluate.Metric would drop it without a word."""
    # Read from the signature (config_name, cache_dir, ..., and the hash evaluate.load passes),
    # so the options of another evaluate release pass too.
    inherited = _named_parameters(evaluate.Metric.__init__)
    unknown = [name for name in given if name not in inherited]
    if unknown:
        raise ValueError(
            f"evaluate.load('density'): unknown option{'s' if len(unknown) > 1 else ''} "
            f"{_described(unknown, own + inherited)}; the options are {', '.join(own)}, and evaluate's own "
            f"{', '.join(inherited)}"
        )


def _described(unknown: list[str], known: list[str]) -> str:
    """``'chekpoint' (did you mean 'checkpoint'?), 'foo'``: each unknown name, with the closest known one."""
    described = []
    for name in unknown:
        close = difflib.get_close_matches(name, known, n=1)
        described.append(f"{name!r}" + (f" (did you mean {close[0]!r}?)" if close else ""))
    return ", ".join(described)


def check_keywords(method, given) -> None:
    """A ValueError naming every keyword in ``given`` (those that ``method``'s named parameters did not take), with
    the names it takes: evaluate would pass them on to `_compute`, which raises a TypeError."""
    if given:
        known = _named_parameters(method)
        raise ValueError(
            f"{method.__name__}: unknown keyword{'s' if len(given) > 1 else ''} {_described(list(given), known)}; "
            f"it takes {', '.join(known)}"
        )


class _InputName(str):
    """A feature name whose repr says what `evaluate.combine` must be given: its `add` and `add_batch` pass each
    module only the inputs its features name, and raise a KeyError of the first one missing (``'contexts'`` alone,
    where `sources=` and `predictions=` were given)."""

    def __repr__(self):
        return (
            f"{str(self)!r}: evaluate.combine's add and add_batch give density only the inputs named contexts and "
            "responses; pass contexts=... and responses=... (beside predictions= and references= for the other "
            "modules), or give sources= and predictions= to the combined compute, which passes every keyword on"
        )


def _either_name(contexts, responses, sources, predictions, aliases=("sources", "predictions")):
    """`contexts` and `responses`, given by those names or by their `aliases` (COMET's `sources` and `predictions`);
    a ValueError naming both names of a field given twice."""
    for name, alias, value, other in (
        ("contexts", aliases[0], contexts, sources),
        ("responses", aliases[1], responses, predictions),
    ):
        if value is not None and other is not None:
            raise ValueError(f"give {name} or {alias}, not both: {alias} is another name of {name}")
    return (sources if contexts is None else contexts), (predictions if responses is None else responses)


def named_checkpoint(checkpoint, config_name):
    """The checkpoint to load and the config name to give evaluate, from `evaluate.load("density", NAME)` (NAME is
    evaluate's `config_name`, the checkpoint as COMET's module names it) and the `checkpoint` option.

    NAME is a checkpoint as `checkpoint` takes it; evaluate's "default" (or none) names none. Given with a
    different `checkpoint`, a ValueError. evaluate joins its config name into the path of its cache files, so a
    path or an org/name goes to evaluate as one folder name (an absolute path would put them in the checkpoint)."""
    if config_name is None or config_name == "default":
        return checkpoint, config_name
    if checkpoint is not None and str(checkpoint) != config_name:
        raise ValueError(
            f"evaluate.load('density', {config_name!r}, checkpoint={str(checkpoint)!r}): two checkpoints; "
            "name one, as the second argument or as checkpoint="
        )
    return config_name, re.sub(r"[^A-Za-z0-9._-]+", "--", config_name)


@evaluate.utils.file_utils.add_start_docstrings(_DESCRIPTION, _KWARGS_DESCRIPTION)
class Density(evaluate.Metric):
    def __init__(
        self,
        checkpoint=None,
        checkpoint_revision=None,
        device="auto",
        batch_size=None,
        dtype="auto",
        max_length=None,
        max_response_length=None,
        **kwargs,
    ):
        # evaluate.load consumes `revision` for the module script itself, so the model's pin
        # needs a name of its own to reach the scorer.
        check_options(kwargs, _named_parameters(Density.__init__))
        checkpoint, kwargs["config_name"] = named_checkpoint(checkpoint, kwargs.get("config_name"))
        if INSTALLED_FROM is not None:
            from density_metric.install import check_installed_module

            check_installed_module(INSTALLED_FROM, __file__)
        super().__init__(**kwargs)
        self.scorer_options = dict(
            checkpoint=checkpoint,
            revision=checkpoint_revision,
            device=device,
            batch_size=batch_size,
            dtype=dtype,
            max_length=max_length,
            max_response_length=max_response_length,
        )
        self.scorer = None

    def _info(self):
        return evaluate.MetricInfo(
            description=_DESCRIPTION,
            citation=_CITATION,
            inputs_description=_KWARGS_DESCRIPTION,
            # Only the list form: evaluate would pick a string/list variant from the first row
            # and mangle mixed input, so strings are wrapped before they reach Arrow.
            features=datasets.Features(
                {"contexts": datasets.Sequence(datasets.Value("string")), "responses": datasets.Value("string")}
            ),
            reference_urls=["https://aclanthology.org/2023.findings-acl.896"],
            codebase_urls=["https://github.com/ddehun/DEnsity"],
        )

    def _download_and_prepare(self, dl_manager):
        self.scorer = DensityScorer(**self.scorer_options)

    def _feature_names(self):
        # evaluate.combine picks each module's inputs by these names; their repr explains a missing one.
        return [_InputName(name) for name in super()._feature_names()]

    def add(self, *, contexts=None, responses=None, source=None, prediction=None, reference=None, **kwargs):
        """Add one row: `contexts` is its list of turns (or one string), `responses` its response; `source` and
        `prediction` are other names of them (evaluate's singular names for `add`), `reference` is not read. A bad
        value raises a ValueError naming the field, here rather than at `compute`; an unknown keyword, one naming
        it."""
        check_keywords(Density.add, kwargs)
        contexts, responses = _either_name(contexts, responses, source, prediction, ("source", "prediction"))
        contexts, responses = as_context(contexts, None), as_response(responses, None)
        super().add(contexts=contexts, responses=responses)

    def add_batch(self, *, contexts=None, responses=None, sources=None, predictions=None, references=None, **kwargs):
        """Add a batch of rows; see `compute` for the fields and their other names. Bad rows raise a ValueError
        naming the row."""
        check_keywords(Density.add_batch, kwargs)
        contexts, responses = _either_name(contexts, responses, sources, predictions)
        contexts, responses = check_pairs(contexts, responses)
        super().add_batch(contexts=contexts, responses=responses)

    def compute(self, *, contexts=None, responses=None, sources=None, predictions=None, references=None, **kwargs):
        """Score the rows given here, or those added with `add`/`add_batch` if none are given. `predictions` and
        `sources` are other names of `responses` and `contexts` (COMET's, and what `evaluate.combine` passes);
        `references` is accepted and not read: DEnsity needs no reference. Any other keyword is a ValueError naming
        it."""
        check_keywords(Density.compute, kwargs)
        contexts, responses = _either_name(contexts, responses, sources, predictions)
        if contexts is None and responses is None:
            return super().compute()
        contexts, responses = check_pairs(contexts, responses)
        return super().compute(contexts=contexts, responses=responses)

    def _compute(self, contexts, responses):
        if self.scorer is None:
            self._download_and_prepare(None)
        return self.scorer.score(contexts, responses).to_dict()
