"""Column names a reader cannot tell apart or see (issue 47): a Parquet file with two columns
of one name is refused before any work (N4: the second ``note`` was privatized, 3 records were
charged, then a traceback and no output); a blank or trailing-space name is visible in the
"not covered" error (N9)."""

from __future__ import annotations

import numpy as np
import pytest

from dptext.cli import main
from dptext.embeddings import EmbeddingSpace

pa = pytest.importorskip("pyarrow")
pq = pytest.importorskip("pyarrow.parquet")

WORDS = ["anna", "was", "seen", "today", "bob", "called", "back", "jones", "smith", "dr"]


@pytest.fixture()
def space_file(tmp_path, monkeypatch):
    monkeypatch.setenv("DPTEXT_CACHE", str(tmp_path / "cache"))
    rng = np.random.default_rng(0)
    space = EmbeddingSpace(WORDS, rng.standard_normal((len(WORDS), 8)).astype(np.float32),
                           name="input-columns-test")
    path = tmp_path / "space.npz"
    space.save(path)
    return path


def _sanitize(capsys, *args):
    code = main(["sanitize", "-m", "custext", "-e", "2", "--k", "3", "--seed", "1",
                 "--no-progress", *map(str, args)])
    return code, capsys.readouterr().err


def test_a_parquet_file_with_a_repeated_column_is_refused_before_any_work(tmp_path, capsys,
                                                                         space_file):
    from dptext.ledger import Ledger

    src = tmp_path / "dup.parquet"
    pq.write_table(pa.Table.from_arrays(
        [pa.array(["p1", "p2", "p3"]), pa.array(["anna was seen", "bob called", "dr jones"]),
         pa.array(["bob called back", "anna was seen today", "dr smith"])],
        names=["patient_id", "note", "note"]), src)
    out, ledger = tmp_path / "out.parquet", tmp_path / "l.sqlite"
    code, err = _sanitize(capsys, "--space", space_file, "-i", src, "-f", "note", "--drop",
                          "patient_id", "-o", out, "--ledger", ledger, "--owner", "o",
                          "--dataset", "d", "--user-field", "patient_id")
    assert code == 2 and err.count("\n") == 1 and "Traceback" not in err
    assert "the Parquet schema repeats the column 'note' (columns 2 and 3)" in err
    written = {p.name for p in tmp_path.iterdir()} - {"cache", "dup.parquet", "space.npz"}
    assert not any(name.startswith("out") for name in written), written  # nothing written
    led = Ledger(str(ledger))
    assert list(led.charges()) == [] and list(led.releases()) == []  # nothing charged


@pytest.mark.parametrize("fmt", ["csv", "parquet"])
def test_a_blank_or_trailing_space_column_name_is_shown(tmp_path, capsys, space_file, fmt):
    names = ["note", " ", "id ", "ward"]
    src = tmp_path / f"in.{fmt}"
    if fmt == "csv":
        src.write_text(",".join(names) + "\nanna was seen, ,x,y\n", encoding="utf-8")
    else:
        pq.write_table(pa.Table.from_arrays([pa.array(["anna was seen"])] * 4, names=names),
                       src)
    code, err = _sanitize(capsys, "--space", space_file, "-i", src, "-f", "note", "-o",
                          tmp_path / f"out.{fmt}")
    assert code == 2
    assert "columns ' ','id ',ward are not covered" in err  # ordinary names stay as they are
