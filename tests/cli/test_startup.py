"""What every ``dptext`` command pays before it knows what it will do (issue 36, CLI start-up):
``import dptext`` and the command parser import neither numpy nor the corpus engine, and the
package's names are still there when asked for."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow  # outside the fast tier (docs/architecture.md, "Tests")

SRC = str(Path(__file__).resolve().parents[2] / "src")


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


# ---------------------------------------------- a cached `sanitize --text`: what it imports
# (the package dptext.targeted itself is a lazy door: the CLI reads its option table,
# dptext.targeted.options, at every parse; what must not load is the pipeline behind it)
HEAVY = ("torch", "transformers", "spacy", "pandas", "ray", "scipy", "pyarrow", "sklearn",
         "regex", "dptext.corpus", "dptext.detect", "dptext.targeted.build",
         "dptext.targeted.mechanism", "dptext.evaluation",
         "dptext.lm", "dptext.mechanisms.santext", "dptext.mechanisms.dpmlm",
         "dptext.mechanisms.dpprompt", "dptext.mechanisms.laplace",
         "dptext.mechanisms.truncated_gumbel", "dptext.cli.ledger", "dptext.cli.train",
         "dptext.cli.audit", "dptext.cli.info")

SANITIZE = """
import os, sys, dptext.cli
rc = dptext.cli.main(["sanitize", "--text", "hi", "--seed", "1"])
heavy = [m for m in {heavy!r} if m in sys.modules]
print(rc, heavy, "dptext.mechanisms.custext" in sys.modules, "numpy" in sys.modules,
      os.environ.get("OPENBLAS_THREAD_TIMEOUT"), file=sys.stderr)
"""


def test_a_cached_sanitize_text_imports_none_of_the_heavy_modules(tmp_path):
    """``dptext sanitize --text hi`` with the default space and the CusText tables cached (a
    small space stands in for the default one at its cache path): custext and numpy, and not
    torch, transformers, spaCy, pandas, Ray, scipy, the regex module (an ASCII text), the corpus
    engine, the other mechanisms or the other commands' modules."""
    import importlib.util

    # tests/conftest.py by its path: another folder's conftest may hold the name "conftest"
    spec = importlib.util.spec_from_file_location(
        "_tests_root_conftest", Path(__file__).resolve().parents[1] / "conftest.py")
    root_conftest = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(root_conftest)
    random_space = root_conftest.random_space

    from dptext import cache
    from dptext.resources import default_space_path

    words = ["hi", "hello", "hey", "greetings"] + [f"w{i}" for i in range(60)]
    space = random_space(words, seed=3, dim=8, name="minilm-50k", float32=True, geometry=16)
    env = {"PYTHONPATH": SRC, "PATH": "/usr/bin:/bin", "DPTEXT_CACHE": str(tmp_path)}
    path = default_space_path().relative_to(cache.cache_dir())
    space.save(tmp_path / path)
    cache.record_digest(tmp_path / path)
    code = SANITIZE.format(heavy=HEAVY)
    runs = [subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                           env=env, check=True) for _ in range(2)]  # the first fits the tables
    assert runs[1].stdout == runs[0].stdout and runs[1].stdout.strip().lower() in space.index
    assert runs[1].stderr.splitlines()[-1] == "0 [] True True 24", runs[1].stderr


def test_a_blas_thread_timeout_of_the_environment_is_kept():
    code = ("import os, dptext.cli\n"
            "try:\n    dptext.cli.main(['--version'])\nexcept SystemExit:\n    pass\n"
            "print(os.environ.get('OPENBLAS_THREAD_TIMEOUT'))")
    env = {"PYTHONPATH": SRC, "PATH": "/usr/bin:/bin", "OPENBLAS_THREAD_TIMEOUT": "12"}
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          env=env, check=True)
    assert done.stdout.splitlines()[-1] == "12"


# ---------------------------------------------- only the chosen command's parser is built
def _subparsers(p):
    import argparse

    return next(a for a in p._actions if isinstance(a, argparse._SubParsersAction))


def test_the_command_table_names_every_command_in_help_order():
    from dptext import cli

    full = _subparsers(cli.parser())
    assert list(full.choices) == list(cli.COMMANDS)
    for name, module in cli.COMMANDS.items():
        sub = _subparsers(cli.parser([name, "--help"]))
        assert list(sub.choices) == [n for n, m in cli.COMMANDS.items() if m == module], name
        # the chosen command's parser is the one the whole parser builds
        assert sub.choices[name].format_help() == full.choices[name].format_help(), name
        assert sub.choices[name].prog == full.choices[name].prog == f"dptext {name}"


def test_the_parser_of_one_command_imports_only_its_module():
    out = _run("import sys, dptext.cli; dptext.cli.parser(['sanitize', '--text', 'hi']); "
               "print(sorted(m for m in sys.modules if m.startswith('dptext.cli.')))")
    assert out == "['dptext.cli.common', 'dptext.cli.sanitize']"


def test_an_unknown_command_still_lists_every_command():
    env = {"PYTHONPATH": SRC, "PATH": "/usr/bin:/bin"}
    done = subprocess.run([sys.executable, "-m", "dptext.cli", "sanitise", "--text", "hi"],
                          capture_output=True, text=True, env=env)
    assert done.returncode == 2
    assert "invalid choice: 'sanitise' (choose from 'sanitize', 'demo'," in done.stderr
    assert "'keys', 'check')" in done.stderr


# ---------------------------------------------- mechanisms: each module on first use
def test_the_builtin_table_names_every_builtin_mechanism_and_its_module():
    from dptext.mechanisms.registry import BUILTIN, registered

    table = registered()
    assert set(BUILTIN) <= set(table)
    for name, cls in table.items():
        if cls.__module__.startswith("dptext.mechanisms."):
            assert cls.__module__ == f"dptext.mechanisms.{BUILTIN[name]}", name


def test_a_mechanism_imports_its_own_module_only():
    out = _run("import sys\n"
               "from dptext.mechanisms import mechanism, registered\n"
               "mods = lambda: sorted(m.split('.')[-1] for m in sys.modules\n"
               "                      if m.startswith('dptext.mechanisms.'))\n"
               "before = mods()\n"
               "mechanism('custext+', epsilon=1.0)\n"
               "after = mods()\n"
               "names = list(registered())\n"
               "print(before, after, names)")
    assert out == ("['base', 'registry'] ['base', 'custext', 'frequency', 'registry', 'tables', "
                   "'word'] ['custext', 'custext+', 'dpmlm', 'dpprompt', 'gumbel', 'laplace', "
                   "'santext', 'santext+']")


def test_a_builtin_name_is_taken_before_its_module_is_imported():
    """Registering a built-in name first imports the module that registers it: the name is
    refused (or replaced, with force=True) as when every built-in was imported at once."""
    out = _run("import sys\n"
               "from dptext.errors import DPTextError\n"
               "from dptext.mechanisms import Mechanism, register, registered\n"
               "class Impostor(Mechanism):\n    name = 'santext'\n"
               "try:\n    register(Impostor)\nexcept DPTextError as err:\n"
               "    refused = 'already registered' in str(err)\n"
               "class Mine(Mechanism):\n    name = 'gumbel'\n"
               "register(Mine, force=True)\n"
               "print(refused, registered()['santext'].__name__, registered()['gumbel'] is Mine)")
    assert out == "True SanText True"
