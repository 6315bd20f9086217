"""Readers for the word-vector files users already have.

Every reader returns ``(words, vectors)``: a list of strings and a float32 array of shape
``(len(words), dim)`` whose rows follow the order of the file (or of the token ids).

Supported formats: GloVe text, word2vec text / fastText ``.vec`` (with a ``count dim`` header),
the original word2vec C binary format, spaCy vectors, and model2vec / static-embedding model
directories (``model.safetensors`` + ``tokenizer.json``).
"""

from __future__ import annotations

import json
import mmap
import os
from pathlib import Path
from typing import Any

import numpy as np

from dptext.errors import DPTextError

__all__ = [
    "FORMATS",
    "read_spacy_vectors",
    "read_static_model_dir",
    "read_text_vectors",
    "read_vectors",
    "read_word2vec_binary",
]

FORMATS = ("auto", "glove", "word2vec", "fasttext", "word2vec-bin", "spacy", "static")

_WS = " \t\r\n\f\v"


def _require_file(path: str | os.PathLike[str]) -> Path:
    p = Path(path)
    if not p.exists():
        raise DPTextError(f"no such file: {p}")
    if p.is_dir():
        raise DPTextError(f"expected a file but got a directory: {p}")
    return p


def _require_dir(path: str | os.PathLike[str]) -> Path:
    p = Path(path)
    if not p.exists():
        raise DPTextError(f"no such file: {p}")
    if not p.is_dir():
        raise DPTextError(f"expected a model directory but got a file: {p}")
    return p


def _parse_header(line: str) -> tuple[int, int] | None:
    """Return ``(count, dim)`` if ``line`` is a word2vec/fastText header, else None."""
    fields = line.split()
    if len(fields) != 2:
        return None
    try:
        count, dim = int(fields[0]), int(fields[1])
    except ValueError:
        return None
    return count, dim


def read_text_vectors(path: str | os.PathLike[str]) -> tuple[list[str], np.ndarray]:
    """Read GloVe text or word2vec text / fastText ``.vec`` vectors (header auto-detected).

    Each data line is ``word v1 v2 ... vdim``: the word is everything before the first space,
    so words may contain non-ASCII whitespace such as U+00A0. Trailing whitespace, ``\\r\\n``
    line endings, a UTF-8 BOM and blank lines are tolerated. A line with the wrong number of
    values, a non-numeric value or invalid UTF-8 raises :class:`DPTextError`.
    """
    p = _require_file(path)
    words: list[str] = []
    buf: np.ndarray | None = None
    dim: int | None = None
    expected_count: int | None = None
    n = 0
    with p.open("rb") as fh:
        for lineno, raw in enumerate(fh, start=1):
            try:
                line = raw.decode("utf-8")
            except UnicodeDecodeError as err:
                raise DPTextError(f"{p}: line {lineno}: invalid UTF-8 ({err.reason})") from None
            if lineno == 1 and line.startswith("\ufeff"):
                line = line[1:]
            line = line.rstrip(_WS)
            if not line.strip(_WS):
                continue
            if lineno == 1:
                header = _parse_header(line)
                if header is not None:
                    expected_count, dim = header
                    if dim <= 0 or expected_count < 0:
                        raise DPTextError(f"{p}: line 1: invalid header {line!r}")
                    buf = np.empty((expected_count, dim), dtype=np.float32)
                    continue
            word, sep, rest = line.partition(" ")
            fields = rest.split() if sep else []
            if dim is None:
                if not fields:
                    raise DPTextError(f"{p}: line {lineno}: no vector values after the word")
                dim = len(fields)
            if len(fields) != dim:
                raise DPTextError(
                    f"{p}: line {lineno}: expected {dim} values after the word, got {len(fields)}"
                )
            if buf is None:
                buf = np.empty((1024, dim), dtype=np.float32)
            elif n == buf.shape[0]:
                grown = np.empty((max(2 * n, 1024), dim), dtype=np.float32)
                grown[:n] = buf[:n]
                buf = grown
            try:
                buf[n] = np.array(fields, dtype=np.float32)
            except ValueError:
                bad = next((f for f in fields if not _is_float(f)), fields[0])
                raise DPTextError(f"{p}: line {lineno}: not a number: {bad!r}") from None
            words.append(word)
            n += 1
    if expected_count is not None and n != expected_count:
        raise DPTextError(f"{p}: header says {expected_count} vectors but the file has {n}")
    if dim is None or buf is None:
        raise DPTextError(f"{p}: no vectors found")
    vectors = buf if n == buf.shape[0] else buf[:n].copy()
    return words, vectors


def _is_float(s: str) -> bool:
    try:
        float(s)
    except ValueError:
        return False
    return True


def read_word2vec_binary(path: str | os.PathLike[str]) -> tuple[list[str], np.ndarray]:
    """Read the original word2vec C binary format.

    Layout: a ``count dim\\n`` header, then per word the UTF-8 word bytes, a space, ``dim``
    little-endian float32 values and an optional ``\\n``. The file is memory-mapped, so large
    files (e.g. GoogleNews, 3.6 GB) are not read into memory twice.
    """
    p = _require_file(path)
    if p.stat().st_size == 0:
        raise DPTextError(f"{p}: empty file")
    with p.open("rb") as fh, mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ) as mm:
        size = len(mm)
        eol = mm.find(b"\n")
        if eol < 0:
            raise DPTextError(f"{p}: missing 'count dim' header line")
        try:
            header = _parse_header(mm[:eol].decode("ascii"))
        except UnicodeDecodeError:
            header = None
        if header is None or header[0] < 0 or header[1] <= 0:
            raise DPTextError(f"{p}: first line is not a word2vec 'count dim' header")
        count, dim = header
        nbytes = 4 * dim
        words: list[str] = []
        vectors = np.empty((count, dim), dtype=np.float32)
        pos = eol + 1
        for i in range(count):
            while pos < size and mm[pos] in b"\r\n":
                pos += 1
            end = mm.find(b" ", pos)
            if end < 0 or end + 1 + nbytes > size:
                raise DPTextError(
                    f"{p}: truncated file: header says {count} vectors but only {i} could be read"
                )
            try:
                word = mm[pos:end].decode("utf-8")
            except UnicodeDecodeError as err:
                raise DPTextError(
                    f"{p}: word {i + 1} (byte offset {pos}): invalid UTF-8 ({err.reason})"
                ) from None
            words.append(word)
            vectors[i] = np.frombuffer(mm, dtype="<f4", count=dim, offset=end + 1)
            pos = end + 1 + nbytes
    return words, vectors


def _as_numpy(data: Any) -> np.ndarray:
    if hasattr(data, "get") and not isinstance(data, np.ndarray):  # cupy array
        data = data.get()
    return np.asarray(data, dtype=np.float32)


def read_spacy_vectors(path_or_nlp: Any) -> tuple[list[str], np.ndarray]:
    """Read the word vectors of a spaCy pipeline.

    Accepts a ``Language`` (or anything with a ``.vocab``) or the path to a saved spaCy model
    directory. Returns one entry per vector key, ordered by row then key; keys sharing a row
    (pruned vectors) each get a copy of that row. Keys whose string is unknown are skipped.
    """
    if isinstance(path_or_nlp, (str, os.PathLike)):
        vocab = _load_spacy_vocab(_require_dir(path_or_nlp))
        source = str(path_or_nlp)
    elif hasattr(path_or_nlp, "vocab"):
        vocab = path_or_nlp.vocab
        source = "spaCy pipeline"
    else:
        raise DPTextError(
            f"expected a spaCy Language or a model directory, got {type(path_or_nlp).__name__}"
        )
    vectors = vocab.vectors
    if getattr(vectors, "mode", "default") != "default":
        raise DPTextError(
            f"{source}: spaCy vectors in {vectors.mode!r} mode have no per-word table"
        )
    data = _as_numpy(vectors.data)
    strings = vocab.strings
    entries: list[tuple[int, int, str]] = []
    for key, row in vectors.key2row.items():
        try:
            word = strings[key]
        except KeyError:
            continue
        entries.append((int(row), int(key), word))
    entries.sort()
    words = [w for _, _, w in entries]
    rows = np.fromiter((r for r, _, _ in entries), dtype=np.intp, count=len(entries))
    return words, np.ascontiguousarray(data[rows], dtype=np.float32)


def _load_spacy_vocab(path: Path) -> Any:
    try:
        import spacy
        from spacy.vocab import Vocab
    except ImportError:
        raise DPTextError("reading spaCy vectors needs spaCy: pip install spacy") from None
    if (path / "vocab").is_dir():
        # Load only the vocab (strings + vectors), not the pipeline components.
        try:
            return Vocab().from_disk(path / "vocab")
        except Exception as err:  # report any spaCy failure on one line
            raise DPTextError(f"{path}: cannot load spaCy vocab: {err}") from None
    try:
        return spacy.load(path).vocab
    except Exception as err:
        msg = str(err).splitlines()[0] if str(err) else type(err).__name__
        raise DPTextError(f"{path}: cannot load spaCy model: {msg}") from None


def read_static_model_dir(path: str | os.PathLike[str]) -> tuple[list[str], np.ndarray]:
    """Read a model2vec / static-embedding model directory.

    Needs ``model.safetensors`` (key ``"embeddings"``, or a single 2-D tensor) and a Hugging
    Face ``tokenizer.json``. Returns tokens ordered by id with their embedding rows, skipping
    special added tokens and WordPiece continuation tokens (``##...``).
    """
    p = _require_dir(path)
    weights_path = p / "model.safetensors"
    tok_path = p / "tokenizer.json"
    for f in (weights_path, tok_path):
        if not f.is_file():
            raise DPTextError(f"no such file: {f}")
    try:
        from safetensors.numpy import load_file
    except ImportError:
        raise DPTextError(
            "reading static models needs safetensors: pip install safetensors"
        ) from None
    try:
        tensors = load_file(str(weights_path))
    except Exception as err:
        raise DPTextError(f"{weights_path}: cannot read safetensors file: {err}") from None
    if "embeddings" in tensors:
        emb = tensors["embeddings"]
    elif len(tensors) == 1:
        emb = next(iter(tensors.values()))
    else:
        raise DPTextError(f"{weights_path}: no 'embeddings' tensor; keys are {sorted(tensors)}")
    if emb.ndim != 2:
        raise DPTextError(f"{weights_path}: expected a 2-D embedding tensor, got shape {emb.shape}")

    try:
        tok = json.loads(tok_path.read_text(encoding="utf-8"))
        model = tok["model"]
        vocab = model["vocab"]
    except (OSError, ValueError, KeyError, TypeError) as err:
        raise DPTextError(f"{tok_path}: not a Hugging Face tokenizer.json ({err})") from None

    if isinstance(vocab, dict):
        id_token = sorted((int(i), str(t)) for t, i in vocab.items())
    elif isinstance(vocab, list):  # Unigram: [[token, score], ...], id = index
        id_token = [(i, str(entry[0])) for i, entry in enumerate(vocab)]
    else:
        raise DPTextError(f"{tok_path}: unsupported vocab of type {type(vocab).__name__}")

    special = {
        (str(t.get("content")), int(t.get("id", -1)))
        for t in tok.get("added_tokens") or []
        if isinstance(t, dict) and t.get("special")
    }
    special_ids = {i for _, i in special}
    special_tokens = {t for t, _ in special}
    model_type = model.get("type")
    prefix = model.get("continuing_subword_prefix")
    if prefix is None and model_type in ("WordPiece", None):
        prefix = "##"

    n_rows = emb.shape[0]
    words: list[str] = []
    rows: list[int] = []
    for i, token in id_token:
        if i in special_ids or token in special_tokens:
            continue
        if prefix and token.startswith(prefix):
            continue
        if not 0 <= i < n_rows:
            raise DPTextError(
                f"{tok_path}: token {token!r} has id {i} but the embedding matrix has {n_rows} rows"
            )
        words.append(token)
        rows.append(i)
    vectors = np.ascontiguousarray(emb[np.asarray(rows, dtype=np.intp)], dtype=np.float32)
    return words, vectors


def read_vectors(path: str | os.PathLike[str], fmt: str = "auto") -> tuple[list[str], np.ndarray]:
    """Read word vectors in any supported format; ``fmt`` is one of :data:`FORMATS`.

    ``"auto"`` picks: a directory with ``model.safetensors`` -> static; a directory with a
    spaCy ``meta.json`` -> spacy; a ``.bin`` file -> word2vec-bin; anything else -> text.
    """
    key = str(fmt).strip().lower()
    if key not in FORMATS:
        raise DPTextError(f"unknown vector format {fmt!r}; choose one of: {', '.join(FORMATS)}")
    p = Path(path)
    if not p.exists():
        raise DPTextError(f"no such file: {p}")
    if key == "auto":
        if p.is_dir():
            if (p / "model.safetensors").is_file():
                key = "static"
            elif (p / "meta.json").is_file():
                key = "spacy"
            else:
                raise DPTextError(
                    f"{p}: directory is neither a static model (model.safetensors) "
                    "nor a spaCy model (meta.json); pass a vectors file or set the format"
                )
        elif p.suffix.lower() == ".bin":
            key = "word2vec-bin"
        else:
            key = "glove"
    if key in ("glove", "word2vec", "fasttext"):
        return read_text_vectors(p)
    if key == "word2vec-bin":
        return read_word2vec_binary(p)
    if key == "spacy":
        return read_spacy_vectors(p)
    return read_static_model_dir(p)
