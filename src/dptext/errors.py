"""The one exception type users see: a clear, one-line message naming the problem."""


class DPTextError(ValueError):
    """Invalid input or configuration.

    The CLI prints ``str(err)`` on one line and exits non-zero.
    """
