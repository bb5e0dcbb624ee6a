"""Two views of a text that the corpora, the negatives and the signals share: :func:`normalise` (texts equal under
it are copies of each other) and :func:`content_words` (what the grounding overlaps count)."""

from __future__ import annotations

import functools
import re

_NOT_ALNUM = re.compile(r"[\W_]+")


@functools.lru_cache(maxsize=1 << 18)  # a corpus's utterances come back again and again
def normalise(text: str) -> str:
    """Lowercase, punctuation and whitespace removed: texts equal under it are copies of each other."""
    return _NOT_ALNUM.sub("", text.lower())


# NLTK's English stop words (nltk.corpus.stopwords, 179 words), written out so nothing is downloaded.
STOP_WORDS = frozenset(
    """i me my myself we our ours ourselves you you're you've you'll you'd your yours yourself yourselves he him
    his himself she she's her hers herself it it's its itself they them their theirs themselves what which who whom
    this that that'll these those am is are was were be been being have has had having do does did doing a an the
    and but if or because as until while of at by for with about against between into through during before after
    above below to from up down in out on off over under again further then once here there when where why how all
    any both each few more most other some such no nor not only own same so than too very s t can will just don
    don't should should've now d ll m o re ve y ain aren aren't couldn couldn't didn didn't doesn doesn't hadn hadn't
    hasn hasn't haven haven't isn isn't ma mightn mightn't mustn mustn't needn needn't shan shan't shouldn shouldn't
    wasn wasn't weren weren't won won't wouldn wouldn't""".split()
)
_TOKEN = re.compile(r"[a-z0-9]+")


def content_words(text: str) -> list[str]:
    """The content-word tokens of ``text``, in order: lowercased runs of ``[a-z0-9]`` (so "don't" gives "don" and
    "t"), without :data:`STOP_WORDS` and single characters."""
    return [token for token in _TOKEN.findall(text.lower()) if len(token) > 1 and token not in STOP_WORDS]
