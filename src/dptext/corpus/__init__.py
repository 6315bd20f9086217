"""The corpus engine: sanitize files of any size, resumably, on one or many processes or Ray.

    >>> from dptext.corpus import CorpusJob, run
    >>> result = run(CorpusJob(mechanism, "notes.jsonl", "out.jsonl", fields=["note", "title"]))

See :mod:`dptext.corpus.driver` and docs/scale.md.
"""

from dptext.corpus.driver import prepare, run
from dptext.corpus.job import CorpusJob, JobResult, ResumableError
from dptext.corpus.records import MAX_RECORD_BYTES
from dptext.corpus.sources import FORMATS

__all__ = ["FORMATS", "MAX_RECORD_BYTES", "CorpusJob", "JobResult", "ResumableError", "prepare",
           "run"]
