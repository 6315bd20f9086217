"""Loading a model without transformers' progress bars (a module of its own: the loader and
the MLM-head builder both use it, and each imports the other's names otherwise)."""

from __future__ import annotations

from contextlib import contextmanager


@contextmanager
def quiet_loading():
    """Without transformers' per-tensor "Loading weights" bars (restored afterwards)."""
    from transformers.utils import logging

    enabled = logging.is_progress_bar_enabled()
    logging.disable_progress_bar()
    try:
        yield
    finally:
        if enabled:
            logging.enable_progress_bar()
