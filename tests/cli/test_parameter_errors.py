"""An engine error names the library's parameter to a Python caller and the command line's flag
on the command line (issue 43): one message, spelled for its reader."""

from __future__ import annotations

import numpy as np
import pytest

from dptext import mechanism
from dptext.cli import main
from dptext.cli.common import flag_of
from dptext.corpus import CorpusJob, run
from dptext.embeddings import EmbeddingSpace
from dptext.errors import DPTextError, ParameterError

WORDS = ["anna", "was", "seen", "today", "w1", "w2", "w3", "w4"]


def test_one_message_two_spellings():
    err = ParameterError("`budget` needs `ledger`; `user_field` 'pid' is fine")
    assert str(err) == "budget= needs ledger=; user_field= 'pid' is fine"
    assert err.spelled(flag_of) == "--budget needs --ledger; --user-field 'pid' is fine"
    assert flag_of("fields") == "--field"
    assert DPTextError("plain").spelled(flag_of) == "plain"


def test_the_engine_names_parameters_and_the_command_line_flags(tmp_path, capsys):
    rng = np.random.default_rng(0)
    space = EmbeddingSpace(WORDS, rng.standard_normal((len(WORDS), 6)).astype(np.float32),
                           name="errors-test")
    src = tmp_path / "in.txt"
    src.write_text("anna was seen today\n")
    m = mechanism("custext", epsilon=2, k=3, space=space)
    with pytest.raises(DPTextError, match=r"^budget= needs ledger=$"):
        run(CorpusJob(m, str(src), str(tmp_path / "o.txt"), budget=1.0))
    path = tmp_path / "space.npz"
    space.save(path)
    code = main(["sanitize", "-m", "custext", "-e", "2", "--k", "3", "--space", str(path),
                 "-i", str(src), "-o", str(tmp_path / "o.txt"), "--budget", "1",
                 "--no-progress"])
    err = capsys.readouterr().err
    assert code == 2 and err.strip() == "dptext: error: --budget needs --ledger", err
