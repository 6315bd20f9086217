"""``dptext audit`` and ``dptext audit-training``: the statistical auditor (``dptext.audit``)."""

from dptext.audit.commands import add_commands as register

__all__ = ["register"]
