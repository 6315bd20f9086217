"""The learned PHI detector (dptext.detect.learned): the shipped weights and their fingerprint,
refusal of a corrupted file, numpy inference equal to the torch network it was trained as,
tagging and decoding, and recall on a fixed synthetic set (docs/learned_detector.md)."""

from __future__ import annotations

import hashlib
import json
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from dptext.detect.learned import tags as T
from dptext.detect.learned.detector import WEIGHTS, LearnedDetector, load_weights, read_digest
from dptext.detect.learned.features import BUCKETS, FEATURES, POSITION, Featurizer, tokenize
from dptext.detect.learned.network import forward_numpy, torch_network
from dptext.errors import DPTextError

pytestmark = pytest.mark.slow  # outside the fast tier (docs/architecture.md, "Tests")


@pytest.fixture(scope="module")
def detector():
    return LearnedDetector().load()


def test_shipped_weights_match_their_fingerprint():
    hexdigest, size = read_digest(WEIGHTS)
    data = WEIGHTS.read_bytes()
    assert len(data) == size
    assert hashlib.sha256(data).hexdigest() == hexdigest
    params, meta = load_weights(WEIGHTS)
    assert tuple(meta["tags"]) == T.TAGS
    assert params["emb"].shape == (BUCKETS, meta["dim"])
    assert params["out_w"].shape == (meta["width"], len(T.TAGS))
    assert size < 8 << 20  # small enough for package data


def test_corrupted_weights_refused_in_one_line(tmp_path):
    bad = tmp_path / "model.npz"
    shutil.copy(WEIGHTS, bad)
    shutil.copy(WEIGHTS.with_suffix(".sha256"), bad.with_suffix(".sha256"))
    data = bytearray(bad.read_bytes())
    data[len(data) // 2] ^= 0x01
    bad.write_bytes(bytes(data))
    with pytest.raises(DPTextError) as err:
        LearnedDetector(bad).find("Patient John Smith")
    assert "does not match its recorded sha256" in str(err.value)
    assert "\n" not in str(err.value)
    bad.with_suffix(".sha256").unlink()
    with pytest.raises(DPTextError, match="no valid digest record"):
        load_weights(bad)
    bad.with_suffix(".sha256").write_text("sha256 xyz 12\n")
    with pytest.raises(DPTextError, match="no valid digest record"):
        load_weights(bad)


def test_a_text_that_is_not_a_str_is_refused(detector):
    with pytest.raises(DPTextError, match="must be str"):
        detector.find_many(["fine", b"bytes"])


def test_numpy_inference_equals_the_torch_network():
    torch = pytest.importorskip("torch")
    torch.manual_seed(0)
    net = torch_network(8, 16, len(T.TAGS), BUCKETS, POSITION).eval()
    feat = Featurizer()
    texts = ["Pt Jane Roe seen 3/4 at Mercy Clinic.", "x", "MRN 1234567\n\tDOB: 01/02/1950"]
    enc = [feat.encode(t) for t in texts]
    params = net.to_numpy()
    t = max(len(e[0]) for e in enc)
    ids = torch.zeros((len(texts), t, FEATURES), dtype=torch.int64)
    dense = torch.zeros((len(texts), t, POSITION))
    mask = torch.zeros((len(texts), t))
    for j, (a, b, _) in enumerate(enc):
        ids[j, :len(a)] = torch.from_numpy(a)
        dense[j, :len(a)] = torch.from_numpy(b)
        mask[j, :len(a)] = 1
    with torch.no_grad():
        want = net(ids, dense, mask).numpy()
    for j, (a, b, _) in enumerate(enc):
        got = forward_numpy(params, a, b, np.ones(len(a), np.float32))
        np.testing.assert_allclose(got, want[j, :len(a)], rtol=1e-4, atol=1e-4)


def test_tokens_cut_between_letters_digits_and_marks():
    words, spans = tokenize("MRN12345, Dr.O'Brien  3/4")
    assert words == ["MRN", "12345", ",", "Dr", ".", "O", "'", "Brien", "3", "/", "4"]
    assert [tuple(s) for s in spans][:2] == [(0, 3), (3, 8)]


def test_bio_targets_and_decode_round_trip():
    text = "Seen by Ann Lee on 3/4/2020 at 555-1234."
    labels = [(8, 15, "PERSON"), (19, 27, "DATE"), (31, 39, "PHONE_NUMBER")]
    _, spans = tokenize(text)
    tags = T.bio_targets(spans, labels)
    got = T.decode(tags, np.ones(len(tags)), spans)
    assert [(s.start, s.end, s.category) for s in got] == labels
    # I- without B- opens a span; a change of category closes one
    tags2 = np.array([T.TAG_INDEX["I-PERSON"], T.TAG_INDEX["I-DATE"], 0])
    got2 = T.decode(tags2, np.array([0.5, 0.7, 0.9]), np.array([[0, 1], [2, 3], [4, 5]]))
    assert [(s.start, s.end, s.category, s.score) for s in got2] == \
        [(0, 1, "PERSON", 0.5), (2, 3, "DATE", 0.7)]


def test_find_many_equals_find_one_by_one(detector):
    texts = ["Spoke with pt's wife Maria Gonzalez at (555) 201-3344.", "",
             "BP 132/84, HR 88, Hgb 13.2", "Triage RN M. Okafor\n67 y/o F from Lagos."]
    together = detector.find_many(texts)
    assert together == [detector.find(t) for t in texts]
    small = LearnedDetector(batch_tokens=8).load()
    assert small.find_many(texts) == together
    for text, spans in zip(texts, together, strict=True):
        for s in spans:
            assert 0 <= s.start < s.end <= len(text) and s.category in T.CATEGORIES
            assert 0 < s.score <= 1


# The held-out set (benchmarks/train_detector_recall.jsonl, written by
# `benchmarks/train_detector.py --write-heldout`): 80 notes of a seed training never used
# (training draws 1 and 2), whose people bear names of names-dataset ranked 301-400 in their
# country, none of them in the training pools: 1,166 gold spans. The shipped weights touch all
# of them. The test allows MAX_MISSED: for the shipped weights it is exact (the set is fixed);
# for weights retrained elsewhere, a detector that truly misses 1 span in 1,000 fails it with
# probability 0.0013 and one that misses 1 in 100 passes it with probability 0.025 (binomial,
# N = 1,166).
MAX_MISSED = 5
HELDOUT = Path(__file__).resolve().parents[2] / "benchmarks" / "train_detector_recall.jsonl"


def test_recall_on_a_fixed_synthetic_set(detector):
    notes = [json.loads(line) for line in HELDOUT.read_text(encoding="utf-8").splitlines()]
    pred = detector.find_many([n["text"] for n in notes])
    missed = []
    total = 0
    for note, spans in zip(notes, pred, strict=True):
        for a, b, cat in note["labels"]:
            total += 1
            if not any(s.start < b and a < s.end for s in spans):
                missed.append((note["text"][a:b], cat))
    assert total == 1166
    assert len(missed) <= MAX_MISSED, missed


def test_clinical_look_alikes_are_mostly_left_alone(detector):
    texts = ["Dx: Crohn's disease (K50.90). Hx of Bell's palsy and Parkinson's disease.",
             "Meds given at 0800 and 14:30. BP 142/88, HR 96, Na 138, K 4.1, Hgb 13.2.",
             "ADMISSION DATE:\nHISTORY OF PRESENT ILLNESS:\nmetoprolol 25 mg PO BID",
             "Homans sign negative. Strength 5/5. Pain 7/10. ICD-10 I48.91, E11.65."]
    pred = detector.find_many(texts)
    found = [(t[s.start:s.end], s.category) for t, ss in zip(texts, pred, strict=True)
             for s in ss]
    assert len(found) <= 1, found


def test_importing_reads_no_weights_and_no_torch():
    code = ("import sys, dptext, dptext.detect.learned as L; d = L.LearnedDetector(); "
            "print('torch' in sys.modules, d._params is None)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True).stdout.split()
    assert out == ["False", "True"]


def test_recognizer_wrapper_reports_entities_of_the_wanted_categories():
    from dptext.detect.learned.recognizer import LearnedRecognizer

    text = "Spoke with pt's wife Maria Gonzalez at (555) 201-3344 on 3/14/2021."
    every = LearnedRecognizer()
    assert every.categories == frozenset(T.CATEGORIES)
    got = every.find(text)
    spans = LearnedRecognizer().find_many([text])[0]
    assert got == spans
    assert [(e.start, e.end, e.category) for e in got] == \
        [(s.start, s.end, s.category) for s in LearnedDetector().find(text) if s.score >= 0.5]
    from dptext.detect.entities import normalize_entity
    for e in got:  # the key every detector gives the same surface
        assert e.key == (normalize_entity(text[e.start:e.end]) or text[e.start:e.end])
    only = LearnedRecognizer(wanted=frozenset({"PHONE_NUMBER"})).find(text)
    assert only == [e for e in got if e.category == "PHONE_NUMBER"]
    raw = LearnedDetector().find(text)
    cut = sorted(s.score for s in raw)[len(raw) // 2]
    assert [(e.start, e.end) for e in LearnedRecognizer(threshold=cut).find(text)] == \
        [(s.start, s.end) for s in raw if s.score >= cut]
    with pytest.raises(DPTextError, match="reports no SHOE_SIZE"):
        LearnedRecognizer(wanted=frozenset({"SHOE_SIZE"}))
    with pytest.raises(DPTextError, match="not in"):
        LearnedRecognizer(threshold=1.5)


def test_chunked_forward_equals_one_pass():
    from dptext.detect.learned.network import forward_chunked

    params, _ = load_weights(WEIGHTS)
    text = " ".join(["Pt Jane Roe, MRN 4471920, seen 3/4/2021 by Dr. Okafor at Mercy."] * 40)
    ids, dense, _ = Featurizer().encode(text)
    mask = np.ones(len(ids), np.float32)
    whole = forward_numpy(params, ids, dense, mask)
    for chunk in (7, 64, 1000):
        np.testing.assert_allclose(forward_chunked(params, ids, dense, mask, chunk=chunk), whole,
                                   rtol=1e-5, atol=1e-5)
