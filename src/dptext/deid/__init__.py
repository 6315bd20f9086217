"""De-identification checks and measurements (docs/deid.md): the leak check over a release
(:mod:`dptext.deid.check`), gold annotations and token scores (:mod:`dptext.deid.gold`), and a
generator of made-up clinical notes with their gold spans (:mod:`dptext.deid.notes`).

The de-identifying itself is entity-targeted sanitization with every safety on
(:func:`dptext.targeted.build_deid`)."""

from dptext.deid.check import CheckResult, check_records, pair_records, read_records
from dptext.deid.gold import GoldRecord, GoldSpan, Scores, read_gold, score

__all__ = ["CheckResult", "GoldRecord", "GoldSpan", "Scores", "check_records", "pair_records",
           "read_gold", "read_records", "score"]
