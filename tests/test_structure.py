"""The layout rules of docs/architecture.md that a test can check."""

from __future__ import annotations

import ast
import inspect
from pathlib import Path

import pytest

import dptext
from dptext.errors import DPTextError
from dptext.mechanisms.base import CAPABILITIES, Mechanism
from dptext.mechanisms.registry import parameters, register, registered, unregister
from dptext.mechanisms.word import PIPELINE_PARAMETERS, WordMechanism

SRC = Path(dptext.__file__).parent


def _imports(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    out = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module:
            out.add(node.module)
        elif isinstance(node, ast.Import):
            out.update(a.name for a in node.names)
    return out


def test_lm_does_not_import_mechanisms():
    for path in (SRC / "lm").glob("*.py"):
        bad = [m for m in _imports(path) if m.startswith("dptext.mechanisms")]
        assert not bad, f"{path.name} imports {bad}"


def test_nothing_outside_cli_imports_cli():
    for path in SRC.rglob("*.py"):
        if "cli" in path.relative_to(SRC).parts:
            continue
        bad = [m for m in _imports(path) if m == "dptext.cli" or m.startswith("dptext.cli.")]
        assert not bad, f"{path} imports {bad}"


def test_ground_floor_imports_nothing_above_it():
    for name in ("validation.py", "rng.py", "errors.py"):
        mods = [m for m in _imports(SRC / name) if m.startswith("dptext")]
        assert set(mods) <= {"dptext.errors"}, (name, mods)


def test_cli_registers_commands_explicitly():
    source = (SRC / "cli" / "__init__.py").read_text(encoding="utf-8")
    assert "import_module" not in source and "find_spec" not in source


def test_every_word_mechanism_parameter_is_declared_once():
    """A parameter either changes the fitted tables (part of the cache key) or is declared as
    not changing them: a new mechanism cannot forget one."""
    for name, cls in registered().items():
        if not issubclass(cls, WordMechanism):
            continue
        declared_tables = cls.table_parameters
        declared_runtime = cls.runtime_parameters | PIPELINE_PARAMETERS
        both = declared_tables & declared_runtime
        assert not both, (name, both)
        for p in parameters(cls):
            assert p in declared_tables or p in declared_runtime, (
                f"{name}: parameter {p!r} is in neither table_parameters nor runtime_parameters")


def test_capabilities_are_declared_and_backed_by_methods():
    for name, cls in registered().items():
        assert cls.capabilities <= CAPABILITIES, name
        for cap in cls.capabilities:
            method = getattr(cls, cap, None)
            assert callable(method), (name, cap)


def test_registry_refuses_a_duplicate_name():
    class Impostor(Mechanism):
        name = "custext"

    with pytest.raises(DPTextError, match="already registered"):
        register(Impostor)
    assert registered()["custext"] is not Impostor

    class Fresh(Mechanism):
        name = "test-fresh-name"

    try:
        register(Fresh)
        register(Fresh)  # the same class again is not a duplicate
        with pytest.raises(DPTextError, match="already registered"):
            register(type("Other", (Mechanism,), {"name": "test-fresh-name"}))
        replaced = register(type("Other", (Mechanism,), {"name": "test-fresh-name"}),
                            force=True)
        assert registered()["test-fresh-name"] is replaced
    finally:
        unregister("test-fresh-name")


def test_no_private_method_of_a_mechanism_is_called_from_other_packages():
    """evaluation/, robustness/ and the CLI use the public capabilities (sample_rows,
    fitted_space), not _sample or _fitted_space."""
    for sub in ("evaluation", "robustness", "cli"):
        for path in (SRC / sub).glob("*.py"):
            text = path.read_text(encoding="utf-8")
            for private in ("._sample(", "._fitted_space(", "._tables["):
                assert private not in text, f"{path.name} calls {private}"


def test_parameters_report_required_ones():
    sig = inspect.signature(registered()["custext"].__init__)
    assert "epsilon" in sig.parameters
    assert parameters(registered()["custext"])["k"] == 20


def test_every_metric_has_a_registered_runner():
    from dptext.evaluation import METRICS
    from dptext.evaluation.metrics import registered_metrics

    assert set(registered_metrics()) == set(METRICS)
