"""The one exception type users see: a clear, one-line message naming the problem."""

from __future__ import annotations

import re
from collections.abc import Callable

_PARAM = re.compile(r"`([a-z][a-z0-9_]*)`")


class DPTextError(ValueError):
    """Invalid input or configuration.

    The CLI prints ``str(err)`` on one line and exits non-zero.
    """

    def spelled(self, spell: Callable[[str], str]) -> str:
        """The message with each parameter it names spelled by ``spell`` (the command line's
        ``--flag``); a message that names none is itself."""
        return str(self)


class ParameterError(DPTextError):
    """An error about the parameters of the library (``CorpusJob``, ``sanitize``, ...): the
    message names each as `` `name` ``; ``str()`` writes it as the Python keyword
    (``name=``) and :meth:`spelled` as the caller's own option (the command line maps it to
    its flag), so an engine error never names a command-line flag to a Python caller."""

    def __init__(self, message: str) -> None:
        self.template = message
        super().__init__(self.spelled(lambda name: f"{name}="))

    def spelled(self, spell: Callable[[str], str]) -> str:
        return _PARAM.sub(lambda m: spell(m.group(1)), self.template)
