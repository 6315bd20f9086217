"""The real default space (minilm-50k): built once (a few minutes) and cached in the user cache.

All tests here are marked ``slow`` (deselect them with ``-m "not slow"``); the first run builds
the space, later runs load it in seconds.
"""

from __future__ import annotations

import numpy as np
import pytest

import dptext
from dptext.embeddings import EmbeddingSpace
from dptext.resources import DEFAULT_MERGE_TOLERANCE, DEFAULT_VOCAB_SIZE, default_space
from dptext.text import split_words

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def space() -> EmbeddingSpace:
    return default_space(progress=False)


def test_size_and_geometry(space: EmbeddingSpace) -> None:
    assert 49_000 <= len(space) <= DEFAULT_VOCAB_SIZE
    assert space.metric == "euclidean" and space.dim == 384
    assert len(space) + len(space.aliases) == DEFAULT_VOCAB_SIZE  # merged words became aliases
    geo = space.geometry()
    assert geo.neighbors.shape[1] >= 20
    np.testing.assert_array_equal(geo.neighbors[:, 0], np.arange(len(space)))
    assert space.delta_min > DEFAULT_MERGE_TOLERANCE
    assert 0.02 < space.delta_min < space.delta_max <= 2.0 + 1e-6  # unit vectors
    # the cached table agrees with exact distances for a few words
    rows = np.array([0, 123, 4567, len(space) - 1])
    d = space.pairwise(rows)
    d[np.arange(len(rows)), rows] = -1.0
    expected = np.argsort(d, axis=1, kind="stable")[:, :10]
    np.testing.assert_array_equal(geo.neighbors[rows, :10], expected)


def test_semantic_neighbours(space: EmbeddingSpace) -> None:
    doctor = [w for w, _ in space.neighbors("doctor", 10)]
    assert "physician" in doctor
    terrible = [w for w, _ in space.neighbors("terrible", 10)]
    assert "awful" in terrible
    assert "doctor" not in doctor  # a word is not its own neighbour


def test_accent_aliases(space: EmbeddingSpace) -> None:
    jose = space.lookup("jose")
    assert jose >= 0
    assert space.lookup("jos\u00e9") == jose
    assert space.lookup("JOS\u00c9") == jose
    assert "jos\u00e9" not in space.words
    for alias, target in space.aliases.items():
        assert target in space.index and alias not in space.words
        assert space.words[space.lookup(alias)] == target


def test_custext_report(space: EmbeddingSpace) -> None:
    result = dptext.mechanism("custext", epsilon=2, k=20).privatize(
        "Alice met Bob in Paris.", rng=0
    )
    report = result.report
    assert report.tokens_privatized == 5
    assert report.kept == {"punctuation": 1}
    assert report.tokens_total == 6
    assert report.epsilon == pytest.approx(10.0)
    assert result.text.endswith(".")
    words = split_words(result.text)[1::2]
    assert len(words) == 5 and all(space.lookup(w) >= 0 for w in words)
