"""The results store of a grid: one JSON line per finished cell, appended and fsynced.

A cell is written only when it is complete, so an interrupted run loses at most the cell in
progress; a torn last line (killed mid-write) is cut off when the store is opened. Rerunning
skips every cell already in the store: no cell is computed or written twice.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from dptext.errors import DPTextError
from dptext.io import atomic_write


class CellStore:
    def __init__(self, path: str | os.PathLike) -> None:
        self.path = Path(path)
        self.cells: dict[str, dict[str, Any]] = {}
        if self.path.is_file():
            self._load()

    def _load(self) -> None:
        raw = self.path.read_bytes()
        complete = raw[: raw.rfind(b"\n") + 1]
        if len(complete) != len(raw):  # torn last line: keep the complete ones
            with atomic_write(self.path, "wb") as f:
                f.write(complete)
        for number, line in enumerate(complete.decode("utf-8").splitlines(), start=1):
            if not line.strip():
                continue
            try:
                cell = json.loads(line)
            except (json.JSONDecodeError, RecursionError):
                raise DPTextError(f"{self.path}: line {number} is not a finished cell") from None
            if not isinstance(cell, dict) or not isinstance(cell.get("key"), str):
                raise DPTextError(f"{self.path}: line {number} is not a finished cell (a JSON "
                                  "object with a string \"key\" expected)")
            self.cells[cell["key"]] = cell

    def __contains__(self, key: str) -> bool:
        return key in self.cells

    def add(self, cell: dict[str, Any]) -> None:
        if cell["key"] in self.cells:
            raise DPTextError(f"cell {cell['key']} is already in {self.path}")
        line = json.dumps(cell, sort_keys=True, allow_nan=True) + "\n"
        with open(self.path, "a", encoding="utf-8") as f:
            f.write(line)
            f.flush()
            os.fsync(f.fileno())
        self.cells[cell["key"]] = cell
