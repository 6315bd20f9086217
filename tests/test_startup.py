"""What every ``dptext`` command pays before it knows what it will do (issue 36, CLI start-up):
``import dptext`` and the command parser import neither numpy nor the corpus engine, and the
package's names are still there when asked for."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

SRC = str(Path(__file__).resolve().parents[1] / "src")


def _run(code: str) -> str:
    env = {"PYTHONPATH": SRC, "PATH": "/usr/bin:/bin"}
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env,
                          check=True)
    return done.stdout.strip()


def test_the_parser_imports_no_numpy_and_no_corpus_engine():
    out = _run("import sys, dptext.cli; dptext.cli.parser(); "
               "print(sorted(m for m in sys.modules if m in ('numpy', 'torch', 'dptext.corpus', "
               "'dptext.mechanisms', 'dptext.embeddings', 'pandas', 'scipy')))")
    assert out == "[]"


def test_package_names_load_on_first_use():
    out = _run("import sys, dptext\n"
               "assert 'numpy' not in sys.modules\n"
               "from dptext import *\n"
               "print(sorted(n for n in dptext.__all__ if getattr(dptext, n, None) is None), "
               "callable(dptext.mechanism), EmbeddingSpace.__name__, "
               "'sanitize' in dir(dptext))")
    assert out == "[] True EmbeddingSpace True"


def test_sanitize_stays_the_function_after_its_module_is_imported():
    import dptext

    out = _run("import dptext, dptext.sanitize\n"
               "from dptext.sanitize import sanitize\n"
               "print(dptext.sanitize is sanitize, callable(dptext.sanitize))")
    assert out == "True True"
    assert callable(dptext.sanitize)


def test_cli_constants_agree_with_the_corpus_engine():
    from dptext.cli import sanitize as cli_sanitize
    from dptext.corpus.records import MAX_RECORD_BYTES
    from dptext.corpus.sources import FORMATS

    assert cli_sanitize.FORMATS == FORMATS
    assert cli_sanitize.MAX_RECORD_BYTES == MAX_RECORD_BYTES
