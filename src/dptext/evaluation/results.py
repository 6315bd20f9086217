"""The grid's outputs: ``results.json`` (strict JSON: a value that is not a finite number is
written as null), ``results.csv`` (long format), the plots and ``report.md``."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import numpy as np

from dptext.evaluation.cells import GridConfig
from dptext.io import atomic_write


def flat_rows(records: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Long format: one row per cell and scalar value."""
    rows = []
    for r in records:
        for name, value in r["values"].items():
            if isinstance(value, dict | list):
                continue
            rows.append({"mechanism": r["mechanism"], "epsilon": r["epsilon"],
                         "metric": r["metric"], "name": name, "value": value})
    return rows


def write_results(out: Path, records: list[dict[str, Any]], config: GridConfig, *,
                  run_seconds: float) -> None:
    import csv

    from dptext.evaluation.plots import write_plots
    from dptext.evaluation.report import write_report

    with atomic_write(out / "results.json", encoding="utf-8") as f:
        json.dump(strict_json(records), f, indent=1, allow_nan=False)
    with atomic_write(out / "results.csv", newline="", encoding="utf-8") as f:
        writer = csv.DictWriter(f, fieldnames=["mechanism", "epsilon", "metric", "name", "value"])
        writer.writeheader()
        writer.writerows(flat_rows(records))
    plots = write_plots(out, records)
    write_report(out, records, config, plots, run_seconds=run_seconds)


def strict_json(value: Any) -> Any:
    """``value`` with numpy scalars as Python numbers and NaN/infinity as ``None`` (JSON has
    neither; ``json.dump`` would write the non-standard ``NaN``)."""
    if isinstance(value, dict):
        return {k: strict_json(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [strict_json(v) for v in value]
    if isinstance(value, np.ndarray):
        return strict_json(value.tolist())
    if isinstance(value, np.generic):
        value = value.item()
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value
