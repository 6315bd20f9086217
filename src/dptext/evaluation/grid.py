"""The evaluation grid: run every (mechanism, epsilon) x metric cell, resumably, and report.

Cells run in a fixed order (:mod:`dptext.evaluation.cells`), share a
:class:`~dptext.evaluation.context.GridContext`, are computed by the registered metric runners
(:mod:`dptext.evaluation.metrics`) and stored in ``cells.jsonl``; the outputs are written by
:mod:`dptext.evaluation.results`. The two baselines (``noiseless``, ``random``;
:mod:`dptext.evaluation.baselines`) run once each, without epsilon.

Outputs in ``out``: ``cells.jsonl`` (the store), ``config.json``, ``results.json``,
``results.csv`` (long format: one row per cell and value), the PNG plots and ``report.md``.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from dataclasses import asdict
from pathlib import Path
from typing import Any

from dptext.embeddings import EmbeddingSpace
from dptext.errors import DPTextError
from dptext.evaluation import ENCODERS
from dptext.evaluation import metrics as _metrics  # noqa: F401  (registers the runners)
from dptext.evaluation.cells import Cell, GridConfig, cells_of
from dptext.evaluation.context import GridContext
from dptext.evaluation.encoders import CachedEncoder
from dptext.evaluation.metrics import run_cell
from dptext.evaluation.results import flat_rows, write_results
from dptext.evaluation.store import CellStore
from dptext.io import atomic_write

__all__ = ["Cell", "GridConfig", "GridContext", "cells_of", "flat_rows", "run_cell", "run_grid"]


def _settings_check(out: Path, config: GridConfig) -> None:
    path = out / "config.json"
    settings = config.result_settings()
    if path.is_file():
        previous = json.loads(path.read_text(encoding="utf-8"))
        old = previous.get("result_settings")
        if old is not None:  # a setting added after the directory was made: its default then
            defaults = json.loads(json.dumps(GridConfig(["-"], {"-": [1.0]}).result_settings()))
            old = {**{k: v for k, v in defaults.items() if k not in old}, **old}
        new = json.loads(json.dumps(settings))
        changed = sorted(k for k in new if old is None or old.get(k) != new[k])
        if changed:
            raise DPTextError(
                f"{out} holds results of a grid with other settings ({', '.join(changed)}); "
                "use another --out directory"
            )
    with atomic_write(path, encoding="utf-8") as f:
        json.dump({"config": asdict(config), "result_settings": settings}, f, indent=2)


def run_grid(config: GridConfig, out: str | Path, *, space: EmbeddingSpace | None = None,
             encoder: CachedEncoder | None = None, progress: bool = True,
             on_cell: Callable[[dict[str, Any]], None] | None = None,
             workers: int = 1) -> list[dict[str, Any]]:
    """Run every cell not yet in ``out/cells.jsonl``, then write results, plots and report
    (of every cell in the store, this grid's first); returns those records.

    ``workers`` > 1 runs the cells on that many processes (:mod:`dptext.evaluation.parallel`;
    one BLAS/torch thread each, the same values as a serial run); each builds its encoder
    from ``encoder.name`` (or ``config.encoder``), so ``encoder`` must be a packaged one.
    """
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    _settings_check(out, config)
    store = CellStore(out / "cells.jsonl")
    cells = cells_of(config)
    pending = [c for c in cells if c.key not in store]
    if workers < 1:
        raise DPTextError(f"workers must be >= 1, got {workers}")
    encoder_name = encoder.name if encoder is not None else config.encoder
    if workers > 1 and encoder is not None and encoder_name not in ENCODERS:
        raise DPTextError(f"encoder {encoder_name!r} cannot be rebuilt in worker processes; "
                          "use workers=1")
    bar = None
    if progress and pending:
        from tqdm import tqdm

        bar = tqdm(total=len(cells), initial=len(cells) - len(pending), desc="grid", unit="cell")

    def finished(record: dict[str, Any]) -> None:
        store.add(record)
        if on_cell is not None:
            on_cell(record)
        if bar is not None:
            bar.set_postfix_str(record["key"])
            bar.update(1)

    started = time.perf_counter()
    try:
        if workers > 1 and len(pending) > 1:
            from dptext.evaluation.parallel import run_parallel

            run_parallel(config, pending, workers=workers, space=space, encoder=encoder_name,
                         on_record=finished)
        else:
            ctx = GridContext(config, space, encoder)
            for cell in pending:
                finished(run_cell(ctx, cell))
    finally:
        if bar is not None:
            bar.close()
    # the report covers every cell in the store: earlier runs may have had other mechanisms
    ordered = [c.key for c in cells]
    ordered += [k for k in store.cells if k not in set(ordered)]
    records = [store.cells[k] for k in ordered]
    write_results(out, records, config, run_seconds=time.perf_counter() - started)
    return records


