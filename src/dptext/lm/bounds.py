"""Clip bounds [lo, hi] of the LM scores: the percentile rule, calibration files, lookup.

The guarantee holds for ANY bounds fixed before the private data is seen (the sensitivity of
the clipped score is hi - lo whatever they are); the bounds only move utility. They must never
be computed from the text being privatized: ``dptext calibrate`` measures them on PUBLIC text.

Rule (docs/lm_mechanisms.md): over the candidate scores at every scored slot of the public text,
``lo`` = the median of all candidate scores pooled, ``hi`` = the median over slots of the top
candidate score. Why: T = 2 (hi - lo) / epsilon, so every unit of range costs temperature.
Below the median lie tokens that are implausible anywhere; letting their differences count would
widen the range for nothing, so they share the floor. Above the typical top score only a few
very confident slots gain, and clipping them to hi still leaves the top candidate the most
likely one; a higher hi (e.g. the maximum, as a min/max rule gives) inflates T for every slot.
"""

from __future__ import annotations

import json
import re
from importlib.resources import files
from pathlib import Path

import numpy as np

from dptext.errors import DPTextError
from dptext.io import atomic_write

BOUNDS_FILE = "dptext_bounds.json"
RULE = "lo = median of all candidate scores; hi = median over slots of the top candidate score"


def percentile_rule(scores: np.ndarray) -> tuple[float, float]:
    """(lo, hi) from a (slots x candidates) score matrix measured on public text."""
    scores = np.asarray(scores, dtype=np.float64)
    if scores.ndim != 2 or scores.shape[0] < 1:
        raise DPTextError("calibration needs at least one scored word of public text")
    lo = float(np.median(scores))
    hi = float(np.median(scores.max(axis=1)))
    if not hi > lo:
        raise DPTextError(f"degenerate calibration: hi {hi:.4g} <= lo {lo:.4g}")
    return lo, hi


def bounds_path(model_dir: str | Path) -> Path:
    """Where calibrated bounds live beside a local model directory."""
    return Path(model_dir) / BOUNDS_FILE


def _cache_path(model: str) -> Path:
    from dptext.resources import cache_dir

    return cache_dir() / "bounds" / (re.sub(r"[^A-Za-z0-9._-]+", "_", model) + ".json")


def output_path(model: str, resolved: str) -> Path:
    """Beside the model if it is a local directory, else under the cache (a hub name)."""
    return bounds_path(resolved) if Path(resolved).is_dir() else _cache_path(model)


def write_bounds(path: Path, lo: float, hi: float, **meta) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    with atomic_write(path, encoding="utf-8") as f:
        json.dump({"lo": lo, "hi": hi, "rule": RULE, **meta}, f, indent=2)
        f.write("\n")
    return path


def shipped_bounds() -> dict[str, dict]:
    text = files("dptext").joinpath("data/lm_bounds.json").read_text(encoding="utf-8")
    return json.loads(text)


def find_bounds(model: str, resolved: str) -> tuple[float, float]:
    """Bounds for a model: calibrated beside it (or in the cache), else those shipped."""
    for path in (bounds_path(resolved), _cache_path(model)):
        if path.is_file():
            data = json.loads(path.read_text(encoding="utf-8"))
            return float(data["lo"]), float(data["hi"])
    shipped = shipped_bounds()
    if model in shipped:
        return float(shipped[model]["lo"]), float(shipped[model]["hi"])
    raise DPTextError(
        f"no clip bounds for model {model!r}: run `dptext calibrate --model {model} --text "
        "PUBLIC_FILE`, or pass clip_low and clip_high"
    )
