"""De-identification: the rule recognizers, user recognizers, the residual net, name policies,
language handling and the per-record leak check (docs/deid.md)."""

from __future__ import annotations

import json

import numpy as np
import pytest

from dptext import EmbeddingSpace, mechanism
from dptext.detect import detector
from dptext.detect.language import detect_language
from dptext.detect.leaks import survivors
from dptext.detect.recognizers import (
    DenyListRecognizer,
    builtin_recognizers,
    parse_pattern,
    read_word_list,
)
from dptext.detect.residual import ResidualNet
from dptext.errors import DPTextError
from dptext.targeted import TargetedMechanism, build_deid

WORDS = ["anna", "lee", "met", "the", "patient", "today", "called", "from", "said", "hello",
         "was", "seen", "by", "doctor"] + [f"w{i}" for i in range(40)]


def found(text: str) -> set[tuple[str, str]]:
    """(category, surface) of every built-in rule finding."""
    return {(e.category, text[e.start:e.end]) for r in builtin_recognizers()
            for e in r.find(text)}


def categories_at(text: str, surface: str) -> set[str]:
    start = text.index(surface)
    end = start + len(surface)
    return {e.category for r in builtin_recognizers() for e in r.find(text)
            if e.start < end and start < e.end}


SPACE = dict(words=WORDS, seed=0, dim=6, name="deid-tiny")  # the space fixture (conftest.py)


@pytest.fixture
def custext(space, tmp_path, monkeypatch):
    monkeypatch.setenv("DPTEXT_CACHE", str(tmp_path))
    return mechanism("custext", epsilon=2, k=5, space=space).fit()


# ------------------------------------------------------------ recognizers
@pytest.mark.parametrize("phone", ["(212) 555-0187", "212-555-0187", "212.555.0187",
                                   "+1 212 555 0187", "+12125550187", "2125550187",
                                   "+44 20 7946 0123", "+49 30 12345678",
                                   "+1 219 155 0187", "(219) 155-0187", "219 155 0187"])
def test_phones_in_every_format(phone):
    text = f"Call her at {phone} tomorrow."
    assert ("PHONE_NUMBER", phone) in found(text)


def test_short_local_phone_needs_a_context_word():
    assert ("PHONE_NUMBER", "555-0142") in found("Pager 555-0142 after six.")
    assert not any(c == "PHONE_NUMBER" for c, _ in found("Page 555-0142 of the manual."))


@pytest.mark.parametrize("text,value,category", [
    ("Record number 6578712 was opened.", "6578712", "MEDICAL_RECORD"),
    ("Seen today, MRN 4821933, stable.", "4821933", "MEDICAL_RECORD"),
    ("filed under mrn 2280 pending", "2280", "MEDICAL_RECORD"),
    ("export (chartMRN04857211) done", "04857211", "MEDICAL_RECORD"),
    ("Billing acct # 6620148833 charged", "6620148833", "ACCOUNT_NUMBER"),
    ("the health plan member ID is HPX-77-40921 and", "HPX-77-40921", "HEALTH_PLAN"),
    ("provider license number is 1841007193.", "1841007193", "LICENSE_NUMBER"),
    ("plate 8XYZ432 in the lot", "8XYZ432", "VEHICLE_ID"),
    ("VIN 1HGCM82633A004352 noted", "1HGCM82633A004352", "VEHICLE_ID"),
    ("Device serial SN-CG5-881207X.", "SN-CG5-881207X", "DEVICE_ID"),
    ("SSN on file is 402-19-8877.", "402-19-8877", "US_SSN"),
    ("written as 402 19 8877 on the form", "402 19 8877", "US_SSN"),
    ("last seen at 10.34.201.7 today", "10.34.201.7", "IP_ADDRESS"),
    ("was last reachable at 10.34.201.7. Device", "10.34.201.7", "IP_ADDRESS"),
    ("Compared with 8/79-- the QRS", "8/79", "DATE"),
    ("Dictated by:  FILBERT BRIGHT, M.D.", "FILBERT BRIGHT", "PERSON"),
    ("or at 2001:db8::8a2e:370:7334 today", "2001:db8::8a2e:370:7334", "IP_ADDRESS"),
    ("see https://portal.example.org/u/anna.", "https://portal.example.org/u/anna", "URL"),
    ("write to anna.lee+labs@corvid.example now", "anna.lee+labs@corvid.example",
     "EMAIL_ADDRESS"),
    ("lives at 4417 Old Kettle Rd, Fresno", "4417 Old Kettle Rd", "STREET_ADDRESS"),
    ("Fresno, CA 93726.", "93726", "ZIP_CODE"),
    ("the mailing ZIP on the chart is 93291", "93291", "ZIP_CODE"),
    ("a 32-year-old woman", "32-year-old", "AGE"),
    ("Pt is a 67 y/o male", "67 y/o", "AGE"),
    ("a 94-year-old woman", "94-year-old", "AGE"),
    ("admitted 11/02/2023 and", "11/02/2023", "DATE"),
    ("seen on 2069-04-07.", "2069-04-07", "DATE"),
    ("on the third of July and", "the third of July", "DATE"),
    ("Seen March 3, 2024 for", "March 3, 2024", "DATE"),
    ("seen by Dr. Xzavian Tavares today", "Dr. Xzavian Tavares", "PERSON"),
    ("XGT:holmes", "holmes", "PERSON"),
])
def test_each_category_is_found(text, value, category):
    assert (category, value) in found(text)


@pytest.mark.parametrize("text", [
    "BP 120/80, pulse 72, temperature 98.6 F.",
    "She took 2 tablets of 500 mg twice a day in 2019.",
    "The patient may return in three weeks; will call if worse.",
    "Room 12 on the second floor, bed 4.",
    "A record of the visit was kept.",
])
def test_ordinary_clinical_text_finds_no_identifier(text):
    assert found(text) == set()


def test_an_age_is_never_a_date():
    d = detector(["DATE", "AGE"], "spacy")
    d.recognizers = builtin_recognizers()
    text = "A 32-year-old man and a 67 y/o woman were admitted."
    ents = d.detect([text])[0]
    ages = {text[e.start:e.end] for e in ents if e.category == "AGE"}
    assert ages == {"32-year-old", "67 y/o"}
    assert not [e for e in ents if e.category == "DATE"]


def test_vin_and_card_checksums_refuse_near_misses():
    assert ("VEHICLE_ID", "1HGCM82633A004352") in found("vin 1HGCM82633A004352")
    assert not any(c == "CREDIT_CARD" for c, _ in found("card 4111 1111 1111 1112"))
    assert ("CREDIT_CARD", "4111 1111 1111 1111") in found("card 4111 1111 1111 1111 ok")


# ------------------------------------------------------- user recognizers
def test_user_patterns_with_and_without_context():
    plain = parse_pattern(r"STUDY_ID=CRIMSON-\d{4}")
    assert [e.category for e in plain.find("code CRIMSON-0447 links")] == ["STUDY_ID"]
    ctx = parse_pattern(r"BED@bed,room=\b\d{2}[A-D]\b")
    assert [e.key for e in ctx.find("moved to bed 12B today")] == ["12b"]
    assert ctx.find("vitamin 12B today") == []
    for bad in ("STUDY", "=abc", "1X=abc", "X=(", "X=a*"):
        with pytest.raises(DPTextError):
            parse_pattern(bad)


def test_deny_list_finds_entries_and_their_words(tmp_path):
    path = tmp_path / "deny.txt"
    path.write_text("# staff\nAnna Lee\n\nSt. Kilda Ward\n", encoding="utf-8")
    entries = read_word_list(path, "--deny-list")
    assert entries == ("Anna Lee", "St. Kilda Ward")
    rec = DenyListRecognizer("deny", "DENY_LIST", entries=entries)
    text = "ANNA LEE saw Lee on Kilda ward; annabelle did not."
    assert [text[e.start:e.end] for e in rec.find(text)] == ["ANNA LEE", "Lee", "Kilda", "ward"]
    (tmp_path / "empty.txt").write_text("# nothing\n")
    with pytest.raises(DPTextError, match="no entries"):
        read_word_list(tmp_path / "empty.txt", "--deny-list")
    with pytest.raises(DPTextError, match="no such file"):
        read_word_list(tmp_path / "nope.txt", "--deny-list")


def test_a_deny_listed_name_never_survives(custext):
    # the mechanism would privatize a PERSON word by word, and the detector sees no name here
    # ("quillon" is lower case); the deny list makes it a span replaced whole
    m = TargetedMechanism(custext, entities=["PERSON"], detector="spacy",
                          deny_list=["Ewa Quillon"], name_policy="mechanism")
    texts = ["the patient quillon was seen", "Ewa said hello", "Quillon, Ewa: seen today"]
    for r in m.privatize_batch(texts, rng=0):
        assert "quillon" not in r.text.lower() and "ewa" not in r.text.lower()
        assert r.report.spans["DENY_LIST"]["spans"] >= 1


@pytest.mark.slow
def test_allow_list_drops_detections_and_residual_tokens(custext):
    m = TargetedMechanism(custext, entities=["PERSON", "MEDICAL_RECORD"], detector="spacy",
                          recognizers=True, residual="protect", allow_list=["Zorblax"])
    r = m.privatize("The Zorblax scanner read MRN 4821933.", rng=0)
    assert "Zorblax" in r.text and "4821933" not in r.text


# ------------------------------------------------------------ residual net
def test_residual_net_catches_what_no_detector_claims():
    net = ResidualNet()
    text = ("Seen with Qorvannis Pettleby-Drume today; code FB59, ext 84710, mail q@x.io. "
            "Took 500 mg in 2019, BP 120/80. The Patient denies pain.")
    got = {text[e.start:e.end] for e in net.find(text)}
    assert {"Qorvannis", "Pettleby-Drume", "FB59", "84710", "q@x.io"} <= got
    # a vital sign is clinical content, kept (detect/clinical.py)
    assert not got & {"500", "2019", "The", "Patient", "Seen", "Took", "BP", "120/80"}
    # a span already detected is not found again
    assert net.find("Qorvannis came", [type("S", (), {"start": 0, "end": 9})()]) == []


def test_residual_protect_hides_made_up_names_the_detectors_miss(custext):
    texts = ["report from Vrellix about Quandrosa", "Ms Ubbergast called from Tolvania."]
    m = TargetedMechanism(custext, entities=["PERSON", "GPE"], detector="spacy",
                          residual="protect", name_policy="placeholder")
    for r in m.privatize_batch(texts, rng=0):
        for name in ("Vrellix", "Quandrosa", "Ubbergast", "Tolvania"):
            assert name not in r.text
        assert r.report.residual["policy"] == "protect"
    reported = TargetedMechanism(custext, entities=["PERSON"], detector=None, residual="report")
    r = reported.privatize_spans([texts[0]], [[]], rng=0)[0]
    assert r.text == texts[0] and r.report.residual["tokens"] == 2
    assert "residual net       2 tokens" in str(r.report)


# ---------------------------------------------------- titles with their name
@pytest.mark.parametrize("text,span", [
    ("Dear Dr. Smith,\nThank you for seeing her.", "Dear Dr. Smith"),
    ("She was seen by Dr Smith today.", "Dr Smith"),
    ("Mrs. J. Lopez called about the refill.", "Mrs. J. Lopez"),
    ("Prof. Ana Ruiz reviewed the scan.", "Prof. Ana Ruiz"),
    ("Dear Ana Ruiz,\nthanks for the referral.", "Dear Ana Ruiz"),
    ("Mr. Villegas\nThe patient is stable.", "Mr. Villegas"),
    ("SEEN BY DR. OKAFOR IN THE ED.", "DR. OKAFOR"),
])
def test_a_title_and_its_name_are_one_name_span(text, span):
    m = TargetedMechanism(mechanism("custext", epsilon=2, k=5, space=EmbeddingSpace(
        WORDS, np.eye(len(WORDS), 6), name="deid-eye")), entities="PHI", detector="spacy",
                          recognizers=True)
    names = [text[s.start:s.end] for s in m.detect([text])[0] if s.category == "PERSON"]
    assert span in names


@pytest.mark.parametrize("text", ["Dear Colleague,\nplease see", "Dear Sir, the patient",
                                  "Dear Patient,\nyour results"])
def test_a_salutation_before_an_ordinary_word_is_no_name(text):
    assert not {c for c, _ in found(text) if c == "PERSON"}


def test_name_treatments_keep_the_title_and_draw_from_the_population_law(custext):
    from dptext.targeted.surrogates import name_law, split_title, surrogate_name

    assert split_title("Dear Dr. Smith") == ("Dear Dr. ", "Smith")
    assert split_title("Mrs. J. Lopez") == ("Mrs. ", "J. Lopez")
    assert split_title("Dr.") == ("", "Dr.")  # nothing of the name left: no prefix
    surnames = set(name_law("last")[0])
    gen = np.random.default_rng(0)
    for _ in range(300):  # a surname of the law, whatever the input (tests/test_surrogates_law)
        out = surrogate_name("Dear Dr. Smith", gen)
        assert out.startswith("Dear Dr. ") and out[9:] in surnames
    text = "Dear Dr. Smith, thank you."
    spans = [[type("S", (), {"start": 0, "end": 14, "category": "PERSON"})()]]
    ph = TargetedMechanism(custext, entities=["PERSON"], detector=None, name_policy="placeholder")
    assert ph.privatize_spans([text], spans, rng=0)[0].text == "Dear Dr. [PERSON], thank you."


def _titled_gold(records):
    """(record, gold NAME span) where a title stands right before the name."""
    import re

    title = re.compile(r"(?:Dear\s+)?(?:Dr|Mr|Mrs|Ms|Miss|Prof)\.?\s+$")
    return [(r, g) for r in records for g in r.spans if g.category == "NAME"
            and title.search(r.text[max(0, g.start - 16):g.start])]


def _one_span_with_title(m, records) -> int:
    texts = sorted({r.text for r, _ in records})
    spans = dict(zip(texts, m.detect(texts), strict=True))
    for r, g in records:
        lead = len(r.text[:g.start].rstrip().rsplit(None, 1)[-1])  # the title's first letter
        covering = [s for s in spans[r.text] if s.start <= g.start and g.end <= s.end]
        assert covering and covering[0].category == "PERSON", r.text[g.start:g.end]
        assert covering[0].start <= g.start - lead - 1, r.text[covering[0].start:g.end]
    return len(records)


def test_titled_names_are_one_span_on_generated_and_i2b2_notes(space):
    import importlib.util
    from pathlib import Path

    from dptext.deid.gold import read_gold
    from dptext.deid.notes import generate_notes

    m = build_deid("custext", epsilon=2, k=5, space=space, detector="spacy", languages=None)
    assert _one_span_with_title(m, _titled_gold(generate_notes(40, seed=11))) >= 20
    spec = importlib.util.find_spec("philter_lite")
    if spec is None:
        pytest.skip("philter-lite (its i2b2 notes) is not installed")
    i2b2 = read_gold(Path(spec.submodule_search_locations[0]) / "data" / "i2b2_xml")
    assert _one_span_with_title(m, _titled_gold(i2b2)) >= 4


# ------------------------------------------------------------ name policy
def test_name_policies(custext):
    text = "anna lee met the doctor"
    spans = [[type("S", (), {"start": 0, "end": 8, "category": "PERSON"})()]]
    sur = TargetedMechanism(custext, entities=["PERSON"], detector=None, name_policy="surrogate")
    outs = {sur.privatize_spans([text], spans, rng=s)[0].text.split(" met")[0]
            for s in range(20)}
    assert len(outs) > 10 and "anna lee" not in outs
    r = sur.privatize_spans([text], spans, rng=0)[0]
    assert r.report.epsilon == 0 and "independently of the input" in str(r.report)
    ph = TargetedMechanism(custext, entities=["PERSON"], detector=None, name_policy="placeholder")
    assert ph.privatize_spans([text], spans, rng=0)[0].text == "[PERSON] met the doctor"
    big = mechanism("custext", epsilon=500, k=5, space=custext.space).fit()
    mech = TargetedMechanism(big, entities=["PERSON"], detector=None, name_policy="mechanism")
    r = mech.privatize_spans([text] * 5, spans * 5, rng=0)
    unchanged = sum(x.report.spans["PERSON"]["unchanged"] for x in r)
    assert unchanged == sum(x.text.casefold().startswith("anna lee ") for x in r) > 0
    assert "returned unchanged by the mechanism" in str(r[0].report)
    with pytest.raises(DPTextError, match="name_policy"):
        TargetedMechanism(custext, detector=None, name_policy="hide")


def test_deid_detection_drops_durations_credentials_and_clinical_words_keeps_mentions(space):
    from dptext.detect.vocabulary import is_clinical

    m = build_deid("custext", epsilon=2, k=5, space=space, detector="spacy", languages=None)

    def spans(text):
        return {(s.category, text[s.start:s.end]) for s in m.detect([text])[0]}

    text = ("Seen two weeks ago and again today; follow up in 3 months. Next visit "
            "March 3, 2024.")
    got = spans(text)
    assert ("DATE", "March 3, 2024") in got
    assert not {v for c, v in got if "week" in v or "today" in v or "months" in v}
    got = spans("Attending: Don Quarlow, MD\nStarted Prednisone 10 mg PO QD and Atenolol.")
    assert not {v for _, v in got if v in ("MD", "PO", "QD", "Prednisone", "Atenolol")}
    assert is_clinical("ED") and not is_clinical("Ed") and not is_clinical("Aki")
    text = "She lives in Merced. Address: 12 Oak Rd, Merced, CA 95340. Ms Vandermolen called."
    got = [(s.category, text[s.start:s.end]) for s in m.detect([text])[0]]
    assert sum(v == "Merced" for _, v in got) == 2  # the mention the engine missed too


# ----------------------------------------------- places and organisations whole
def test_places_and_organisations_are_replaced_whole_by_their_kind(space):
    from dptext.targeted.surrogates import WORD_SURROGATES

    big = mechanism("custext", epsilon=500, k=5, space=space).fit()  # returns its input
    text = "anna lee met the doctor"  # words of the space: the mechanism keeps them
    spans = [[type("S", (), {"start": 0, "end": 4, "category": "GPE"})(),
              type("S", (), {"start": 5, "end": 8, "category": "ORG"})(),
              type("S", (), {"start": 13, "end": 23, "category": "EVENT"})()]]
    sur = TargetedMechanism(big, detector=None, word_policy="surrogate")
    for seed in range(50):
        r = sur.privatize_spans([text], spans, rng=seed)[0]
        assert r.text.endswith(" met [EVENT]")
        head = r.text[:-len(" met [EVENT]")]  # a city (of one or more words), an organisation
        assert any(head.startswith(p + " ") and head[len(p) + 1:] in WORD_SURROGATES["ORG"]
                   for p in WORD_SURROGATES["GPE"]), head
        assert r.report.epsilon == 0 and r.report.spans["GPE"]["unchanged"] == 0
    # a surrogate of the input's kind (a city for a city), CAPITALS kept
    pool = WORD_SURROGATES["GPE"]
    for seed in range(40):
        out = sur.privatize_spans(["SPRINGFIELD"], [[type("S", (), {
            "start": 0, "end": 11, "category": "GPE"})()]], rng=seed)[0].text
        assert out.isupper() and out.title() in {p.title() for p in pool}
    r = sur.privatize_spans([text], spans, rng=0)[0]
    assert "of the same kind" in str(r.report) and "returned unchanged" not in str(r.report)
    # the word mechanism is an explicit opt-in: what it returns unchanged is counted and named
    mech = TargetedMechanism(big, detector=None, word_policy="mechanism")
    r = mech.privatize_spans([text], spans, rng=0)[0]
    assert r.text.casefold().startswith("anna lee ")
    assert r.report.spans["GPE"]["unchanged"] == r.report.spans["ORG"]["unchanged"] == 1
    assert "3 detected word span(s) returned unchanged by the word mechanism" in str(r.report)
    assert "(EVENT 1, GPE 1, ORG 1)" in r.report.document_guarantee()
    assert build_deid(big).word_policy == "surrogate"
    with pytest.raises(DPTextError, match="word_policy"):
        TargetedMechanism(big, detector=None, word_policy="keep")


def test_deid_release_of_generated_notes_passes_the_leak_check(space):
    from dptext.deid.check import check_records
    from dptext.deid.notes import generate_notes

    big = mechanism("custext", epsilon=500, k=5, space=space).fit()  # returns its input
    m = build_deid(big, detector="spacy", languages=None)
    notes = [r.text for r in generate_notes(30, seed=5)]
    released = [r.text for r in m.privatize_batch(notes, rng=1)]
    result = check_records(((i, [o], [r]) for i, (o, r) in
                            enumerate(zip(notes, released, strict=True))),
                           m._detector, m._residual)
    assert result.compared == 30 and result.by_category == {}
    assert any("Dear Dr. " in r for r in released)


# --------------------------------------------------------------- languages
def test_language_detection_on_short_notes():
    assert detect_language("Pt seen today, MRN 4821933. BP 120/80, stable.").code == "en"
    assert detect_language("患者王伟，电话13800138000，住在北京市朝阳区。").code == "zh"
    assert detect_language("Die Patientin wurde am Montag in Berlin aufgenommen und klagt "
                           "über starke Schmerzen im Bauch.").code == "de"


def test_unsupported_languages_are_never_passed_through(custext):
    zh = "患者王伟，电话13800138000，住在北京市朝阳区。"
    de = ("Die Patientin Frau Krause wurde am Montag in Berlin aufgenommen und klagt über "
          "starke Schmerzen im Bauch.")
    en = "the patient was seen today"
    m = TargetedMechanism(custext, entities=["PERSON"], detector="spacy", languages=["en"])
    out = m.privatize_batch([zh, en, de], rng=0)
    assert out[0].text == "" and "language zh" in out[0].report.withheld
    assert out[2].text == "" and "language de" in out[2].report.withheld
    assert out[1].text == en and out[1].report.withheld is None
    whole = TargetedMechanism(custext, entities=["PERSON"], detector="spacy", languages=["en"],
                              other_languages="whole")
    r = whole.privatize_batch([de], rng=0)[0]
    assert getattr(r.report, "withheld", None) is None and r.text != de
    assert "Krause" not in r.text


# -------------------------------------------------------------- leak check
def test_survivors_exact_digits_and_name_parts():
    original = "Anna Ferncastle called from (212) 555-0187 about MRN 4821933 in 2019."
    ents = [type("E", (), {"category": c, "start": original.index(v),
                           "end": original.index(v) + len(v)})()
            for c, v in (("PERSON", "Anna Ferncastle"), ("PHONE_NUMBER", "(212) 555-0187"))]
    clean = "[PERSON] called from [PHONE_NUMBER] about MRN [MEDICAL_RECORD] in 2019."
    assert survivors(original, clean, ents) == []
    leaky = "Ms Ferncastle called from 212 555 0187 about MRN 4821-933 in 2019."
    got = sorted(s.category for s in survivors(original, leaky, ents))
    assert got == ["NUMBER", "PERSON", "PHONE_NUMBER"]


def test_check_withholds_a_record_with_a_surviving_name(space):
    big = mechanism("custext", epsilon=500, k=5, space=space).fit()  # returns its input
    m = TargetedMechanism(big, entities=["PERSON"], detector=None, name_policy="mechanism",
                          check=True)
    text = "anna lee met the doctor"
    spans = [[type("S", (), {"start": 0, "end": 8, "category": "PERSON"})()]]
    r = m.privatize_spans([text], spans, rng=0)[0]
    assert r.text == "" and r.report.withheld.startswith("surviving identifier: PERSON")
    assert "anna" not in json.dumps(r.report.to_dict())
    ok = TargetedMechanism(big, entities=["PERSON"], detector=None, name_policy="placeholder",
                           check=True).privatize_spans([text], spans, rng=0)[0]
    assert ok.text == "[PERSON] met the doctor" and ok.report.withheld is None


def test_build_deid_end_to_end_on_a_clinical_note():
    m = build_deid("custext", epsilon=2, k=5,
                   space=EmbeddingSpace(WORDS, np.eye(len(WORDS), 6), name="deid-eye"))
    note = ("Progress note: Marisol Ferndale-Ostrowski (MRN 5583920), a 32-year-old, was seen "
            "on 03/14/2024 by Dr. Xzavian Tavares. Call +1 559 555 0142 or "
            "m.ferndale@zephyrmail.example. Address 4417 Old Kettle Rd, Fresno, CA 93726.")
    r = m.privatize(note, rng=0)
    for value in ("Marisol", "Ferndale", "Ostrowski", "5583920", "32-year-old", "03/14/2024",
                  "Xzavian", "Tavares", "555 0142", "zephyrmail", "4417", "Kettle", "Fresno",
                  "93726"):
        assert value not in r.text, value
    assert r.text.startswith("Progress note: ") and " was seen on " in r.text


# ------------------------------------------------ dptext check, gold readers
def _jsonl(path, texts, key="text"):
    path.write_text("".join(json.dumps({"id": i, key: t}) + "\n" for i, t in enumerate(texts)),
                    encoding="utf-8")
    return path


ORIGINAL = ["Patient Anna Quillfeather (MRN 5583920) called from +1 212 555 0187.",
            "Nothing to hide here.",
            "Seen by Dr. Tobias Wrenfield on 03/14/2024, account 6620148833."]


def test_check_finds_a_planted_survivor_and_exits_non_zero(tmp_path, capsys):
    from dptext.cli import main

    orig = _jsonl(tmp_path / "in.jsonl", ORIGINAL)
    clean = _jsonl(tmp_path / "clean.jsonl", [
        "Patient [PERSON] ([MEDICAL_RECORD]) called from [PHONE_NUMBER].",
        "Nothing to hide here.", "Seen by Dr. [PERSON] on [DATE], account [ACCOUNT_NUMBER]."])
    assert main(["check", "--original", str(orig), "--released", str(clean)]) == 0
    assert "PASS: 0 surviving" in capsys.readouterr().out
    planted = _jsonl(tmp_path / "leak.jsonl", [
        "Patient [PERSON] ([MEDICAL_RECORD]) called from [PHONE_NUMBER].",
        "Nothing to hide here.", "Seen by Dr. Wrenfield on [DATE], account 662-014-8833."])
    assert main(["check", "--original", str(orig), "--released", str(planted)]) == 1
    out = capsys.readouterr().out
    assert "FAIL" in out and "records with a survivor (1, by index from 0): 2" in out
    assert "Wrenfield" not in out and "6620148833" not in out
    assert main(["check", "--original", str(orig), "--released", str(planted),
                 "--max-leaks", "5", "--json"]) == 0
    got = json.loads(capsys.readouterr().out)
    assert got["leaking_records"] == [2] and got["by_category"]["PERSON"] == 1
    short = _jsonl(tmp_path / "short.jsonl", [
        "Patient [PERSON] ([MEDICAL_RECORD]) called from [PHONE_NUMBER].",
        "Nothing to hide here."])
    assert main(["check", "--original", str(orig), "--released", str(short)]) == 2
    assert "--id-field" in capsys.readouterr().err
    assert main(["check", "--original", str(orig), "--released", str(short),
                 "--id-field", "id"]) == 0
    assert "1 absent from the release" in capsys.readouterr().out


@pytest.fixture
def space_file(space, tmp_path, monkeypatch):
    monkeypatch.setenv("DPTEXT_CACHE", str(tmp_path / "cache"))
    space.save(tmp_path / "space.npz")
    return str(tmp_path / "space.npz")


def test_sanitize_check_withholds_and_names_only_the_category(tmp_path, capsys, space_file):
    from dptext.cli import main

    orig = _jsonl(tmp_path / "in.jsonl", ORIGINAL + ["患者王伟，电话13800138000，住在北京。"])
    out = tmp_path / "out.jsonl"
    # a deny-listed word that the placeholder policy replaces, a name the check must see
    assert main(["sanitize", "-m", "custext", "-e", "2", "--entities", "PHI", "--detector",
                 "spacy", "--input", str(orig), "--keep", "id", "--output", str(out), "--check",
                 "--no-progress", "--seed", "1", "--space", space_file, "-p", "k=5"]) == 0
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    rejects = [json.loads(line) for line in
               (tmp_path / "out.jsonl.rejects.jsonl").read_text().splitlines()]
    assert [(r["record"], r["line"]) for r in rejects] == [(4, 4)]
    assert "language zh" in rejects[0]["reason"] and "北京" not in json.dumps(rejects)
    assert [r["id"] for r in rows] == [0, 1, 2]
    for value in ("Quillfeather", "5583920", "555 0187", "Wrenfield", "6620148833"):
        assert value not in out.read_text()
    assert main(["check", "--original", str(orig), "--released", str(out), "--id-field",
                 "id"]) == 0
    capsys.readouterr()


def test_sanitize_check_withholds_a_surviving_name(tmp_path, capsys, space_file):
    from dptext.cli import main

    orig = _jsonl(tmp_path / "in.jsonl", ["Patient Anna Quillfeather was seen."])
    allow = tmp_path / "allow.txt"
    allow.write_text("Anna Quillfeather\n")
    # the allow list lets the name through the detectors; the deny list of the check finds it
    out = tmp_path / "out.jsonl"
    assert main(["sanitize", "-m", "custext", "-e", "2", "--entities", "PERSON",
                 "--input", str(orig), "--keep", "id", "--output", str(out), "--name-policy",
                 "placeholder",
                 "--allow-list", str(allow), "--no-progress", "--space", space_file,
                 "-p", "k=5"]) == 0
    assert "Quillfeather" in out.read_text()
    deny = tmp_path / "deny.txt"
    deny.write_text("Anna Quillfeather\n")
    assert main(["check", "--original", str(orig), "--released", str(out),
                 "--deny-list", str(deny)]) == 1
    out = capsys.readouterr().out
    assert "FAIL: 1 surviving" in out and "Quillfeather" not in out
    with pytest.raises(SystemExit):
        main(["sanitize", "-m", "custext", "--text", "x", "--residual", "loud"])
    assert main(["sanitize", "-m", "custext", "--text", "x", "--residual", "keep",
                 "--space", space_file]) == 2
    assert "--residual needs --entities" in capsys.readouterr().err


def test_sanitize_word_policy_places_whole_or_by_the_mechanism(tmp_path, capsys, space_file):
    from dptext.cli import main
    from dptext.targeted.surrogates import WORD_SURROGATES

    # the city of "City, ST 12345" is a place (the built-in rule)
    orig = _jsonl(tmp_path / "in.jsonl", ["She moved to Quillbridge, NY 14850 last year."])
    for policy, want in (("surrogate", None), ("placeholder", "[GPE]")):
        out = tmp_path / f"{policy}.jsonl"
        assert main(["sanitize", "-m", "custext", "-e", "2", "--entities", "GPE",
                     "--detector", "spacy", "--input", str(orig), "--keep", "id", "--output",
                     str(out), "--word-policy", policy, "--no-progress", "--space", space_file,
                     "-p", "k=5"]) == 0
        text = json.loads(out.read_text())["text"]
        assert "Quillbridge" not in text
        assert (want in text) if want else any(p in text for p in WORD_SURROGATES["GPE"])
    assert main(["sanitize", "-m", "custext", "--text", "x", "--word-policy", "mechanism",
                 "--space", space_file]) == 2
    assert "--word-policy needs --entities" in capsys.readouterr().err


def test_gold_readers_on_the_shipped_i2b2_notes(tmp_path):
    import importlib.util
    from pathlib import Path

    from dptext.deid.gold import gold_to_jsonl, read_gold, score

    spec = importlib.util.find_spec("philter_lite")
    if spec is None:
        pytest.skip("philter-lite (its i2b2 notes) is not installed")
    xml = Path(spec.submodule_search_locations[0]) / "data" / "i2b2_xml"
    records = read_gold(xml)
    assert len(records) == 5 and sum(len(r.spans) for r in records) == 46
    for r in records:
        for s in r.spans:
            assert r.text[s.start:s.end].strip()
    first = records[0]
    assert first.text[first.spans[1].start:first.spans[1].end] == "Villegas"
    assert first.spans[1].category == "NAME"
    # round trip through the JSONL span format, then scores of a perfect and an empty detection
    path = tmp_path / "gold.jsonl"
    path.write_text(gold_to_jsonl(records), encoding="utf-8")
    again = read_gold(path)
    assert [(r.text, r.spans) for r in again] == [(r.text, r.spans) for r in records]
    perfect = score(records, [r.spans for r in records], [r.text for r in records])
    assert perfect.recall() == 1 and perfect.precision() == 1 and perfect.readability == 1
    assert perfect.verbatim_share() == 1  # nothing was replaced
    empty = score(records, [[] for _ in records])
    assert empty.recall() == 0 and empty.recall("NAME") == 0
    values = tmp_path / "values.jsonl"
    values.write_text(json.dumps({"text": "Call Ann at 555-0100.", "phi": [
        {"value": "Ann", "category": "name"}, {"value": "555-0100", "category": "phone"}]}))
    (rec,) = read_gold(values)
    assert [(s.start, s.end, s.category) for s in rec.spans] == [(5, 8, "NAME"),
                                                                 (12, 20, "PHONE")]
    bad = tmp_path / "bad.jsonl"
    bad.write_text(json.dumps({"text": "abc", "spans": [{"start": 2, "end": 9}]}))
    with pytest.raises(DPTextError, match="outside the text"):
        read_gold(bad)


def test_note_generator_is_seeded_and_its_gold_spans_hold_the_values():
    import re

    from dptext.deid.notes import NoteGenerator, generate_notes

    a, b = generate_notes(25, seed=3), generate_notes(25, seed=3)
    assert [r.text for r in a] == [r.text for r in b]
    assert [r.text for r in a] != [r.text for r in generate_notes(25, seed=4)]
    assert {r.id for r in a} == set(NoteGenerator.FORMATS)
    cats = {s.category for r in a for s in r.spans}
    assert {"NAME", "PHONE", "ID", "DATE", "AGE"} <= cats
    phones = [r.text[s.start:s.end] for r in generate_notes(200, seed=0) for s in r.spans
              if s.category == "PHONE"]
    shapes = {re.sub(r"\d", "N", p) for p in phones}
    assert len(shapes) >= 4 and "+N NNN NNN NNNN" in shapes and "+NNNNNNNNNNN" in shapes
    for r in a:
        assert 30 <= len(r.text.split()) <= 90
        for s in r.spans:
            value = r.text[s.start:s.end]
            assert value.strip() == value and value
