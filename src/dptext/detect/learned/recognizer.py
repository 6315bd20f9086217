"""The learned detector as a recognizer of :mod:`dptext.detect.recognizers` (a name, the
categories it reports, ``find(text) -> [Entity]``), for the detectors that union it with the
rules. It is not in the built-in table (``RECOGNIZERS``), so it runs only where it is asked
for: ``EntityDetector(recognizers=(*builtin_recognizers(), LearnedRecognizer()))`` or
``register("learned", LearnedRecognizer)``. Every instance with the same weights shares one
loaded :class:`~dptext.detect.learned.detector.LearnedDetector` (``shared_detector``). The
entity detector does not import this module (it would close an import circle through
``recognizers.base``): it reads ``shared_detector`` itself."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from dptext.detect.entities import Entity, normalize_entity
from dptext.detect.learned.detector import WEIGHTS, shared_detector
from dptext.detect.learned.tags import CATEGORIES
from dptext.detect.recognizers.base import Recognizer
from dptext.errors import DPTextError


@dataclass
class LearnedRecognizer(Recognizer):
    """Spans of the learned tagger whose mean tag probability is at least ``threshold``, of
    the categories in ``wanted`` (all of :data:`CATEGORIES` by default). ``category`` is the
    one the rule table files it under; :attr:`categories` lists all it reports."""

    name: str = "learned"
    category: str = "PERSON"
    threshold: float = 0.5
    wanted: frozenset[str] = frozenset(CATEGORIES)
    weights: str = str(WEIGHTS)

    def __post_init__(self) -> None:
        unknown = sorted(set(self.wanted) - set(CATEGORIES))
        if unknown:
            raise DPTextError(f"learned recognizer: it reports no {', '.join(unknown)}; "
                              f"choose from {', '.join(CATEGORIES)}")
        if not 0.0 <= self.threshold <= 1.0:
            raise DPTextError(f"learned recognizer: threshold {self.threshold} is not in [0, 1]")

    @property
    def categories(self) -> frozenset[str]:
        return frozenset(self.wanted)

    def find(self, text: str) -> list[Entity]:
        return self.find_many([text])[0]

    def find_many(self, texts: Iterable[str]) -> list[list[Entity]]:
        texts = list(texts)
        found = shared_detector(self.weights).find_many(texts)
        return [[Entity(normalize_entity(t[s.start:s.end]) or t[s.start:s.end], s.category,
                        s.start, s.end)
                 for s in spans if s.score >= self.threshold and s.category in self.wanted]
                for t, spans in zip(texts, found, strict=True)]
