"""``dptext serve`` and ``dptext keys``: the privatization service (``dptext.service``)."""

from dptext.service.commands import add_commands as register

__all__ = ["register"]
