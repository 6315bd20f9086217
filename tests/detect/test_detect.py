"""Entity detection with the packaged spaCy model and with Presidio; the UeDP data model."""

import json

import numpy as np
import pytest

from dptext.detect import detector, normalize_entity, resolve_categories
from dptext.errors import DPTextError
from dptext.training.corpus import RawCorpus, build_corpus, read_user_file, split_sentences

SENTENCE = ("David Johnson from Maine was admitted to Main Hospital on September 18. "
            "Call him at 212-555-0187 or write to david.j@example.com.")


@pytest.fixture(scope="module")
def spacy_detector():
    return detector(["ALL"], "spacy")


@pytest.mark.slow
def test_spacy_finds_the_entities_of_a_hand_written_sentence(spacy_detector):
    found = {(e.key, e.category) for e in spacy_detector.detect([SENTENCE])[0]}
    assert {("david johnson", "PERSON"), ("maine", "GPE"), ("september 18", "DATE")} <= found
    assert any(key == "main hospital" for key, _ in found)


@pytest.mark.slow
def test_presidio_finds_pii_offline():
    found = {(e.key, e.category) for e in detector(["PII"], "presidio").detect([SENTENCE])[0]}
    assert ("david.j@example.com", "EMAIL_ADDRESS") in found
    assert ("212-555-0187", "PHONE_NUMBER") in found
    assert ("david johnson", "PERSON") in found


@pytest.mark.slow
def test_category_selection_filters(spacy_detector):
    only_dates = detector(["DATE"], "spacy")
    found = only_dates.detect([SENTENCE])[0]
    assert found and {e.category for e in found} == {"DATE"}


def test_categories_and_groups():
    assert "EMAIL_ADDRESS" in resolve_categories(["pii"])
    assert resolve_categories(["organization"]) == frozenset({"ORG"})
    with pytest.raises(DPTextError):
        resolve_categories(["NAMES"])


def test_normalized_surface_is_the_entity_identity():
    assert normalize_entity("The  BBC.") == normalize_entity("bbc") == "bbc"
    assert normalize_entity("Alice\u2019s") == "alice's"


@pytest.mark.slow
def test_corpus_one_entity_across_users_and_extended_set(spacy_detector):
    raw = RawCorpus(["Barack Obama visited Paris. The weather was mild.",
                     "I think Barack Obama spoke well.", "Nothing much happened."],
                    ["ann", "bob", "ann"])
    corpus, spans = build_corpus(raw, spacy_detector)
    assert corpus.n_users == 2 and len(corpus.sentences) == 4
    obama = corpus.entity_keys.index("barack obama")
    assert corpus.entity_users()[obama] == 2
    assert list(corpus.extended) == [1, 3]
    deid = corpus.deidentified(spans)
    assert deid.sentences[0] == "[PERSON] visited [GPE]."
    assert len(deid.extended) == 4


@pytest.mark.slow
def test_user_files_and_synthetic_users(tmp_path):
    jl = tmp_path / "d.jsonl"
    jl.write_text("\n".join(json.dumps({"user": u, "text": t})
                            for u, t in [("a", "Hi there."), ("b", "Yo.")]) + "\n")
    assert read_user_file(jl).users == ["a", "b"]
    cv = tmp_path / "d.csv"
    cv.write_text("author,body\nx,Hello.\ny,World.\n")
    assert read_user_file(cv, user_field="author", text_field="body").texts == ["Hello.",
                                                                               "World."]
    co = tmp_path / "d.conll"
    co.write_text("John B-PER\nran O\n\nMary B-PER\nsat O\n")
    raw = read_user_file(co)
    assert raw.texts == ["John ran", "Mary sat"]
    with pytest.raises(DPTextError, match="without a user"):
        build_corpus(raw, detector(["PERSON"]))
    corpus, _ = build_corpus(raw, detector(["PERSON"]), synthetic=2,
                             rng=np.random.default_rng(0))
    assert corpus.n_users == 2


def test_sentence_split():
    assert split_sentences("One here. Two there! 3 is next? yes.") == [
        "One here.", "Two there!", "3 is next? yes."]
