"""The persistent privacy budget ledger: what each privacy unit has spent, across every release.

    >>> from dptext.ledger import Ledger
    >>> ledger = Ledger("ledger.sqlite")            # or postgresql://..., or $DPTEXT_LEDGER
    >>> ledger.set_budget("clinic", "notes", epsilon=50)
    >>> rid = ledger.open_release(owner="clinic", dataset="notes", mechanism="custext",
    ...                           params={"epsilon": 2})
    >>> decisions = ledger.reserve(rid, [("note-1", "patient-7", report.privacy_events())])
    >>> # ... write the released records durably, then:
    >>> ledger.commit(rid, [d.charge_id for d in decisions if d.allowed])

See docs/ledger.md.
"""

from dptext.ledger.amounts import ANY
from dptext.ledger.core import Ledger, data_dir, default_ledger_url
from dptext.ledger.results import (
    Budget,
    Decision,
    ReleaseExists,
    Spent,
    UnitRow,
    VerifyResult,
)
from dptext.ledger.training import TrainingCharge, charge_training, training_preflight

__all__ = [
    "ANY",
    "Budget",
    "Decision",
    "Ledger",
    "ReleaseExists",
    "Spent",
    "TrainingCharge",
    "UnitRow",
    "VerifyResult",
    "charge_training",
    "training_preflight",
    "data_dir",
    "default_ledger_url",
]
