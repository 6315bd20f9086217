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


# The CPU features dptext's speed depends on, as /proc/cpuinfo names them. None changes a
# released word or distribution: each only decides which (certified or exact) path is fastest.
CPU_FEATURES = {
    "AVX2": ("avx2",),
    "AVX-512": ("avx512f",),
    "AVX-512 VNNI": ("avx512_vnni",),
    "AVX-VNNI": ("avx_vnni",),
    "AMX": ("amx_int8", "amx_tile"),
    "AVX-512 BF16": ("avx512_bf16",),
}
INT8_DOT_FEATURES = ("AVX-512 VNNI", "AVX-VNNI", "AMX")  # int8 dot products without saturation


def cpu_info(cpuinfo: str | None = None) -> tuple[str, set[str]]:
    """(model name, set of flags) of this CPU from ``/proc/cpuinfo`` (or the given text);
    ("unknown", set()) where it cannot be read (not Linux)."""
    if cpuinfo is None:
        try:
            with open("/proc/cpuinfo", encoding="utf-8", errors="replace") as f:
                cpuinfo = f.read()
        except OSError:
            return "unknown", set()
    model, flags = "unknown", set()
    for line in cpuinfo.splitlines():
        key, _, value = line.partition(":")
        key = key.strip()
        if key == "model name" and model == "unknown":
            model = value.strip() or "unknown"
        elif key == "flags" and not flags:
            flags = set(value.split())
    return model, flags


def cpu_features(cpuinfo: str | None = None) -> dict[str, bool]:
    """Each of :data:`CPU_FEATURES` -> whether this CPU has it."""
    _, flags = cpu_info(cpuinfo)
    return {name: any(f in flags for f in names) for name, names in CPU_FEATURES.items()}


def has_int8_dot(cpuinfo: str | None = None) -> bool:
    """Whether the CPU multiplies u8 x s8 without int16 saturation (VNNI or AMX)."""
    features = cpu_features(cpuinfo)
    return any(features[name] for name in INT8_DOT_FEATURES)
