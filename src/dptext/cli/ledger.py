"""``dptext ledger ...``: the persistent per-person budget ledger (``dptext.ledger``)."""

from dptext.ledger.commands import add_commands as register

__all__ = ["register"]
