"""Cached artefacts verified on use (issue 36, CLI start-up): ``cache.open_npz`` hashes a file
whole on its first load and records the sha256 of each piece; later loads verify the central
directory at once and each member's pieces when it is first read. A damaged byte is never
handed out: reading a member over it is a CorruptArtefact, and the next load checks the whole
file (so the default space is rebuilt)."""

from __future__ import annotations

import pickle
from pathlib import Path

import numpy as np
import pytest

from dptext import cache as cache_files

pytestmark = pytest.mark.slow  # outside the fast tier (docs/architecture.md, "Tests")

SPACE = dict(words=[f"w{i}" for i in range(300)], seed=5, dim=16, float32=True, name="t300")
PIECE = 4096  # small pieces, so that a small file has many


@pytest.fixture
def cache_dir(tmp_path, monkeypatch):
    root = tmp_path / "cache"
    monkeypatch.setenv("DPTEXT_CACHE", str(root))
    monkeypatch.setattr(cache_files, "_PIECE", PIECE)
    return root


def _arrays() -> dict[str, np.ndarray]:
    rng = np.random.default_rng(0)
    return {"a": rng.random((40, 100)), "b": np.arange(5000, dtype=np.int32),
            "c": rng.random(3000).astype(np.float32)}


def _saved(tmp_path: Path) -> Path:
    path = tmp_path / "x.npz"
    assert cache_files.save_npz(path, _arrays())
    return path


def _span(path: Path, name: str) -> tuple[int, int]:
    _mm, spans, _ = cache_files._open_mapped(path)
    start, end, _size = spans[name]
    return start, end


def _flip(path: Path, offset: int) -> None:
    data = bytearray(path.read_bytes())
    data[offset] ^= 0xFF
    path.write_bytes(bytes(data))


def _pieces(path: Path) -> Path:
    return path.with_name(path.name + cache_files.PIECES_SUFFIX)


def test_first_load_hashes_whole_and_records_pieces_then_reads_on_use(cache_dir, tmp_path):
    path = _saved(tmp_path)
    first = cache_files.open_npz(path)
    assert _pieces(path).is_file()
    lines = _pieces(path).read_text(encoding="ascii").splitlines()
    assert len(lines) == 1 + -(-path.stat().st_size // PIECE)
    second = cache_files.open_npz(path)
    assert set(second) == set(_arrays()) and "a" in second and "z" not in second
    for name, want in _arrays().items():
        assert np.array_equal(first[name], want) and np.array_equal(second[name], want)
    assert len(second._ok) == len(lines) - 1  # every piece checked once all are read


def test_a_member_is_not_hashed_until_read(cache_dir, tmp_path):
    path = _saved(tmp_path)
    cache_files.open_npz(path)
    lazy = cache_files.open_npz(path)
    start, end = _span(path, "a")
    a_pieces = set(range(start // PIECE, -(-end // PIECE)))
    lazy["b"]
    assert not a_pieces <= lazy._ok  # "a" spans pieces nothing else covers
    lazy["a"]
    assert a_pieces <= lazy._ok


def test_a_damaged_member_is_refused_when_read_and_the_next_load_checks_it_all(
        cache_dir, tmp_path):
    path = _saved(tmp_path)
    cache_files.open_npz(path)
    start, end = _span(path, "a")
    _flip(path, (start + end) // 2)
    lazy = cache_files.open_npz(path)  # the directory and the other members are intact
    assert np.array_equal(lazy["c"], _arrays()["c"])
    with pytest.raises(cache_files.CorruptArtefact, match="does not match its recorded sha256"):
        lazy["a"]
    with pytest.raises(cache_files.CorruptArtefact):  # asked again: refused again
        lazy["a"]
    assert not _pieces(path).exists()
    with pytest.raises(cache_files.CorruptArtefact, match="corrupted"):
        cache_files.open_npz(path)


def test_a_damaged_central_directory_is_refused_at_once(cache_dir, tmp_path):
    path = _saved(tmp_path)
    cache_files.open_npz(path)
    _flip(path, path.stat().st_size - 40)  # inside the central directory
    with pytest.raises(cache_files.CorruptArtefact):
        cache_files.open_npz(path)


def test_a_wrong_pieces_record_is_rewritten_not_trusted(cache_dir, tmp_path):
    path = _saved(tmp_path)
    cache_files.open_npz(path)
    good = _pieces(path).read_text(encoding="ascii")
    lines = good.splitlines()
    lines[1] = "0" * 64
    _pieces(path).write_text("\n".join(lines) + "\n", encoding="ascii")
    lazy = cache_files.open_npz(path)
    for name, want in _arrays().items():
        assert np.array_equal(lazy[name], want)
    assert _pieces(path).read_text(encoding="ascii") == good


def test_pieces_of_other_content_are_ignored(cache_dir, tmp_path):
    path = _saved(tmp_path)
    cache_files.open_npz(path)
    stale = _pieces(path).read_text(encoding="ascii")
    other = dict(_arrays(), b=np.arange(5000, dtype=np.int32)[::-1].copy())
    assert cache_files.save_npz(path, other)  # a new digest: the record names other bytes
    _pieces(path).write_text(stale, encoding="ascii")
    arrays = cache_files.open_npz(path)
    assert np.array_equal(arrays["b"], other["b"])
    assert _pieces(path).read_text(encoding="ascii") != stale
    # damage the file under a stale record: the whole-file check finds it
    _pieces(path).write_text(stale, encoding="ascii")
    start, end = _span(path, "b")
    _flip(path, (start + end) // 2)
    with pytest.raises(cache_files.CorruptArtefact, match="corrupted"):
        cache_files.open_npz(path)


def test_legacy_file_without_digest_is_none(cache_dir, tmp_path):
    path = tmp_path / "y.npz"
    np.savez(path, **_arrays())
    assert cache_files.open_npz(path) is None


# ------------------------------------------------------------------ the default space
def _load_default(resources):
    resources._loaded.clear()
    return resources.default_space(300)


@pytest.fixture
def cached_space(cache_dir, space):
    from dptext import resources

    path = resources.default_space_path(300)
    space.geometry()  # saved with the space: its kNN table is a deferred member too
    space.save(path)
    cache_files.record_digest(path)
    _load_default(resources)  # validated, digest pieces and .checked recorded
    yield resources, path
    resources._loaded.clear()


def test_cached_space_reads_vectors_only_when_used(cached_space, space):
    resources, _path = cached_space
    loaded = _load_default(resources)
    assert set(loaded._deferred) == {"vectors", "geometry"}
    assert loaded.fingerprint() == space.fingerprint()  # adopted: no vector read
    assert "vectors" in loaded._deferred
    assert loaded.lookup(space.words[7]) == 7
    assert np.array_equal(loaded.vectors, space.vectors)
    assert not loaded.vectors.flags.writeable
    assert loaded.fingerprint() == space.fingerprint()
    assert loaded.cached_geometry is not None
    assert np.array_equal(loaded.cached_geometry.neighbors, space.geometry().neighbors)


def test_damaged_vectors_are_never_used_and_the_space_is_rebuilt_next(
        cached_space, space, monkeypatch):
    resources, path = cached_space
    start, end = _span(path, "vectors")
    _flip(path, (start + end) // 2)
    loaded = _load_default(resources)  # words and meta are intact
    with pytest.raises(cache_files.CorruptArtefact):
        _ = loaded.vectors
    with pytest.raises(cache_files.CorruptArtefact):
        loaded.prepared()
    built = []

    def fake_build(size, *, progress):
        built.append(size)
        return space

    monkeypatch.setattr(resources, "build_default_space", fake_build)
    with pytest.warns(cache_files.CacheWarning, match="rebuilding the default space"):
        _load_default(resources)
    assert built == [300]


def test_a_space_with_deferred_members_pickles_whole(cached_space, space):
    resources, _path = cached_space
    loaded = _load_default(resources)
    copy = pickle.loads(pickle.dumps(loaded))
    assert np.array_equal(copy.vectors, space.vectors) and copy.words == space.words
    assert copy.cached_geometry is not None and copy.fingerprint() == space.fingerprint()


def test_clear_removes_the_pieces_record(cached_space):
    resources, path = cached_space
    assert _pieces(path).is_file()
    resources.clear_cache(["space"])
    assert not path.exists() and not _pieces(path).exists()
