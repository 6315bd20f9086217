"""Token windows centred on a word, so that a word far into a long text is still scored."""

from __future__ import annotations


def centred(n: int, start: int, end: int, budget: int) -> tuple[int, int]:
    """A window ``[lo, hi)`` of at most ``budget`` of ``n`` tokens, centred on ``[start, end)``.

    Unused room on one side goes to the other, so the window is as wide as the text allows.
    """
    if n <= budget:
        return 0, n
    middle = (start + end) // 2
    lo = max(0, min(middle - budget // 2, n - budget))
    return lo, lo + budget


def masked_window(ids: list[int], start: int, end: int, budget: int, mask_id: int) -> list[int]:
    """``ids`` with ``[start, end)`` replaced by one mask (``start == end``: inserted), cut to
    ``budget`` tokens around the mask. ``budget >= 1`` always fits the mask itself."""
    left, right = ids[:start], ids[end:]
    room = budget - 1
    keep_left = min(len(left), max(room - len(right), room // 2))
    keep_right = min(len(right), room - keep_left)
    return left[len(left) - keep_left:] + [mask_id] + right[:keep_right]
