"""The corpus tests' shared fixture (tests/support/corpus_jobs.py)."""

from corpus_jobs import mech  # noqa: F401
