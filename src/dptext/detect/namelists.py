"""Names of 105 countries as evidence (a leaf of ``detect/``, like :mod:`vocabulary`).

``dptext/data/name_evidence.txt.gz`` is a compact derivative of names-dataset 3.3.1 (Philippe
Remy; MIT in its package metadata; first names and surnames ranked per country from 491
million public Facebook profiles of 105 countries): every one-word name in Latin letters
ranked within the first 2,000 first names or surnames of at least one country, case-folded,
with its best rank (176,402 names, 1 MB; ``tools/build_name_evidence.py`` rebuilds it from the
56 MB package, which dptext does not need at run time). The list is noisy at its edges ("the"
and "pain" rank among some country's surnames), so a listed word is evidence of a name only
beside other evidence: outside the most frequent English words
(:func:`dptext.detect.vocabulary.frequent_words`), after a word that announces a name, in a
column of names.
"""

from __future__ import annotations

import gzip
from functools import cache
from importlib.resources import files

#: a name ranked at most this within a country is a name of that country's everyday use
COMMON_RANK = 1000


@cache
def name_ranks() -> dict[str, int]:
    """Case-folded name -> its best rank in any of the 105 countries (module docstring)."""
    data = gzip.decompress(files("dptext").joinpath("data/name_evidence.txt.gz").read_bytes())
    out: dict[str, int] = {}
    for line in data.decode().splitlines():
        if not line or line.startswith("#"):
            continue
        name, rank, _ = line.split("\t")
        out[name] = int(rank)
    return out


def listed(word: str, rank: int = 2000) -> bool:
    """Whether ``word`` is a name of the list ranked within ``rank`` somewhere."""
    got = name_ranks().get(word.casefold())
    return got is not None and got <= rank


@cache
def rare_listed() -> frozenset[str]:
    """The listed names (rank <= :data:`COMMON_RANK`) that are neither among the 25,000 most
    frequent English words (:func:`english_top`, names not taken out: "held" and "will" are
    some country's names) nor clinical vocabulary: a word of these is a name wherever it
    stands ("Okonkwo", "Chidi"; not "will", "hope", "pain", "held")."""
    from dptext.detect.vocabulary import CLINICAL_ABBREVIATIONS, DRUG_NAMES

    common = english_top()
    return frozenset(n for n, r in name_ranks().items()
                     if r <= COMMON_RANK and n not in common and len(n) >= 2
                     and n not in CLINICAL_ABBREVIATIONS and n not in DRUG_NAMES)


@cache
def everyday_words() -> frozenset[str]:
    """The 3,000 most frequent English words (wordfreq): a listed name among them ("will",
    "hope", "the") needs more than an announcer to be a name."""
    import wordfreq

    return frozenset(wordfreq.top_n_list("en", 3000))


@cache
def english_top() -> frozenset[str]:
    """The 25,000 most frequent English words (wordfreq), names included."""
    import wordfreq

    return frozenset(wordfreq.top_n_list("en", 25_000))
