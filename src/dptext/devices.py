"""``device="cpu" | "cuda" | "auto"``: where the torch/matrix work of a mechanism runs.

"auto" is the GPU when torch sees one, else the CPU; "cuda" without a GPU is an error at
construction (one line), not a failure in the middle of a run. Also how many CPU cores this
process may use (:func:`usable_cores`), for everything that sizes threads or processes.
"""

from __future__ import annotations

import os

from dptext.errors import DPTextError

DEVICES = ("cpu", "cuda", "auto")


def check_device(device: str) -> str:
    """``device`` if it is one of :data:`DEVICES` and usable here (DPTextError otherwise)."""
    if device not in DEVICES:
        raise DPTextError(f"device must be one of {', '.join(DEVICES)}, got {device!r}")
    if device == "cuda" and not cuda_available():
        raise DPTextError("device='cuda' but torch sees no CUDA GPU here; use 'cpu' or 'auto'")
    return device


def resolve_device(device: str) -> str:
    """"cpu" or "cuda": ``device`` with "auto" decided."""
    device = check_device(device)
    if device == "auto":
        return "cuda" if cuda_available() else "cpu"
    return device


def cuda_available() -> bool:
    import torch

    return bool(torch.cuda.is_available())


def usable_cores() -> int:
    """CPUs this process may run on (its affinity mask where the OS reports it), at least 1."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):  # not Linux
        return max(1, os.cpu_count() or 1)
