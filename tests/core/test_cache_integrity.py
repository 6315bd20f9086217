"""The cache is trustworthy (issue 12, "The cache must be trustworthy"): corrupted files are
detected and rebuilt, planted tables are refused by name, a read-only cache falls back to memory,
files are shared-readable, and concurrent builds of one entry happen once."""

from __future__ import annotations

import os
import stat
import subprocess
import sys
import textwrap
import warnings
from pathlib import Path

import numpy as np
import pytest

import dptext
from dptext import DPTextError, EmbeddingSpace
from dptext import cache as cache_files

SRC = str(Path(__file__).resolve().parents[2] / "src")


@pytest.fixture
def cache_dir(tmp_path, monkeypatch):
    root = tmp_path / "cache"
    monkeypatch.setenv("DPTEXT_CACHE", str(root))
    return root


SPACE = dict(words=[f"w{i}" for i in range(60)], seed=3, dim=6, float32=True,
             name="t60")  # the space fixture (conftest.py)


def custext(space, **kw):
    return dptext.mechanism("custext", space=space, epsilon=kw.pop("epsilon", 3.0), k=8, **kw)


def fitted_file(cache_dir: Path) -> Path:
    (path,) = (cache_dir / "fitted").glob("*.npz")
    return path


def same_tables(a, b) -> bool:
    return sorted(a) == sorted(b) and all(np.array_equal(a[k], b[k]) for k in a)


# ------------------------------------------------------------------ corruption
def _truncate(p: Path) -> None:
    p.write_bytes(p.read_bytes()[: p.stat().st_size // 2])


def _zero_block(p: Path) -> None:
    data = bytearray(p.read_bytes())
    mid = len(data) // 2
    data[mid : mid + 4096] = bytes(min(4096, len(data) - mid))
    p.write_bytes(bytes(data))


def _flip_byte(p: Path) -> None:
    data = bytearray(p.read_bytes())
    data[len(data) // 2] ^= 0xFF
    p.write_bytes(bytes(data))


def _empty(p: Path) -> None:
    p.write_bytes(b"")


@pytest.mark.parametrize("damage", [_truncate, _zero_block, _flip_byte, _empty])
@pytest.mark.parametrize("keep_digest", [True, False])
def test_corrupted_tables_are_detected_and_rebuilt(cache_dir, space, damage, keep_digest):
    reference = custext(space).fit()._tables
    path = fitted_file(cache_dir)
    assert cache_files.verify(path) is True
    damage(path)
    if not keep_digest:  # without the digest the reader itself must notice (zip CRC, sizes)
        cache_files.digest_path(path).unlink()
    with pytest.warns(cache_files.CacheWarning, match=str(path.name)):
        m = custext(space).fit()
    assert same_tables(m._tables, reference)
    assert cache_files.verify(path) is True  # rewritten, with its digest
    assert m.privatize("w1 w2", rng=0).report.tokens_privatized == 2


def test_flipped_byte_without_digest_fails_the_crc(cache_dir, space):
    custext(space).fit()
    path = fitted_file(cache_dir)
    cache_files.digest_path(path).unlink()
    z = np.load(path)
    offset = path.read_bytes().index(z["cum"].tobytes()[:64])
    z.close()
    data = bytearray(path.read_bytes())
    data[offset + 100] ^= 0x01
    path.write_bytes(bytes(data))
    with pytest.raises(cache_files.CorruptArtefact, match="CRC|readable"):
        cache_files.load_npz(path)


# ------------------------------------------------------------------ planted tables
def _plant(path: Path, tables: dict, *, digest: bool = True) -> None:
    with open(path, "wb") as f:
        np.savez(f, **tables)
    if digest:
        cache_files.record_digest(path)
    else:
        cache_files.digest_path(path).unlink(missing_ok=True)


def _identity_custext(tables: dict) -> dict:
    """Every word maps to itself with probability 1 (privacy off), structurally plausible."""
    t = {k: v.copy() for k, v in tables.items()}
    n, k = t["out"].shape
    own = t["members"][t["set_of"]]
    out = np.where(own >= 0, own, -1)
    # put the word itself last (probability 1), everything else before it with probability 0
    for x in range(n):
        row = [w for w in out[x] if w >= 0 and w != x]
        pad = k - len(row) - 1
        out[x] = [-1] * pad + row + [x]
    t["out"] = out.astype(np.int32)
    t["cum"] = np.zeros((n, k))
    t["cum"][:, -1] = 1.0
    return t


@pytest.mark.parametrize("digest", [True, False])
@pytest.mark.parametrize("plant", ["identity", "nan", "one_word_sets"])
def test_planted_custext_tables_are_refused(cache_dir, space, plant, digest):
    m = custext(space).fit()
    path = fitted_file(cache_dir)
    t = {k: v.copy() for k, v in m._tables.items()}
    if plant == "identity":
        t = _identity_custext(t)
    elif plant == "nan":
        t["cum"][:] = np.nan
    else:  # every word its own output set: f_map's K-sets broken
        n = len(space)
        t["members"] = np.full((n, 8), -1)
        t["members"][:, 0] = np.arange(n)
        t["set_of"] = np.arange(n)
    _plant(path, t, digest=digest)
    with pytest.raises(DPTextError) as err:
        custext(space).fit()
    message = str(err.value)
    assert str(path) in message and "dptext cache clear --kind fitted" in message
    assert "\n" not in message
    with pytest.raises(DPTextError, match="failed validation"):
        custext(space).load(path)


def test_santext_laplace_gumbel_plants_are_refused(cache_dir, space):
    from dptext.mechanisms.truncated_gumbel import minimum_epsilon

    san = dptext.mechanism("santext", space=space, epsilon=2.0).fit()
    planted = {k: v.copy() for k, v in san._tables.items()}
    planted["cum"][:] = 1.0  # always the nearest sensitive word (the word itself)
    planted["p_near"][:] = 1.0
    with pytest.raises(DPTextError, match="near cumulative weights"):
        san.validate_tables(planted)
    lap = dptext.mechanism("laplace", space=space, epsilon=5.0).fit()
    with pytest.raises(DPTextError, match="Delta_max"):
        lap.validate_tables({"diameter": np.array(1e-9)})
    geo = dict(vocab_size=len(space), delta_max=space.delta_max, delta_min=space.delta_min)
    g = dptext.mechanism("gumbel", space=space,
                         epsilon=2 * minimum_epsilon(**geo, rule="paper")).fit()
    g.validate_tables(g._tables)
    with pytest.raises(DPTextError, match="guarantees only"):
        g.validate_tables({"b": np.array(g.b / 100)})  # less noise than the epsilon allows
    for m in (san, lap, g):
        m.validate_tables(m._tables)  # what fit() produced passes


def test_default_space_corruption_rebuilds_and_plant_is_refused(cache_dir, space, monkeypatch):
    from dptext import resources

    resources._loaded.clear()
    built = []

    def fake_build(size, *, progress):
        built.append(size)
        space.save(resources.default_space_path(size))
        cache_files.record_digest(resources.default_space_path(size))
        return space

    monkeypatch.setattr(resources, "build_default_space", fake_build)
    assert resources.default_space(60) is space and built == [60]
    resources._loaded.clear()
    path = resources.default_space_path(60)
    _zero_block(path)
    with pytest.warns(cache_files.CacheWarning, match="rebuilding the default space"):
        resources.default_space(60)
    assert built == [60, 60]
    # planted: a consistent file whose kNN table lies
    resources._loaded.clear()
    bad = EmbeddingSpace(space.words, space.vectors, name=space.name)
    geo = bad.geometry()
    geo.distances[:, 1:] = geo.distances[:, 1:] * 0.5
    bad.save(path)
    cache_files.record_digest(path)
    with pytest.raises(DPTextError, match="dptext cache clear --kind space"):
        resources.default_space(60)
    resources._loaded.clear()


def test_model_directory_manifest(tmp_path):
    from dptext.lm.loading import _cached_model

    target = tmp_path / "models" / "m"
    target.mkdir(parents=True)
    (target / "model.safetensors").write_bytes(os.urandom(5000))
    (target / "config.json").write_text("{}")
    with pytest.warns(cache_files.CacheWarning, match="no manifest"):
        assert _cached_model(target)  # legacy: adopted
    assert cache_files.verify_dir(target)
    _flip_byte(target / "model.safetensors")
    with pytest.warns(cache_files.CacheWarning, match="does not match"):
        assert not _cached_model(target)
    assert not target.exists()  # moved aside and removed; the caller converts again


# ------------------------------------------------------------------ environment
def test_read_only_cache_falls_back_to_memory(tmp_path, monkeypatch, space):
    blocker = tmp_path / "file"
    blocker.write_text("not a directory")
    monkeypatch.setenv("DPTEXT_CACHE", str(blocker / "cache"))  # nothing can be created there
    with pytest.warns(cache_files.CacheWarning, match="not writable"):
        m = custext(space).fit()
    assert m.privatize("w1 w2", rng=0).report.tokens_privatized == 2


@pytest.mark.parametrize("what", ["the default space", "the GloVe space"])
def test_a_built_space_that_cannot_be_cached_is_kept_in_memory(tmp_path, space, what):
    from dptext.resources import cache_space

    blocker = tmp_path / "file"
    blocker.write_text("not a directory")
    with pytest.warns(cache_files.CacheWarning, match=f"not writable .*: {what} is used in memory"):
        assert cache_space(space, blocker / "space.npz", what) is space
    assert blocker.read_text() == "not a directory"
    assert cache_space(space, tmp_path / "space.npz", what) is space  # writable: saved, no warning
    assert cache_files.digest_path(tmp_path / "space.npz").is_file()
    assert EmbeddingSpace.load(tmp_path / "space.npz").words == space.words


def test_files_are_created_shared_readable(cache_dir, space):
    old = os.umask(0o022)
    try:
        custext(space).fit()
        path = fitted_file(cache_dir)
        for p in (path, cache_files.digest_path(path)):
            assert stat.S_IMODE(p.stat().st_mode) == 0o644, p
        for d in (cache_dir, cache_dir / "fitted", cache_dir / cache_files.LOCK_DIR):
            assert stat.S_IMODE(d.stat().st_mode) == 0o755, d
        import tempfile

        tmp = Path(tempfile.mkdtemp(dir=cache_dir))  # 0700, as save_pretrained's target was
        fd, name = tempfile.mkstemp(dir=tmp)  # 0600
        os.close(fd)
        cache_files.publish_dir(tmp, cache_dir / "models-x")
        assert stat.S_IMODE((cache_dir / "models-x").stat().st_mode) == 0o755
        assert stat.S_IMODE((cache_dir / "models-x" / Path(name).name).stat().st_mode) == 0o644
        assert cache_files.verify_dir(cache_dir / "models-x")
    finally:
        os.umask(old)


def test_cache_listing_counts_digests_with_their_entry(cache_dir, space):
    from dptext.resources import cache_entries, clear_cache

    custext(space).fit()
    entries = cache_entries()
    assert [e.kind for e in entries] == ["fitted"]
    clear_cache(["fitted"])
    assert not list((cache_dir / "fitted").iterdir())


_SLOW_BUILD = textwrap.dedent("""
    import sys, time
    import numpy as np
    from dptext import EmbeddingSpace
    from dptext.mechanisms.registry import register
    from dptext.mechanisms.word import WordMechanism
    from dptext.accounting.events import GuaranteeKind, TokenGuarantee

    @register
    class Slow(WordMechanism):
        name = "slow-build-test"
        guarantee = TokenGuarantee(GuaranteeKind.NONE)
        def _fit_tables(self, space):
            with open(sys.argv[1], "a") as f:
                f.write("built\\n")
            time.sleep(1.5)
            return {"x": np.arange(len(space), dtype=np.float64)}
        def _sample(self, rows, rng):
            return rows

    space = EmbeddingSpace(["a", "b", "c"], np.eye(3, dtype=np.float32), name="abc")
    m = Slow(epsilon=1.0, space=space).fit()
    print(m._tables["x"].sum())
""")


@pytest.mark.slow
def test_concurrent_builds_of_one_entry_happen_once(cache_dir, tmp_path):
    log = tmp_path / "builds.log"
    env = {**os.environ, "PYTHONPATH": SRC, "DPTEXT_CACHE": str(cache_dir),
           "OMP_NUM_THREADS": "1"}
    procs = [subprocess.Popen([sys.executable, "-c", _SLOW_BUILD, str(log)], env=env,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
             for _ in range(2)]
    outs = [p.communicate(timeout=120) for p in procs]
    assert all(p.returncode == 0 for p in procs), outs
    assert [o[0].strip() for o in outs] == ["3.0", "3.0"]
    assert log.read_text() == "built\n"  # the second process waited and used the first's
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert cache_files.verify(next((cache_dir / "fitted").glob("*.npz")))


# ------------------------------------------------------- checked once (issue 36)
def test_tables_validated_once_are_not_validated_again_until_their_bytes_change(
        cache_dir, space, monkeypatch):
    """A cached table file is validated on its first cached load and then recorded (its
    sha256, the checking code) in NAME.checked; later loads of the same bytes skip
    validate_tables. A plant written with a fresh digest has another sha256: validated, and
    refused. The mapped arrays equal the ones read through the zip reader."""
    from dptext.mechanisms.custext import CusText

    fitted = custext(space).fit()
    path = fitted_file(cache_dir)
    calls = []
    real = CusText.validate_tables
    monkeypatch.setattr(CusText, "validate_tables",
                        lambda self, t: calls.append(1) or real(self, t))
    for _ in range(3):
        m = custext(space).fit()
        assert same_tables(m._tables, fitted._tables)
    assert len(calls) == 1 and path.with_name(path.name + ".checked").is_file()
    assert same_tables(cache_files.load_npz(path, verified=True), cache_files.load_npz(path))
    _plant(path, _identity_custext({k: np.array(v) for k, v in fitted._tables.items()}))
    with pytest.raises(DPTextError, match="failed validation"):
        custext(space).fit()
    assert len(calls) == 2
    from dptext.resources import clear_cache

    clear_cache(["fitted"])
    assert not list((cache_dir / "fitted").iterdir())


def test_default_space_checked_once_keeps_its_fingerprint(cache_dir, space, monkeypatch):
    from dptext import resources

    resources._loaded.clear()
    path = resources.default_space_path(60)
    space.save(path)
    cache_files.record_digest(path)
    checks = []
    real = resources.validate_space
    monkeypatch.setattr(resources, "validate_space", lambda s: checks.append(1) or real(s))
    loaded = []
    for _ in range(2):
        resources._loaded.clear()
        loaded.append(resources.default_space(60))
    assert len(checks) == 1
    first, second = loaded
    assert second.words == space.words and second.index == space.index
    assert np.array_equal(second.vectors, space.vectors) and not second.vectors.flags.writeable
    assert first.fingerprint() == second.fingerprint() == space.fingerprint()
    # another space written in its place (a fresh digest): checked again, a new fingerprint
    other = EmbeddingSpace(space.words, space.vectors * 2, name=space.name)
    other.save(path)
    cache_files.record_digest(path)
    resources._loaded.clear()
    assert resources.default_space(60).fingerprint() == other.fingerprint()
    assert len(checks) == 2
    resources._loaded.clear()
