"""The reproducibility signature: which scorer and options made a score, and which test compared the scores.

After sacrebleu's ``Signature`` (``sacrebleu/metrics/base.py``): named fields in a fixed order, written as one
``|``-joined line. One class for both lines this package writes:

- the scorer's (:meth:`Signature.scorer`; ``DensityScorer.signature``, in every ``{field}_signature`` column that
  ``score`` writes), ``key=value`` fields:
  ``density_metric=0.1.0|checkpoint=SOURCE@REVISION|max_length=256|dtype=float32|floor=v2|specials=text|torch=...|transformers=...``;
  ``max_response_length=N`` follows ``max_length`` where the reply's cap is not the checkpoint's;
- the significance test's (:meth:`Signature.test`; ``ComparisonResult.signature``), sacrebleu's ``key:value``
  fields, ``test:ar|ar:10000|bs:1000|seed:12345|rtol:1e-05``, then ``|`` and the scorer's where known.

:meth:`Signature.parse` reads either line back (a field's separator is the first ``=`` or ``:`` in it, so a value
may hold the other: ``checkpoint=bundled:density-minilm-dailydialog@...``), and :meth:`Signature.differences` is
the one comparison of two scorers: on :data:`SCORE_DEFINING_FIELDS`, the checkpoint by its revision alone.
"""

from __future__ import annotations

from dataclasses import dataclass

from .version import __version__

# The scorer's fields that decide a score's value; the library versions do not. floor: the policy for replies
# without a word (row_flags.FLOOR_POLICY; "" before it existed); specials: "text" where special-token text is read as
# text ("" before); max_response_length: the reply's cap where it is not the checkpoint's ("": the checkpoint's).
SCORE_DEFINING_FIELDS = ("checkpoint", "max_length", "max_response_length", "dtype", "floor", "specials")
# The same fields in words, for the refusal and compare's help (tests hold their docstrings to the tuple too).
SCORE_DEFINING_WORDS = ", ".join(SCORE_DEFINING_FIELDS[:-1]) + " and " + SCORE_DEFINING_FIELDS[-1]
# The significance test's fields, written key:value as sacrebleu writes them; every other field is key=value.
TEST_FIELDS = ("test", "ar", "bs", "seed", "rtol")


@dataclass(frozen=True)
class Signature:
    """Named fields in order (``{key: value}``, values as text); :meth:`format` writes them, :meth:`parse` reads
    them back."""

    fields: dict[str, str]

    @classmethod
    def scorer(
        cls,
        checkpoint: str,
        max_length: int,
        max_response_length: int | None,
        dtype: str,
        floor: str,
        specials: str = "text",
    ) -> Signature:
        """A scorer's signature: ``checkpoint`` as ``SOURCE@REVISION``, ``max_response_length`` None where the
        reply's cap is the checkpoint's, ``floor`` the floor policy; this package's, torch's and transformers'
        versions beside them."""
        import torch
        import transformers

        fields = {"density_metric": __version__, "checkpoint": checkpoint, "max_length": str(max_length)}
        if max_response_length is not None:
            fields["max_response_length"] = str(max_response_length)
        fields.update(dtype=str(dtype), floor=floor, specials=specials)
        fields.update(torch=torch.__version__, transformers=transformers.__version__)
        return cls(fields)

    @classmethod
    def test(cls, test: str, trials: int, resamples: int, seed: int | None, rtol: float) -> Signature:
        """A significance test's signature: the deciding test, the randomization trials (``ar``), the bootstrap
        resamples (``bs``), the seed (``none``: fresh entropy) and the scores' relative tolerance."""
        seed_text = "none" if seed is None else str(seed)
        return cls({"test": test, "ar": str(trials), "bs": str(resamples), "seed": seed_text, "rtol": f"{rtol:g}"})

    def format(self) -> str:
        """The one line: ``key:value`` for :data:`TEST_FIELDS`, ``key=value`` for the others, joined by ``|``."""
        return "|".join(f"{key}{':' if key in TEST_FIELDS else '='}{value}" for key, value in self.fields.items())

    def __str__(self) -> str:
        return self.format()

    @classmethod
    def parse(cls, text: str) -> Signature:
        """The fields of a line :meth:`format` wrote (or an earlier version: a field it lacks is absent); a part
        without ``=`` or ``:`` is a key with the value ""."""
        fields = {}
        for part in text.split("|"):
            cut = min((index for index in (part.find("="), part.find(":")) if index >= 0), default=len(part))
            fields[part[:cut]] = part[cut + 1 :]
        return cls(fields)

    def score_defining(self) -> dict[str, str]:
        """The :data:`SCORE_DEFINING_FIELDS` (a field the signature lacks: ""), the checkpoint by its revision alone
        (``SOURCE@REVISION``: the content hash of a local folder, a Hub commit), so that one checkpoint loaded from
        two places counts as one."""
        defining = {name: self.fields.get(name, "") for name in SCORE_DEFINING_FIELDS}
        defining["checkpoint"] = defining["checkpoint"].rpartition("@")[2]
        return defining

    def differences(self, other: Signature) -> dict[str, tuple[str, str]]:
        """``{field: (ours, theirs)}`` for each score-defining field on which two scorers' signatures differ (the
        whole values, the checkpoint with its source); empty where the same scorer made both scores."""
        ours, theirs = self.score_defining(), other.score_defining()
        return {
            name: (self.fields.get(name, ""), other.fields.get(name, "")) for name in ours if ours[name] != theirs[name]
        }
