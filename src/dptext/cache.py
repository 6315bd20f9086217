"""What makes a cached artefact trustworthy (docs/reliability.md, "The cache"): a content hash
beside every file, checked before the file is parsed; ``.npz`` reading that refuses anything
np.savez would not have written; a file lock so that concurrent processes build an entry once;
and a fallback to in-memory use, with a warning, where the cache cannot be written.

A digest file ``NAME.sha256`` beside ``NAME`` holds ``sha256 <hex> <bytes>``. A file without one
(written by dptext before digests existed) is checked structurally by its reader and then
adopted: its digest is recorded, with a warning saying so.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import sys
import time
import warnings
import zipfile
from collections.abc import Iterator, Mapping
from pathlib import Path

import numpy as np

from dptext.errors import DPTextError
from dptext.io import atomic_write

DIGEST_SUFFIX = ".sha256"
LOCK_DIR = ".locks"


class CacheWarning(UserWarning):
    """Something about the cache the user should know (a rebuild, a read-only cache)."""


class CorruptArtefact(DPTextError):
    """A cached file is unreadable or does not match its recorded content hash."""


def cache_dir() -> Path:
    """``$DPTEXT_CACHE``, else ``$XDG_CACHE_HOME/dptext``, else ``~/.cache/dptext``."""
    if os.environ.get("DPTEXT_CACHE"):
        return Path(os.environ["DPTEXT_CACHE"])
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "dptext"


def warn(message: str) -> None:
    warnings.warn(message, CacheWarning, stacklevel=3)


def digest_path(path: str | os.PathLike) -> Path:
    path = Path(path)
    return path.with_name(path.name + DIGEST_SUFFIX)


def file_digest(path: str | os.PathLike) -> str:
    with open(path, "rb") as f:  # one reused buffer: half the CPU of a new bytes per chunk
        return hashlib.file_digest(f, "sha256").hexdigest()


def _read_record(path: Path) -> tuple[str, int] | None:
    try:
        text = digest_path(path).read_text(encoding="ascii")
    except FileNotFoundError:
        return None
    except (OSError, UnicodeDecodeError) as err:
        raise CorruptArtefact(f"{digest_path(path)} is unreadable ({type(err).__name__})") from None
    parts = text.split()
    if len(parts) != 3 or parts[0] != "sha256" or len(parts[1]) != 64 or not parts[2].isdigit():
        raise CorruptArtefact(f"{digest_path(path)} is not a digest record")
    return parts[1], int(parts[2])


def record_digest(path: str | os.PathLike) -> bool:
    """Write ``path``'s digest file; False (with a warning) where the cache is read-only."""
    path = Path(path)
    line = f"sha256 {file_digest(path)} {path.stat().st_size}\n"
    try:
        with atomic_write(digest_path(path), encoding="ascii") as f:
            f.write(line)
    except (OSError, DPTextError) as err:
        warn(f"cannot record the digest of {path} ({reason(err)})")
        return False
    return True


def _checked_record(path: Path) -> tuple[str, int] | None:
    """``path``'s digest record (None: a legacy file without one) after the checks that need no
    hashing: the file exists, is not empty and has the recorded size."""
    if not path.is_file():
        raise CorruptArtefact(f"{path} does not exist")
    record = _read_record(path)
    size = path.stat().st_size
    if size == 0:
        raise CorruptArtefact(f"{path} is empty")
    if record is not None and size != record[1]:
        raise CorruptArtefact(f"{path} has {size} bytes, its digest records {record[1]} "
                              "(truncated or overwritten)")
    return record


def verify(path: str | os.PathLike) -> bool:
    """True if ``path`` matches its digest file, False if it has none (a legacy file);
    :class:`CorruptArtefact` if it is missing, empty, or differs from the digest."""
    path = Path(path)
    record = _checked_record(path)
    if record is None:
        return False
    if file_digest(path) != record[0]:
        raise CorruptArtefact(f"{path} does not match its recorded sha256 (corrupted)")
    with contextlib.suppress(OSError):  # the last use, for least-recently-used pruning
        os.utime(digest_path(path))
    return True


CHECKED_SUFFIX = ".checked"
PIECES_SUFFIX = ".pieces"
BESIDE = (DIGEST_SUFFIX, CHECKED_SUFFIX, PIECES_SUFFIX)  # files that belong to the entry they name


def checker_key(*modules: str) -> str:
    """A key naming the code that validated a file: dptext's version and the bytes of the
    given modules' source files (a changed check is a new key, so the file is checked again)."""
    from dptext.version import __version__

    h = hashlib.sha256(__version__.encode())
    for name in modules:
        module = sys.modules.get(name)
        source = getattr(module, "__file__", None)
        try:
            h.update(Path(source).read_bytes() if source else name.encode())
        except OSError:
            h.update(name.encode())
    return h.hexdigest()[:16]


def checked(path: str | os.PathLike, key: str) -> dict | None:
    """What :func:`mark_checked` recorded for ``path`` under ``key``, or None. Call it only
    after :func:`verify` returned True: the record names the sha256 the file's digest file
    holds, so it applies to these bytes only (any other content has another digest)."""
    import json

    path = Path(path)
    record = _read_record(path)
    if record is None:
        return None
    try:
        data = json.loads(path.with_name(path.name + CHECKED_SUFFIX).read_text(encoding="utf-8"))
    except (OSError, ValueError, UnicodeDecodeError):
        return None
    if not isinstance(data, dict) or data.get("sha256") != record[0] or data.get("key") != key:
        return None
    return data


def mark_checked(path: str | os.PathLike, key: str, **facts) -> None:
    """Record that ``path`` (its current digest) passed the structural checks of ``key``'s code,
    with ``facts`` found on the way (a fingerprint); best effort - a read-only cache just checks
    again next time (issue 36: the checks were most of a cached command's start-up)."""
    import json

    path = Path(path)
    record = _read_record(path)
    if record is None:
        return
    with contextlib.suppress(OSError, DPTextError), \
            atomic_write(path.with_name(path.name + CHECKED_SUFFIX), encoding="utf-8") as f:
        json.dump({"sha256": record[0], "key": key, **facts}, f)


def load_npz(path: str | os.PathLike, *, verified: bool = False) -> dict[str, np.ndarray]:
    """Every array of an ``.npz`` written by np.savez; anything else (truncated, bad CRC,
    object arrays, an array larger than its zip member) is a :class:`CorruptArtefact`.

    ``verified``: the file just matched its sha256 (:func:`verify` returned True). Its stored
    members are then mapped (copy on write) instead of read and CRC-checked again: the same
    arrays, without copying or checksumming the bytes a second time (issue 36)."""
    path = Path(path)
    opened = _open_mapped(path) if verified else None  # None: a compressed member
    if opened is not None:
        mm, spans, _ = opened
        return {name: _map_member(path, mm, name, *span) for name, span in spans.items()}
    arrays: dict[str, np.ndarray] = {}
    try:
        with zipfile.ZipFile(path) as zf:
            for info in zf.infolist():
                if not info.filename.endswith(".npy"):
                    raise CorruptArtefact(f"{path}: unexpected member {info.filename!r}")
                with zf.open(info) as f:
                    version = np.lib.format.read_magic(f)
                    shape, _fortran, dtype = _read_header(f, version)
                    if dtype.hasobject:
                        raise CorruptArtefact(f"{path}: {info.filename} holds Python objects")
                    need = int(np.prod(shape, dtype=np.int64)) * dtype.itemsize
                    if need > info.file_size:
                        raise CorruptArtefact(
                            f"{path}: {info.filename} declares {need} bytes in a "
                            f"{info.file_size}-byte member")
                with zf.open(info) as f:
                    arrays[info.filename[:-4]] = np.lib.format.read_array(f, allow_pickle=False)
    except CorruptArtefact:
        raise
    except (OSError, EOFError, ValueError, KeyError, zipfile.BadZipFile, MemoryError) as err:
        raise CorruptArtefact(f"{path} is not a readable .npz ({reason(err)})") from None
    except Exception as err:  # zlib.error, struct.error: any other damage of the archive
        raise CorruptArtefact(f"{path} is not a readable .npz ({reason(err)})") from None
    return arrays


def _open_mapped(path: Path):
    """(the file mapped copy on write, {member: (start, end, stored size)}: the span from its
    local header to the next member or the central directory, where the central directory
    starts); None where a member is compressed."""
    import mmap

    try:
        with open(path, "rb") as f, zipfile.ZipFile(f) as zf:
            infos = sorted(zf.infolist(), key=lambda i: i.header_offset)
            if any(i.compress_type != zipfile.ZIP_STORED for i in infos):
                return None
            directory = getattr(zf, "start_dir", None)
            mm = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_COPY)
    except (OSError, EOFError, ValueError, KeyError, zipfile.BadZipFile, MemoryError) as err:
        raise CorruptArtefact(f"{path} is not a readable .npz ({reason(err)})") from None
    directory = directory if isinstance(directory, int) else 0  # unknown: check it all
    ends = [i.header_offset for i in infos[1:]] + [directory or len(mm)]
    spans = {}
    for info, end in zip(infos, ends, strict=True):
        if not info.filename.endswith(".npy"):
            raise CorruptArtefact(f"{path}: unexpected member {info.filename!r}")
        if not 0 <= info.header_offset < end <= len(mm) or info.filename[:-4] in spans:
            raise CorruptArtefact(f"{path}: {info.filename} lies outside the file")
        spans[info.filename[:-4]] = (info.header_offset, end, info.file_size)
    return mm, spans, directory


def _map_member(path: Path, mm, name: str, start: int, end: int, size: int) -> np.ndarray:
    """One stored member (local header at ``start``, ``size`` bytes of data, nothing of it past
    ``end``) as an array viewing the mapped file, after :func:`load_npz`'s checks."""
    import io
    import struct

    try:
        local = mm[start: start + 30]
        if len(local) != 30 or local[:4] != b"PK\x03\x04":
            raise CorruptArtefact(f"{path}: {name}.npy has no local header")
        name_len, extra_len = struct.unpack("<HH", local[26:30])
        begin = start + 30 + name_len + extra_len
        if begin + size > end:
            raise CorruptArtefact(f"{path}: {name}.npy runs past its end")
        head = io.BytesIO(mm[begin: min(begin + size, begin + 65536)])
        version = np.lib.format.read_magic(head)
        shape, fortran, dtype = _read_header(head, version)
        if dtype.hasobject:
            raise CorruptArtefact(f"{path}: {name}.npy holds Python objects")
        count = int(np.prod(shape, dtype=np.int64))
        if count * dtype.itemsize > size - head.tell():
            raise CorruptArtefact(f"{path}: {name}.npy declares {count * dtype.itemsize} "
                                  f"bytes in a {size}-byte member")
        flat = np.frombuffer(mm, dtype=dtype, count=count, offset=begin + head.tell())
    except CorruptArtefact:
        raise
    except (OSError, EOFError, ValueError, KeyError, MemoryError, struct.error) as err:
        raise CorruptArtefact(f"{path} is not a readable .npz ({reason(err)})") from None
    return flat.reshape(shape[::-1]).transpose() if fortran else flat.reshape(shape)


# ---------------------------------------- verified on use: only the pieces a load reads
_PIECE = 1 << 20


def _hash_pieces(path: Path) -> tuple[str, list[str]]:
    """One read of ``path``: its sha256, and the sha256 of each ``_PIECE`` bytes of it."""
    whole, pieces = hashlib.sha256(), []
    with open(path, "rb") as f:
        while chunk := f.read(_PIECE):
            whole.update(chunk)
            pieces.append(hashlib.sha256(chunk).hexdigest())
    return whole.hexdigest(), pieces


def _recorded_pieces(path: Path, record: tuple[str, int]) -> list[str] | None:
    """The piece digests recorded for the content ``record`` names (None: none for it)."""
    try:
        head, *pieces = path.with_name(path.name + PIECES_SUFFIX).read_text("ascii").split("\n")
        pieces.pop()  # the empty string after the last newline
    except (OSError, UnicodeDecodeError, ValueError):
        return None
    ok = head.split() == ["sha256-pieces", record[0], str(record[1]), str(_PIECE)]
    return pieces if ok and len(pieces) == -(-record[1] // _PIECE) and all(
        len(p) == 64 for p in pieces) else None


def _record_pieces(path: Path, record: tuple[str, int], pieces: list[str]) -> None:
    with contextlib.suppress(OSError, DPTextError), \
            atomic_write(path.with_name(path.name + PIECES_SUFFIX), encoding="ascii") as f:
        f.write(f"sha256-pieces {record[0]} {record[1]} {_PIECE}\n" + "\n".join(pieces) + "\n")


def open_npz(path: str | os.PathLike) -> Mapping[str, np.ndarray] | None:
    """The arrays of a cached ``.npz``, none of them handed out before the bytes it comes from
    matched a recorded sha256; None for a file without a digest (a legacy file, as
    :func:`verify`), :class:`CorruptArtefact` for a damaged one (maybe only when the damaged
    member is read). The first load of a content hashes the whole file (it must match
    ``NAME.sha256``) and records the sha256 of each 1 MiB piece in ``NAME.pieces``, bound to
    that digest; later loads check the central directory's pieces at once and a member's
    pieces when it is first read (:class:`VerifiedOnUse`; issue 36: the default space's
    vectors are 77 MB of its 107, and a cached ``sanitize -m custext`` reads its words only)."""
    path = Path(path)
    record = _checked_record(path)
    if record is None:
        return None
    pieces = _recorded_pieces(path, record)
    whole = pieces is None
    if whole:
        digest, pieces = _hash_pieces(path)
        if digest != record[0]:
            raise CorruptArtefact(f"{path} does not match its recorded sha256 (corrupted)")
        _record_pieces(path, record, pieces)
    opened = _open_mapped(path)
    if opened is None:  # a compressed member: not written by save_npz; read as load_npz does
        return load_npz(path, verified=whole or verify(path))
    return VerifiedOnUse(path, record, pieces, opened, whole=whole)


class VerifiedOnUse(Mapping):
    """:func:`open_npz`'s arrays: each member mapped (copy on write) on first use, after every
    1 MiB piece of the file it occupies (local header to the next member) matched its recorded
    sha256. A mismatch re-hashes the whole file: a stale ``NAME.pieces`` (the file is the one
    ``NAME.sha256`` names) is rewritten; a damaged file is a :class:`CorruptArtefact`, and its
    ``NAME.pieces`` is removed so that the next load hashes it whole (and rebuilds it)."""

    on_use = True  # EmbeddingSpace.load defers the members it does not need at once

    def __init__(self, path: Path, record: tuple[str, int], pieces: list[str], opened, *,
                 whole: bool) -> None:
        self._path, self._record, self._pieces = path, record, pieces
        self._mm, self._spans, directory = opened
        self._ok = set(range(len(pieces))) if whole else set()
        self._arrays: dict[str, np.ndarray] = {}
        self._check(directory, len(self._mm))  # where every member lies

    def __getitem__(self, name: str) -> np.ndarray:
        if name not in self._arrays:
            start, end, size = self._spans[name]
            self._check(start, end)
            self._arrays[name] = _map_member(self._path, self._mm, name, start, end, size)
        return self._arrays[name]

    def __contains__(self, name: object) -> bool:  # Mapping's would read the member
        return name in self._spans

    def __iter__(self) -> Iterator[str]:
        return iter(self._spans)

    def __len__(self) -> int:
        return len(self._spans)

    def _check(self, start: int, end: int) -> None:
        view = memoryview(self._mm)
        for i in range(start // _PIECE, -(-end // _PIECE)):
            if i in self._ok:
                continue
            got = hashlib.sha256(view[i * _PIECE: (i + 1) * _PIECE]).hexdigest()
            if got != self._pieces[i]:
                self._recheck()
            if got != self._pieces[i]:
                raise CorruptArtefact(f"{self._path} does not match its recorded sha256 "
                                      f"(bytes {i * _PIECE}-{(i + 1) * _PIECE} differ)")
            self._ok.add(i)

    def _recheck(self) -> None:
        digest, pieces = _hash_pieces(self._path)
        if digest == self._record[0]:
            self._pieces = pieces
            _record_pieces(self._path, self._record, pieces)
            return
        with contextlib.suppress(OSError):
            self._path.with_name(self._path.name + PIECES_SUFFIX).unlink()
        raise CorruptArtefact(f"{self._path} does not match its recorded sha256 (corrupted; "
                              "the next load checks the whole file and rebuilds it)")


def _read_header(f, version):
    fmt = np.lib.format
    if version == (1, 0):
        return fmt.read_array_header_1_0(f)
    if version == (2, 0):
        return fmt.read_array_header_2_0(f)
    return fmt._read_array_header(f, version)  # 3.0 (utf-8 names): no public reader


def save_npz(path: str | os.PathLike, arrays: dict[str, np.ndarray]) -> bool:
    """Write ``arrays`` atomically with a digest; False (with a warning, nothing left behind)
    where the cache cannot be written - the caller keeps using them in memory."""
    path = Path(path)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        with atomic_write(path, "wb") as f:
            np.savez(f, **arrays)
    except (OSError, DPTextError) as err:
        warn(f"the cache is not writable ({reason(err)}): {path.name} is used in memory only "
             "and rebuilt next time")
        return False
    return record_digest(path)


def reason(err: BaseException) -> str:
    if isinstance(err, OSError) and err.strerror:
        return f"{err.strerror}: {err.filename}" if err.filename else err.strerror
    text = str(err).splitlines()[0] if str(err) else ""
    return f"{type(err).__name__}: {text}" if text else type(err).__name__


class BuildTerminated(KeyboardInterrupt):
    """SIGTERM while this process builds a cache entry: raised (like ^C) so the build's
    temporary files are removed and its lock released before the process ends."""


@contextlib.contextmanager
def build_lock(path: str | os.PathLike, what: str | None = None, *,
               report_every: float = 15.0) -> Iterator[None]:
    """Hold an exclusive lock for building ``path`` (a file under the cache's ``.locks``):
    a second process building the same entry waits for the first, then finds it built.
    Without a writable cache there is nothing to share, hence no lock.

    The waiter says what it waits for, for whom (the builder's pid and how long it has been
    building) and, every ``report_every`` seconds, how long it has waited. The holder turns
    SIGTERM into :class:`BuildTerminated` while it builds (where SIGTERM would otherwise end
    the process on the spot), so the build's ``finally`` blocks remove its temporary files and
    the lock is released at once; temporaries a killed builder left (``.NAME.*`` beside
    ``path``) are removed by the next holder before it builds.
    """
    from filelock import FileLock, Timeout

    path = Path(path)
    what = what or path.name
    lock_dir = cache_dir() / LOCK_DIR
    owner = lock_dir / f"{path.name}.owner"
    try:
        lock_dir.mkdir(parents=True, exist_ok=True)
        lock = FileLock(str(lock_dir / f"{path.name}.lock"))
        try:
            lock.acquire(timeout=1)
        except Timeout:
            _wait_for(lock, owner, what, report_every)
    except OSError:  # read-only cache: no lock file can be made, and nothing will be written
        yield
        return
    try:
        with contextlib.suppress(OSError):
            owner.write_text(f"{os.getpid()} {time.time():.3f}\n", encoding="ascii")
        _remove_orphans(path)
        with _sigterm_raises():
            yield
    finally:
        with contextlib.suppress(OSError):
            owner.unlink()
        lock.release()


def _holder(owner: Path) -> str:
    """Who holds a build lock, from the holder's ``.owner`` note."""
    try:
        pid, since = owner.read_text(encoding="ascii").split()
        return f"process {int(pid)} (building for {time.time() - float(since):.0f} s)"
    except (OSError, ValueError):
        return "another process"


def _wait_for(lock, owner: Path, what: str, report_every: float) -> None:
    from filelock import Timeout

    started = time.monotonic()
    print(f"dptext: waiting for {_holder(owner)} to finish building {what}",
          file=sys.stderr, flush=True)
    while True:
        try:
            lock.acquire(timeout=report_every)
            return
        except Timeout:
            print(f"dptext: still waiting for {_holder(owner)} to finish building {what}: "
                  f"waited {time.monotonic() - started:.0f} s so far", file=sys.stderr, flush=True)


def _remove_orphans(path: Path) -> None:
    """Temporaries of ``path`` a killed builder left behind (we hold the lock: none is live)."""
    import shutil

    with contextlib.suppress(OSError):
        for item in path.parent.glob(f".{path.name}.*"):
            if item.is_dir() and not item.is_symlink():
                shutil.rmtree(item, ignore_errors=True)
            else:
                with contextlib.suppress(OSError):
                    item.unlink()


@contextlib.contextmanager
def _sigterm_raises() -> Iterator[None]:
    """SIGTERM raises :class:`BuildTerminated` in the main thread while the block runs, where it
    would otherwise end the process at once (a handler someone installed is left alone)."""
    import signal
    import threading

    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = signal.getsignal(signal.SIGTERM)
    if previous not in (signal.SIG_DFL, None):
        yield
        return

    def terminate(signum, frame):
        raise BuildTerminated()

    signal.signal(signal.SIGTERM, terminate)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


# ------------------------------------------------------------ directories (converted models)
MANIFEST = "MANIFEST.sha256"


def _umask() -> int:
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def share_modes(root: str | os.PathLike) -> None:
    """Give a directory tree made by mkdtemp/mkstemp (0700/0600) the modes a plain mkdir/open
    would (0777/0666 less the umask), so a shared cache is readable by other users."""
    root = Path(root)
    mask = _umask()
    os.chmod(root, 0o777 & ~mask)
    for item in root.rglob("*"):
        if not item.is_symlink():
            os.chmod(item, (0o777 if item.is_dir() else 0o666) & ~mask)


def write_manifest(root: str | os.PathLike) -> None:
    """Record the sha256 and size of every file of a directory in its MANIFEST.sha256."""
    root = Path(root)
    lines = []
    for item in sorted(root.rglob("*")):
        if item.is_file() and not item.is_symlink() and item.name != MANIFEST:
            rel = item.relative_to(root).as_posix()
            lines.append(f"sha256 {file_digest(item)} {item.stat().st_size} {rel}\n")
    (root / MANIFEST).write_text("".join(lines), encoding="utf-8")


def verify_dir(root: str | os.PathLike) -> bool:
    """True if every file of ``root``'s manifest is present and matches it, False if there is
    no manifest (a legacy directory); :class:`CorruptArtefact` otherwise."""
    root = Path(root)
    manifest = root / MANIFEST
    if not manifest.is_file():
        return False
    try:
        lines = manifest.read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError) as err:
        raise CorruptArtefact(f"{manifest} is unreadable ({type(err).__name__})") from None
    for line in lines:
        parts = line.split(" ", 3)
        if len(parts) != 4 or parts[0] != "sha256" or not parts[2].isdigit():
            raise CorruptArtefact(f"{manifest} is not a manifest")
        item = root / parts[3]
        if not item.is_file():
            raise CorruptArtefact(f"{item} is missing")
        if item.stat().st_size != int(parts[2]):
            raise CorruptArtefact(f"{item} has {item.stat().st_size} bytes, the manifest "
                                  f"records {parts[2]} (truncated or overwritten)")
        if file_digest(item) != parts[1]:
            raise CorruptArtefact(f"{item} does not match its recorded sha256 (corrupted)")
    return True


def publish_dir(tmp: str | os.PathLike, target: str | os.PathLike) -> None:
    """Move a directory built under a temporary name into place: shared modes, a manifest,
    then one rename. A target that exists already (another process won) is kept."""
    tmp, target = Path(tmp), Path(target)
    write_manifest(tmp)
    share_modes(tmp)
    try:
        tmp.rename(target)
    except OSError:
        if not target.is_dir():
            raise


def rebuild_hint(kind: str) -> str:
    return f"`dptext cache clear --kind {kind}` removes it; the next run rebuilds it"
