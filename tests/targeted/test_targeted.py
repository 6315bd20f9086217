"""Entity-targeted sanitization: spans, surrogates, the wrapper and its honest report."""

from __future__ import annotations

import ipaddress
import math
import re

import numpy as np
import pytest
from scipy.stats import chi2 as chi2_dist

from dptext import mechanism
from dptext.accounting.events import GuaranteeKind
from dptext.errors import DPTextError
from dptext.targeted import (
    SURROGATE_SETS,
    Span,
    TargetedMechanism,
    TargetedReport,
    build_targeted,
    merge_spans,
)
from dptext.targeted.mechanism import count_tokens
from dptext.text import split_words

WORDS = ["alice", "bob", "paris", "london", "anna", "lee", "smith", "john", "met", "in", "the",
         "city", "call", "at", "or", "and", "said", "hello"] + [f"w{i}" for i in range(40)]


SPACE = dict(words=WORDS, seed=0, dim=6, name="targeted-tiny")  # the space fixture (conftest.py)


@pytest.fixture
def custext(space, tmp_path, monkeypatch):
    monkeypatch.setenv("DPTEXT_CACHE", str(tmp_path))
    return mechanism("custext", epsilon=2, k=5, space=space).fit()


def _spans(text: str, *pairs: tuple[str, str]) -> list[Span]:
    """Spans at the first occurrence (after the previous one) of each (surface, category)."""
    out, pos = [], 0
    for surface, category in pairs:
        start = text.index(surface, pos)
        out.append(Span(start, start + len(surface), category, surface.lower()))
        pos = start + len(surface)
    return out


# ------------------------------------------------------------------ spans
def test_spans_snap_to_words_and_overlaps_merge_with_the_pattern_winning():
    text = "Mail Bob Smith at bob.smith@example.com or (212) 555-0187 today"
    ents = [Span(6, 10, "PERSON", ""),  # "ob S": inside two words
            Span(18, 39, "EMAIL_ADDRESS", ""), Span(22, 39, "PERSON", ""),  # overlap
            Span(44, 57, "PHONE_NUMBER", "")]  # Presidio's span leaves out the "("
    spans = merge_spans(text, ents)
    assert [(text[s.start:s.end], s.category) for s in spans] == [
        ("Bob Smith", "PERSON"), ("bob.smith@example.com", "EMAIL_ADDRESS"),
        ("(212) 555-0187", "PHONE_NUMBER")]
    assert spans[0].key == "bob smith" and spans[2].pattern and not spans[0].pattern
    assert merge_spans(text, ents, frozenset({"PERSON"}))[1].category == "PERSON"
    owner = "Ask Bob Stone's dog"
    (span,) = merge_spans(owner, [Span(4, 13, "PERSON", "")])
    assert owner[span.start:span.end] == "Bob Stone" and span.key == "bob stone"


def test_pattern_spans_are_replaced_whole_and_the_rest_is_untouched(custext):
    m = TargetedMechanism(custext, entities=["PERSON", "PHONE", "EMAIL", "DATE"], detector=None)
    text = "Dear Alice, call (212) 555-0187 or 212.555.0100 on 12/05/2021."
    spans = _spans(text, ("Alice", "PERSON"), ("(212) 555-0187", "PHONE_NUMBER"),
                   ("212.555.0100", "PHONE_NUMBER"), ("12/05/2021", "DATE"))
    r = m.privatize_spans([text], [spans], rng=1)[0]
    rest = r.text.split(" ")
    assert rest[0] == "Dear" and rest[2:4] == ["call", "[PHONE_NUMBER]"]
    assert r.text.endswith(" or [PHONE_NUMBER] on [DATE].")
    assert not re.search(r"\d", r.text)  # no digit, no shape of a number survives
    rep = r.report
    assert rep.spans["PHONE_NUMBER"]["spans"] == 2
    assert rep.spans["PHONE_NUMBER"]["tokens"] == count_tokens("(212) 555-0187") + \
        count_tokens("212.555.0100")
    # placeholders are 0-DP: only the one name's word costs epsilon
    assert rep.epsilon == pytest.approx(2.0) and rep.draws_total == 1
    assert rep.tokens_undetected == count_tokens("Dear , call or on .")
    assert rep.tokens_total == count_tokens(text)


def test_outside_text_is_released_verbatim_and_counted(custext):
    m = TargetedMechanism(custext, entities=["PERSON", "GPE"], detector=None)
    text = "Yesterday   Alice met Bob Smith in Paris, again!"
    spans = _spans(text, ("Alice", "PERSON"), ("Bob Smith", "PERSON"), ("Paris", "GPE"))
    for r in m.privatize_spans([text] * 20, [spans] * 20, rng=3):
        parts = split_words(r.text)
        assert parts[0::2] == split_words(text)[0::2]  # all spacing and punctuation
        words = parts[1::2]
        assert words[0] == "Yesterday" and words[2] == "met" and words[5] == "in"
        assert words[7] == "again"
        assert all(w.lower() in WORDS for w in (words[1], words[3], words[4], words[6]))
        rep = r.report
        assert rep.tokens_undetected == 6 and rep.kept == {"undetected": 6}
        assert rep.tokens_privatized == 4 and rep.epsilon == pytest.approx(8.0)
        assert "NOT protected: 6 tokens outside the detected spans" in rep.document_guarantee()


def test_placeholder_output_is_independent_of_the_value(custext):
    m = TargetedMechanism(custext, entities=["PHONE"], detector=None)
    a, b = "ring 555-0100 now", "ring +44 20 7946 0123 now"
    ra = m.privatize_spans([a], [_spans(a, ("555-0100", "PHONE_NUMBER"))])[0]
    rb = m.privatize_spans([b], [_spans(b, ("+44 20 7946 0123", "PHONE_NUMBER"))])[0]
    assert ra.text == rb.text == "ring [PHONE_NUMBER] now"
    g = next(e.guarantee for e in ra.report.events if e.reason == "placeholder")
    assert g.kind is GuaranteeKind.INDEPENDENT and g.worst_case_epsilon == 0.0


def test_consistency_draws_once_per_distinct_entity(custext):
    text = "Alice and Bob met. Alice said hello to ALICE and bob."
    spans = _spans(text, ("Alice", "PERSON"), ("Bob", "PERSON"), ("Alice", "PERSON"),
                   ("ALICE", "PERSON"), ("bob", "PERSON"))
    same = TargetedMechanism(custext, entities=["PERSON"], detector=None, consistent="document")
    free = TargetedMechanism(custext, entities=["PERSON"], detector=None)
    seen_differ = False
    for seed in range(30):
        r = same.privatize_spans([text], [spans], rng=seed)[0]
        words = split_words(r.text)[1::2]
        assert words[0] == words[4] == words[8]  # the replacement drawn once, reused
        assert words[2] == words[10]
        f = free.privatize_spans([text], [spans], rng=seed)[0]
        fw = split_words(f.text)[1::2]
        seen_differ |= fw[0] != fw[4]
    assert seen_differ  # without consistency the occurrences are drawn independently
    rep = r.report
    assert rep.draws_total == 2 and rep.epsilon == pytest.approx(4.0)
    assert rep.spans["PERSON"] == {**rep.spans["PERSON"], "spans": 5, "draws": 2, "reused": 3}
    assert f.report.epsilon == pytest.approx(10.0)
    assert "one draw per distinct entity" in rep.document_guarantee()
    assert "which spans are the same entity is released" in rep.document_guarantee()


def test_unit_consistency_spans_texts_and_batches(custext):
    m = TargetedMechanism(custext, entities=["PERSON"], detector=None, consistent="unit")
    texts = ["Anna met john.", "John called Anna.", "Anna waved."]
    spans = [_spans(texts[0], ("Anna", "PERSON"), ("john", "PERSON")),
             _spans(texts[1], ("John", "PERSON"), ("Anna", "PERSON")),
             _spans(texts[2], ("Anna", "PERSON"))]
    first = m.privatize_spans(texts[:2], spans[:2], rng=0, units=["u1", "u1"])
    later = m.privatize_spans(texts[2:], spans[2:], rng=1, units=["u1"])
    other = m.privatize_spans(texts[2:], spans[2:], rng=2, units=["u2"])
    anna = split_words(first[0].text)[1]
    assert split_words(first[1].text)[1::2][2].lower() == anna.lower()
    assert split_words(later[0].text)[1] == anna
    assert later[0].report.epsilon == 0.0 and later[0].report.spans["PERSON"]["reused"] == 1
    assert other[0].report.epsilon == pytest.approx(2.0)  # another unit draws afresh
    assert first[0].report.epsilon + first[1].report.epsilon == pytest.approx(4.0)
    # without units, "unit" is per document and the report says so
    alone = m.privatize_spans(texts[2:], spans[2:], rng=3)[0]
    assert alone.report.consistent == "document" and alone.report.epsilon == pytest.approx(2.0)


def test_word_policy_placeholder_hides_names_whole(custext):
    m = TargetedMechanism(custext, entities=["PERSON"], detector=None, word_policy="placeholder",
                          placeholder="<{category}>")
    text = "Bob Smith wrote."
    r = m.privatize_spans([text], [_spans(text, ("Bob Smith", "PERSON"))])[0]
    assert r.text == "<PERSON> wrote." and r.report.epsilon == 0.0


# ------------------------------------------------------------- surrogates
def _luhn(number: str) -> bool:
    digits = [int(c) for c in number if c.isdigit()][::-1]
    total = sum(d if i % 2 == 0 else (d * 2 - 9 if d * 2 > 9 else d * 2)
                for i, d in enumerate(digits))
    return total % 10 == 0


def _iban_ok(iban: str) -> bool:
    s = iban.replace(" ", "")
    moved = s[4:] + s[:4]
    return int("".join(str(int(c, 36)) for c in moved)) % 97 == 1


def test_surrogates_are_made_up_values_of_their_type():
    sets = SURROGATE_SETS
    assert all(v.split("@")[1] in ("example.com", "example.org", "example.net", "mail.example")
               for v in sets["EMAIL_ADDRESS"].values)
    assert all(_luhn(v) for v in sets["CREDIT_CARD"].values)
    assert all(_iban_ok(v) for v in sets["IBAN_CODE"].values)
    docs = [ipaddress.ip_network(n) for n in ("192.0.2.0/24", "198.51.100.0/24",
                                              "203.0.113.0/24", "2001:db8::/32")]
    assert all(any(ipaddress.ip_address(v) in n for n in docs)
               for v in sets["IP_ADDRESS"].values)
    for v in sets["PHONE_NUMBER"].values:  # fictional 555-01xx or Ofcom's drama range
        assert "555" in v and re.search(r"01\d\d$", v) or "7946 0" in v
    assert all(re.search(r"example\.(com|org)", v) for v in sets["URL"].values)
    assert all(v[:3] in ("000", "666") for v in sets["US_SSN"].values)  # never assigned


@pytest.mark.parametrize("category", sorted(SURROGATE_SETS))
def test_surrogate_distribution_is_epsilon_dp_between_any_two_values(category):
    """Exact: for every pair of inputs (the surrogates themselves cover every feature value
    the set has) and every output, P(s|x) / P(s|x') <= e^epsilon."""
    sset, eps = SURROGATE_SETS[category], 1.5
    inputs = list(sset.values) + ["x", "12345", "Foo Bar"]
    probs = np.array([sset.distribution(v, eps) for v in inputs])
    assert np.allclose(probs.sum(1), 1.0)
    log = np.log(probs)
    worst = float((log[:, None, :] - log[None, :, :]).max())
    assert worst <= eps + 1e-9
    if len(set(map(sset.features, sset.values))) > 1:
        assert worst > 0.2 * eps  # the format does steer the draw


def test_surrogate_draws_follow_the_exponential_mechanism():
    sset, eps, n = SURROGATE_SETS["PHONE_NUMBER"], 4.0, 6000
    value = "(917) 555-2368"
    p = sset.distribution(value, eps)
    u = sset.utility(value)
    expected_p = np.exp(eps * u / 2) / np.exp(eps * u / 2).sum()
    assert np.allclose(p, expected_p)
    rng = np.random.default_rng(11)
    index = {v: i for i, v in enumerate(sset.values)}
    observed = np.bincount([index[sset.draw(value, eps, rng)] for _ in range(n)],
                           minlength=len(p))
    # group the outputs by utility level (equal probabilities) for the chi-square test
    levels = sorted(set(u))
    obs = np.array([observed[u == lv].sum() for lv in levels])
    exp = np.array([n * p[u == lv].sum() for lv in levels])
    assert exp.min() > 5
    assert ((obs - exp) ** 2 / exp).sum() < chi2_dist.ppf(0.999, len(levels) - 1)


def test_surrogate_spans_cost_one_draw_each_whatever_their_length(custext):
    m = TargetedMechanism(custext, entities=["PHONE", "EMAIL"], detector=None,
                          pattern_policy="surrogate", surrogate_epsilon=0.5)
    text = "Reach me at +1 (212) 555-0187 or jo.doe@corp.org"
    spans = _spans(text, ("+1 (212) 555-0187", "PHONE_NUMBER"),
                   ("jo.doe@corp.org", "EMAIL_ADDRESS"))
    r = m.privatize_spans([text], [spans], rng=5)[0]
    head, phone_and_mail = r.text[:12], r.text[12:]
    assert head == "Reach me at "
    phone, mail = phone_and_mail.split(" or ")
    assert phone in SURROGATE_SETS["PHONE_NUMBER"].values
    assert mail in SURROGATE_SETS["EMAIL_ADDRESS"].values
    assert r.report.epsilon == pytest.approx(1.0) and r.report.draws_total == 2
    assert r.report.tokens_privatized == count_tokens(text) - 4  # all but "Reach me at or"


# --------------------------------------------------------------- detectors
def test_detector_that_cannot_find_a_category_is_refused(custext):
    with pytest.raises(DPTextError, match="never reports EMAIL_ADDRESS.*presidio"):
        TargetedMechanism(custext, entities=["PERSON", "EMAIL"], detector="spacy")
    with pytest.raises(DPTextError, match="never reports LOC"):
        TargetedMechanism(custext, entities=["LOC"], detector="presidio")
    with pytest.raises(DPTextError, match="unknown detector"):
        TargetedMechanism(custext, detector="regex")
    with pytest.raises(DPTextError, match="unknown entity category"):
        TargetedMechanism(custext, entities=["NAMES"])
    with pytest.raises(DPTextError, match="pattern_policy"):
        TargetedMechanism(custext, pattern_policy="mask")
    with pytest.raises(DPTextError, match="wraps"):
        TargetedMechanism("custext")
    # default entities: what the detector can find
    assert "EMAIL_ADDRESS" not in TargetedMechanism(custext, detector="spacy").categories
    assert "EMAIL_ADDRESS" in TargetedMechanism(custext, detector="both").categories


@pytest.mark.slow
def test_build_targeted_with_spacy_detection_end_to_end(space, tmp_path, monkeypatch):
    monkeypatch.setenv("DPTEXT_CACHE", str(tmp_path))
    m = build_targeted("custext", epsilon=2, k=5, space=space, entities="PERSON,GPE",
                       detector="spacy").fit()
    text = "David Johnson flew from London to Paris on Monday."
    r = m.privatize(text, rng=0)
    words = split_words(r.text)[1::2]
    assert words[2:4] == ["flew", "from"] and words[5] == "to" and words[7:] == ["on", "Monday"]
    rep = r.report
    assert rep.spans["PERSON"]["spans"] == 1 and rep.spans["GPE"]["spans"] == 2
    # London and Paris at 2-DP each; David Johnson is out of the tiny vocabulary: [UNK] (0-DP)
    assert r.text.startswith("[UNK] [UNK] flew") and rep.epsilon == pytest.approx(4.0)
    assert rep.tokens_undetected == 6 and rep.detector == "spacy"  # 5 words and "."
    with pytest.raises(DPTextError, match="parameters"):
        build_targeted(m.mechanism, epsilon=3)


# ------------------------------------------------------------------ report
def test_report_combines_to_dict_and_prints_honestly(custext):
    m = TargetedMechanism(custext, entities=["PERSON", "EMAIL"], detector=None,
                          consistent="document")
    texts = ["Bob wrote to bob@x.org.", "Nobody here.", "Alice and Alice."]
    spans = [_spans(texts[0], ("Bob", "PERSON"), ("bob@x.org", "EMAIL_ADDRESS")), [],
             _spans(texts[2], ("Alice", "PERSON"), ("Alice", "PERSON"))]
    results = m.privatize_spans(texts, spans, rng=0)
    combined = TargetedReport.combine([r.report for r in results])
    assert combined.records == 3 and combined.epsilon == pytest.approx(4.0)
    assert combined.max_record_epsilon == pytest.approx(2.0)
    assert combined.tokens_total == sum(count_tokens(t) for t in texts)
    assert combined.spans["PERSON"]["reused"] == 1 and combined.spans_total == 4
    d = combined.to_dict()
    assert d["guarantee_scope"] == "per detected span (not per document)"
    assert d["tokens_undetected"] == combined.tokens_undetected == 3 + 3 + 2
    assert d["span_epsilon"] == d["document_epsilon"] == pytest.approx(4.0)
    text = str(combined)
    assert "NOT protected      8 tokens outside the detected spans" in text
    assert "Guarantee per detected span, not per document" in text
    empty = results[1].report
    assert empty.epsilon == 0 and "nothing was privatized" in empty.document_guarantee()
    assert combined.epsilon_for_delta(1e-6) <= combined.epsilon + 1e-9


def test_privacy_events_follow_the_ledger_contract(custext):
    m = TargetedMechanism(custext, entities=["PERSON", "PHONE"], detector=None,
                          pattern_policy="surrogate", surrogate_epsilon=0.5)
    text = "Bob Lee: 555-0100"
    r = m.privatize_spans([text], [_spans(text, ("Bob Lee", "PERSON"),
                                          ("555-0100", "PHONE_NUMBER"))], rng=0)[0]
    evs = r.report.privacy_events()
    assert sorted((e.epsilon, e.count) for e in evs) == [(0.5, 1), (2.0, 2)]
    assert all(e.kind == "pure" and e.delta == 0 for e in evs)
    assert math.fsum(e.epsilon * e.count for e in evs) == pytest.approx(r.report.epsilon)


def test_report_state_round_trips(custext):
    from dptext.integrations._state import report_from_state, report_to_state

    m = TargetedMechanism(custext, entities=["PERSON"], detector=None)
    text = "Ask Anna."
    r = m.privatize_spans([text], [_spans(text, ("Anna", "PERSON"))], rng=0)[0].report
    for report in (r, custext.privatize("Anna met Bob.").report):
        back = report_from_state(report_to_state(report))
        assert type(back) is type(report) and back.to_dict() == report.to_dict()
    with pytest.raises(DPTextError):
        report_from_state({"class": "Nope"})


def test_the_file_command_runs_a_targeted_mechanism(custext, tmp_path):
    import json

    from dptext.sanitize import sanitize

    m = TargetedMechanism(custext, entities=["PERSON"], detector="spacy")
    src, dst = tmp_path / "in.jsonl", tmp_path / "out.jsonl"
    rows = [{"id": 1, "text": "Alice met Bob."}, {"id": 2, "text": "No names here."}]
    src.write_text("".join(json.dumps(r) + "\n" for r in rows))
    report = sanitize(m, src, dst, field="text", keep="id", rng=0)
    out = [json.loads(line) for line in dst.read_text().splitlines()]
    assert out[1]["text"] == "No names here." and " met " in out[0]["text"]
    assert isinstance(report, TargetedReport) and report.records == 2
    assert report.tokens_undetected == 2 + 4
    assert json.loads(json.dumps(report.to_dict()))["guarantee_scope"].startswith("per detected")


class _NamesOnly(TargetedMechanism):
    """A targeted mechanism whose 'detector' marks the capitalised names of WORDS."""

    def detect(self, texts):
        return [[Span(m.start(), m.end(), "PERSON", m.group().lower())
                 for m in re.finditer(r"\b(Anna|John|Bob)\b", t)] for t in texts]


def test_unit_consistency_settle_false_charges_reuse_of_an_unreleased_draw(custext):
    # issue 32 item 2: with settle=False a later text of the unit reusing a draw that is not
    # known released pays for it; settle() keeps released draws and forgets withheld ones
    m = TargetedMechanism(custext, entities=["PERSON"], detector=None, consistent="unit")
    texts = ["Anna met John.", "Anna waved."]
    spans = [_spans(texts[0], ("Anna", "PERSON"), ("John", "PERSON")),
             _spans(texts[1], ("Anna", "PERSON"))]
    first = m.privatize_spans(texts, spans, rng=0, units=["u1", "u1"], settle=False)
    anna = split_words(first[0].text)[1]
    assert split_words(first[1].text)[1] == anna  # still consistent
    assert first[1].report.epsilon == pytest.approx(2.0)  # ... and charged
    assert sum(e.epsilon for e in first[1].report.privacy_events()) > 0
    m.settle(first, [False, False])  # both withheld: Anna's draw is forgotten
    again = m.privatize_spans(texts[1:], spans[1:], rng=1, units=["u1"], settle=False)
    assert again[0].report.spans["PERSON"]["draws"] == 1  # a fresh draw, charged
    assert again[0].report.epsilon == pytest.approx(2.0)
    m.settle(again, [True])  # released: free to reuse from now on
    later = m.privatize_spans(texts[1:], spans[1:], rng=2, units=["u1"], settle=False)
    assert later[0].text == again[0].text and later[0].report.epsilon == 0.0
    with pytest.raises(DPTextError):
        m.settle(later, [])


def test_unit_consistency_with_a_ledger_never_releases_a_withheld_draw_uncharged(custext,
                                                                                tmp_path):
    # issue 32 item 2: record 0 (Anna, John: epsilon 4) is over the unit's budget of 3 and
    # withheld; record 1 reused Anna's draw and was released with it for 0 - the ledger said
    # nothing was spent for the draw that left
    pd = pytest.importorskip("pandas")
    from dptext.integrations.pandas import privatize_frame
    from dptext.ledger import Ledger

    ledger = Ledger(tmp_path / "l.sqlite", secret="a test secret, 16+ bytes")
    ledger.set_budget("clinic", "notes", 3.0)
    m = _NamesOnly(custext, entities=["PERSON"], detector=None, consistent="unit")
    df = pd.DataFrame({"text": ["Anna met John.", "Anna waved."], "user": ["u1", "u1"]})
    release = privatize_frame(df, "text", mechanism=m, unit_column="user", ledger=ledger,
                              owner="clinic", dataset_name="notes", rng=0)
    frame = release.data
    assert release.withheld == [0] and frame["text"].iloc[0] is None
    shown = frame["text"].iloc[1]
    assert shown is not None and split_words(shown)[1].lower() in WORDS
    spent = ledger.spent("u1", owner="clinic", dataset="notes")
    assert spent.records == 1 and spent.epsilon_basic == pytest.approx(2.0)  # was 0
    # the released record paid for Anna's draw: reused for free from now on
    ledger.set_budget("clinic", "notes", 10.0)
    later = privatize_frame(pd.DataFrame({"text": ["Anna smiled."], "user": ["u1"]}), "text",
                            mechanism=m, unit_column="user", ledger=ledger, owner="clinic",
                            dataset_name="notes", rng=1).data["text"].iloc[0]
    assert split_words(later)[1] == split_words(shown)[1]
    assert ledger.spent("u1", owner="clinic", dataset="notes").epsilon_basic == \
        pytest.approx(2.0)
