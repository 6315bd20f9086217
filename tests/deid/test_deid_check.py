"""Clinical content kept and the leak check's independent evidence (issue 44 items 4 and 5)."""

from __future__ import annotations

import pytest

from dptext.detect.clinical import Coverage, clinical_spans
from dptext.detect.leaks import evidence_survivors, survivors
from dptext.detect.normalize import fold

pytestmark = pytest.mark.slow  # outside the fast tier (docs/architecture.md, "Tests")


def kinds(text: str) -> set[tuple[str, str]]:
    return {(s.kind, text[s.start:s.end]) for s in clinical_spans(text)}


@pytest.mark.parametrize("text, kind, value", [
    ("Dx: I48.91, E11.9.", "icd", "I48.91"),
    ("Dx: I48.91, E11.9.", "icd", "E11.9"),
    ("billed CPT 99213, 93000 today", "cpt", "93000"),
    ("Metoprolol 25 mg PO BID", "dose", "25 mg"),
    ("take 1/2 tab qhs", "dose", "1/2 tab"),
    ("K 3.9, Hgb 11.2", "lab", "Hgb 11.2"),
    ("BP 128/76 HR 88", "vital", "BP 128/76"),
    ("O2 sat 97% on RA", "vital", "O2 sat 97%"),
    ("Meds given at 0800 and 1430.", "time", "1430"),
    ("shift 0700-1900 covered", "time", "1900"),
    ("seen at 14:30", "time", "14:30"),
    ("ADMISSION DATE: 03/04/2024", "header", "ADMISSION DATE"),
    ("h/o Crohn's disease", "eponym", "Crohn's disease"),
    ("Bell's palsy on the left", "eponym", "Bell's palsy"),
    ("Homans sign negative", "eponym", "Homans sign"),
    ("hx of Parkinson's.", "eponym", "Parkinson's"),
])
def test_clinical_look_alikes_are_found(text, kind, value):
    assert (kind, value) in kinds(text)


@pytest.mark.parametrize("text, value", [
    ("Mr. Parkinson's daughter called", "Parkinson's"),  # a person: after a title
    ("Parkinson's wife called back", "Parkinson's"),  # before a relative
    ("call 555-1430 today", "1430"),  # a phone number's digits
    ("Pt 4821933 seen", "Pt 4821933"),  # a record number is no lab value
    ("Daughter Will: called", "Daughter Will"),  # a relative's name is no header
    ("A12.34 on file", "A12.34"),  # the shape of a code, not a code
])
def test_identifiers_are_never_clinical_content(text, value):
    assert not any(text[s.start:s.end] == value or value in text[s.start:s.end]
                   for s in clinical_spans(text))


def test_coverage_inside_trim_and_connectors():
    text = "Nguyen Thi Lan   DOB: 2/3/1950; given at 0800 and 1430"
    cov = Coverage(text)
    start = text.index("DOB")
    assert cov.inside(start, start + 3) and not cov.inside(0, 6)
    assert cov.trim(text, 0, start + 3) == (0, len("Nguyen Thi Lan"))
    at = text.index("0800")
    assert cov.only_clinical(text, at, len(text))
    assert not cov.only_clinical(text, 0, 6)


def test_a_diagnosis_code_is_not_read_as_an_obfuscated_number():
    assert fold("Dx I48.91, O80").text == "Dx I48.91, O80"
    assert fold("call 555-l23-4567").text == "call 555-123-4567"  # still folded


def test_check_raises_no_alarm_on_clinical_codes_and_times():
    text = "Dx I48.91 and Z79.01; CPT 99213. Meds at 0800 and 1430. Crohn's disease."
    assert survivors(text, text, []) == []


def test_independent_evidence_finds_names_the_detectors_missed():
    original = ("Pt seen by Thornbury today. Daughter Okonkwo called. The patient is stable. "
                "Then Kayode visited; spoke with stiallfentiall, typo pateint.")
    released = ("Pt seen by Thornbury today. Daughter [PERSON] called. The patient is stable. "
                "Then Kayode visited; spoke with stiallfentiall, typo pateint.")
    got = {(s.category, original[s.start:s.end]) for s in survivors(original, released, [])}
    assert got == {("CAPITALISED", "Thornbury"), ("NAME_LIST", "Kayode"),
                   ("RARE_WORD", "stiallfentiall")}
    # nothing leaks when the names are replaced: no false alarm on ordinary words
    clean = ("Pt seen by [PERSON] today. Daughter [PERSON] called. The patient is stable. "
             "Then [PERSON] visited; spoke with [RESIDUAL], typo pateint.")
    assert evidence_survivors(original, clean) == []


def test_evidence_skips_sentence_starts_titles_and_clinical_words():
    text = "Lasix 40 mg given. Dr. Smith. Eliquis held. Cardiology consulted."
    assert [s.category for s in evidence_survivors(text, text)
            if text[s.start:s.end] != "Smith"] == []


class _Learned:
    def find(self, text):
        from dptext.detect.entities import Entity

        at = text.index("adebayo")
        return [Entity("adebayo", "PERSON", at, at + 7)]


def test_a_learned_detector_is_evidence_too():
    text = "seen with adebayo today"
    got = evidence_survivors(text, text, learned=_Learned())
    assert [(s.category, text[s.start:s.end]) for s in got] in (
        [("LEARNED", "adebayo")], [("NAME_LIST", "adebayo")])


def test_learned_spans_join_the_engines_and_a_rule_wins_where_both_fire(monkeypatch):
    from dptext.detect.categories import resolve_categories
    from dptext.detect.entities import Entity, EntityDetector
    from dptext.detect.recognizers import builtin_recognizers

    text = "Seen with adebayo; MRN 4821933; Dx I48.91."

    class Stub:
        def find_many(self, texts):
            t = texts[0]
            return [[Entity("adebayo", "PERSON", t.index("adebayo"), t.index("adebayo") + 7),
                     Entity("4821933", "PHONE_NUMBER", t.index("4821933"),
                            t.index("4821933") + 7),
                     Entity("i48.91", "ID_NUMBER", t.index("I48"), t.index("I48") + 6)]]

    d = EntityDetector(resolve_categories(["PHI"]), "spacy+learned", builtin_recognizers())
    d.learned = Stub()
    monkeypatch.setattr(EntityDetector, "_from_spacy", lambda self, texts: [[] for _ in texts])
    got = {(e.category, text[e.start:e.end]) for e in d.detect([text])[0]}
    assert ("PERSON", "adebayo") in got  # the learned detector's own find
    assert ("MEDICAL_RECORD", "4821933") in got  # the rule's category wins
    assert not any(v == "4821933" and c == "PHONE_NUMBER" for c, v in got)
    assert not any("I48" in v for _, v in got)  # clinical content drops a learned span
