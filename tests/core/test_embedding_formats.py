"""Tests for dptext.embedding_formats: every format is written here, no downloads."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from dptext.embedding_formats import (
    read_spacy_vectors,
    read_static_model_dir,
    read_text_vectors,
    read_vectors,
    read_word2vec_binary,
)
from dptext.errors import DPTextError

WORDS = ["the", "café", "naïve", "x-ray", "日本"]


@pytest.fixture
def vecs() -> np.ndarray:
    rng = np.random.default_rng(0)
    return rng.standard_normal((len(WORDS), 4)).astype(np.float32)


def _text_lines(words: list[str], vectors: np.ndarray) -> list[str]:
    # repr of a float32 round-trips exactly when parsed back as float32
    pairs = zip(words, vectors, strict=True)
    return [w + " " + " ".join(repr(float(x)) for x in row) for w, row in pairs]


def _write_text(path: Path, lines: list[str], newline: str = "\n") -> Path:
    path.write_bytes(newline.join(lines).encode("utf-8") + newline.encode())
    return path


def _write_w2v_bin(path: Path, words: list[str], vectors: np.ndarray, eol: bool = True) -> Path:
    out = bytearray(f"{len(words)} {vectors.shape[1]}\n".encode())
    for w, row in zip(words, vectors, strict=True):
        out += w.encode("utf-8") + b" " + row.astype("<f4").tobytes()
        if eol:
            out += b"\n"
    path.write_bytes(bytes(out))
    return path


# --- text formats -------------------------------------------------------------------------


def test_glove_text_round_trip(tmp_path: Path, vecs: np.ndarray) -> None:
    path = _write_text(tmp_path / "glove.txt", _text_lines(WORDS, vecs))
    words, vectors = read_text_vectors(path)
    assert words == WORDS
    assert vectors.dtype == np.float32
    assert vectors.shape == (5, 4)
    np.testing.assert_array_equal(vectors, vecs)


def test_word2vec_text_header_detected(tmp_path: Path, vecs: np.ndarray) -> None:
    lines = ["5 4", *_text_lines(WORDS, vecs)]
    path = _write_text(tmp_path / "wiki.vec", lines)
    words, vectors = read_text_vectors(path)
    assert words == WORDS  # the header is not a word
    np.testing.assert_array_equal(vectors, vecs)


def test_header_count_mismatch_is_an_error(tmp_path: Path, vecs: np.ndarray) -> None:
    path = _write_text(tmp_path / "bad.vec", ["7 4", *_text_lines(WORDS, vecs)])
    with pytest.raises(DPTextError, match="header says 7 vectors but the file has 5"):
        read_text_vectors(path)


def test_header_dim_mismatch_names_line(tmp_path: Path, vecs: np.ndarray) -> None:
    path = _write_text(tmp_path / "bad.vec", ["5 3", *_text_lines(WORDS, vecs)])
    with pytest.raises(DPTextError, match=r"line 2: expected 3 values after the word, got 4"):
        read_text_vectors(path)


def test_first_line_with_two_non_integer_fields_is_data(tmp_path: Path) -> None:
    path = _write_text(tmp_path / "one_dim.txt", ["a 0.5", "b 2"])
    words, vectors = read_text_vectors(path)
    assert words == ["a", "b"]
    np.testing.assert_array_equal(vectors, np.array([[0.5], [2.0]], dtype=np.float32))


def test_crlf_trailing_whitespace_and_blank_lines(tmp_path: Path, vecs: np.ndarray) -> None:
    lines = [line + "  \t" for line in _text_lines(WORDS, vecs)] + ["", "   ", ""]
    path = _write_text(tmp_path / "crlf.txt", ["5 4", *lines], newline="\r\n")
    words, vectors = read_text_vectors(path)
    assert words == WORDS
    np.testing.assert_array_equal(vectors, vecs)


def test_utf8_bom_is_ignored(tmp_path: Path, vecs: np.ndarray) -> None:
    path = tmp_path / "bom.txt"
    path.write_bytes(b"\xef\xbb\xbf" + "\n".join(_text_lines(WORDS, vecs)).encode("utf-8"))
    words, vectors = read_text_vectors(path)
    assert words == WORDS
    np.testing.assert_array_equal(vectors, vecs)


def test_word_with_non_breaking_space(tmp_path: Path) -> None:
    path = _write_text(tmp_path / "nbsp.txt", ["a\u00a0b 1 2", "c 3 4"])
    words, vectors = read_text_vectors(path)
    assert words == ["a\u00a0b", "c"]
    np.testing.assert_array_equal(vectors, [[1, 2], [3, 4]])


def test_many_rows_grow_buffer(tmp_path: Path) -> None:
    data = np.arange(3000 * 3, dtype=np.float32).reshape(3000, 3)
    words = [f"w{i}" for i in range(3000)]
    path = _write_text(tmp_path / "big.txt", _text_lines(words, data))
    got_words, got = read_text_vectors(path)
    assert got_words == words
    np.testing.assert_array_equal(got, data)


def test_bad_line_names_file_and_line(tmp_path: Path, vecs: np.ndarray) -> None:
    lines = _text_lines(WORDS, vecs)
    lines[2] = "naïve 1.0 2.0 3.0"  # 3 values instead of 4, on line 3
    path = _write_text(tmp_path / "bad.txt", lines)
    with pytest.raises(DPTextError) as info:
        read_text_vectors(path)
    msg = str(info.value)
    assert "\n" not in msg
    assert str(path) in msg
    assert "line 3" in msg
    assert "expected 4 values" in msg and "got 3" in msg


def test_non_numeric_value(tmp_path: Path) -> None:
    path = _write_text(tmp_path / "nan.txt", ["a 1 2", "b 1 oops"])
    with pytest.raises(DPTextError, match=r"line 2: not a number: 'oops'"):
        read_text_vectors(path)


def test_invalid_utf8_names_line(tmp_path: Path) -> None:
    path = tmp_path / "latin1.txt"
    path.write_bytes(b"a 1 2\ncaf\xe9 3 4\n")
    with pytest.raises(DPTextError, match=r"line 2: invalid UTF-8"):
        read_text_vectors(path)


def test_empty_text_file(tmp_path: Path) -> None:
    path = tmp_path / "empty.txt"
    path.write_text("\n\n", encoding="utf-8")
    with pytest.raises(DPTextError, match="no vectors found"):
        read_text_vectors(path)


# --- word2vec binary ----------------------------------------------------------------------


@pytest.mark.parametrize("eol", [True, False])
def test_word2vec_binary_round_trip(tmp_path: Path, vecs: np.ndarray, eol: bool) -> None:
    path = _write_w2v_bin(tmp_path / "vectors.bin", WORDS, vecs, eol=eol)
    words, vectors = read_word2vec_binary(path)
    assert words == WORDS
    assert vectors.dtype == np.float32
    np.testing.assert_array_equal(vectors, vecs)


def test_word2vec_binary_bytes_that_look_like_separators(tmp_path: Path) -> None:
    # 32.0 as float32 contains no 0x20, but these values embed space (0x20) and newline (0x0a)
    # bytes inside the float block, which must not be mistaken for separators.
    tricky = np.frombuffer(b"\x20\x0a\x20\x0a\x0a\x20\x0a\x20", dtype="<f4").reshape(1, 2)
    path = _write_w2v_bin(tmp_path / "tricky.bin", ["w"], tricky)
    words, vectors = read_word2vec_binary(path)
    assert words == ["w"]
    np.testing.assert_array_equal(vectors, tricky)


def test_word2vec_binary_truncated(tmp_path: Path, vecs: np.ndarray) -> None:
    path = _write_w2v_bin(tmp_path / "trunc.bin", WORDS, vecs)
    path.write_bytes(path.read_bytes()[:-10])
    with pytest.raises(DPTextError, match="truncated file: header says 5 vectors but only 4"):
        read_word2vec_binary(path)


def test_word2vec_binary_bad_header(tmp_path: Path) -> None:
    path = tmp_path / "nohdr.bin"
    path.write_bytes(b"hello world again\n")
    with pytest.raises(DPTextError, match="not a word2vec 'count dim' header"):
        read_word2vec_binary(path)


# --- static (model2vec) model dirs --------------------------------------------------------


def _write_static_dir(tmp_path: Path, key: str = "embeddings") -> tuple[Path, np.ndarray]:
    from safetensors.numpy import save_file

    model_dir = tmp_path / "m2v"
    model_dir.mkdir()
    vocab = {"[PAD]": 0, "[CLS]": 1, "run": 2, "##ing": 3, "walk": 4, "[UNK]": 5}
    emb = np.arange(6 * 3, dtype=np.float32).reshape(6, 3) / 7
    save_file({key: emb}, str(model_dir / "model.safetensors"))
    tokenizer = {
        "version": "1.0",
        "added_tokens": [
            {"id": 0, "content": "[PAD]", "special": True},
            {"id": 1, "content": "[CLS]", "special": True},
            {"id": 5, "content": "[UNK]", "special": True},
        ],
        "model": {
            "type": "WordPiece",
            "unk_token": "[UNK]",
            "continuing_subword_prefix": "##",
            "vocab": vocab,
        },
    }
    (model_dir / "tokenizer.json").write_text(json.dumps(tokenizer), encoding="utf-8")
    return model_dir, emb


def test_static_model_dir_wordpiece(tmp_path: Path) -> None:
    model_dir, emb = _write_static_dir(tmp_path)
    words, vectors = read_static_model_dir(model_dir)
    assert words == ["run", "walk"]  # specials and ##ing skipped, ordered by id
    assert vectors.dtype == np.float32
    np.testing.assert_array_equal(vectors, emb[[2, 4]])


def test_static_model_dir_single_other_key(tmp_path: Path) -> None:
    model_dir, emb = _write_static_dir(tmp_path, key="embedding.weight")
    words, vectors = read_static_model_dir(model_dir)
    assert words == ["run", "walk"]
    np.testing.assert_array_equal(vectors, emb[[2, 4]])


def test_static_model_dir_unigram_list_vocab(tmp_path: Path) -> None:
    from safetensors.numpy import save_file

    model_dir = tmp_path / "uni"
    model_dir.mkdir()
    emb = np.eye(4, dtype=np.float16)  # non-float32 storage is converted
    save_file({"embeddings": emb}, str(model_dir / "model.safetensors"))
    tokenizer = {
        "added_tokens": [{"id": 0, "content": "<unk>", "special": True}],
        "model": {"type": "Unigram", "vocab": [["<unk>", 0.0], ["a", -1.0], ["b", -2], ["c", -3]]},
    }
    (model_dir / "tokenizer.json").write_text(json.dumps(tokenizer), encoding="utf-8")
    words, vectors = read_static_model_dir(model_dir)
    assert words == ["a", "b", "c"]
    assert vectors.dtype == np.float32
    np.testing.assert_array_equal(vectors, np.eye(4, dtype=np.float32)[1:])


def test_static_model_dir_missing_tokenizer(tmp_path: Path) -> None:
    model_dir, _ = _write_static_dir(tmp_path)
    (model_dir / "tokenizer.json").unlink()
    with pytest.raises(DPTextError, match="no such file: .*tokenizer.json"):
        read_static_model_dir(model_dir)


# --- spaCy --------------------------------------------------------------------------------


def _blank_nlp_with_vectors():
    spacy = pytest.importorskip("spacy")
    nlp = spacy.blank("en")
    table = {
        "apple": np.array([1.0, 2.0, 3.0], dtype=np.float32),
        "banana": np.array([-1.5, 0.25, 8.0], dtype=np.float32),
        "cherry": np.array([0.0, 1e-3, -7.0], dtype=np.float32),
    }
    for word, vec in table.items():
        nlp.vocab.set_vector(word, vec)
    return nlp, table


def test_spacy_vectors_from_nlp() -> None:
    nlp, table = _blank_nlp_with_vectors()
    words, vectors = read_spacy_vectors(nlp)
    assert sorted(words) == sorted(table)
    assert vectors.shape == (3, 3) and vectors.dtype == np.float32
    for word, row in zip(words, vectors, strict=True):
        np.testing.assert_array_equal(row, table[word])


def test_spacy_shared_rows_one_entry_per_key() -> None:
    nlp, table = _blank_nlp_with_vectors()
    key = nlp.vocab.strings.add("pomme")
    nlp.vocab.vectors.add(key, row=nlp.vocab.vectors.key2row[nlp.vocab.strings["apple"]])
    words, vectors = read_spacy_vectors(nlp)
    assert sorted(words) == sorted([*table, "pomme"])
    got = dict(zip(words, vectors, strict=True))
    np.testing.assert_array_equal(got["pomme"], table["apple"])
    np.testing.assert_array_equal(got["apple"], table["apple"])


def test_spacy_vectors_from_model_dir_and_auto(tmp_path: Path) -> None:
    nlp, table = _blank_nlp_with_vectors()
    model_dir = tmp_path / "sp_model"
    nlp.to_disk(model_dir)
    assert (model_dir / "meta.json").is_file()
    for words, vectors in (read_spacy_vectors(model_dir), read_vectors(model_dir)):
        assert sorted(words) == sorted(table)
        for word, row in zip(words, vectors, strict=True):
            np.testing.assert_array_equal(row, table[word])


def test_spacy_rejects_other_objects() -> None:
    with pytest.raises(DPTextError, match="expected a spaCy Language"):
        read_spacy_vectors(42)


# --- read_vectors dispatch ----------------------------------------------------------------


def test_read_vectors_auto_detection(tmp_path: Path, vecs: np.ndarray) -> None:
    glove = _write_text(tmp_path / "g.txt", _text_lines(WORDS, vecs))
    vec = _write_text(tmp_path / "f.vec", ["5 4", *_text_lines(WORDS, vecs)])
    binary = _write_w2v_bin(tmp_path / "w.BIN", WORDS, vecs)
    for path in (glove, vec, binary):
        words, vectors = read_vectors(path)
        assert words == WORDS, path
        np.testing.assert_array_equal(vectors, vecs)
    model_dir, emb = _write_static_dir(tmp_path)
    words, vectors = read_vectors(model_dir)
    assert words == ["run", "walk"]
    np.testing.assert_array_equal(vectors, emb[[2, 4]])


@pytest.mark.parametrize("fmt", ["glove", "word2vec", "fasttext", "GloVe"])
def test_read_vectors_explicit_text_formats(tmp_path: Path, vecs: np.ndarray, fmt: str) -> None:
    path = _write_text(tmp_path / "v.data", ["5 4", *_text_lines(WORDS, vecs)])
    words, vectors = read_vectors(path, fmt=fmt)
    assert words == WORDS
    np.testing.assert_array_equal(vectors, vecs)


def test_read_vectors_explicit_binary_and_static(tmp_path: Path, vecs: np.ndarray) -> None:
    binary = _write_w2v_bin(tmp_path / "w.dat", WORDS, vecs)
    assert read_vectors(binary, fmt="word2vec-bin")[0] == WORDS
    model_dir, _ = _write_static_dir(tmp_path)
    assert read_vectors(model_dir, fmt="static")[0] == ["run", "walk"]


def test_read_vectors_missing_file(tmp_path: Path) -> None:
    missing = tmp_path / "nope.txt"
    with pytest.raises(DPTextError) as info:
        read_vectors(missing)
    assert str(info.value) == f"no such file: {missing}"


def test_read_vectors_unknown_format(tmp_path: Path, vecs: np.ndarray) -> None:
    path = _write_text(tmp_path / "g.txt", _text_lines(WORDS, vecs))
    with pytest.raises(DPTextError, match=r"unknown vector format 'xml'.*glove"):
        read_vectors(path, fmt="xml")


def test_read_vectors_unrecognised_directory(tmp_path: Path) -> None:
    with pytest.raises(DPTextError, match="neither a static model"):
        read_vectors(tmp_path)


def test_errors_are_value_errors(tmp_path: Path) -> None:
    with pytest.raises(ValueError):
        read_vectors(tmp_path / "missing.bin")
