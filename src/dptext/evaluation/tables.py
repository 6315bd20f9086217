"""Reading finished cells back as series and tables (shared by the plots and the report)."""

from __future__ import annotations

from typing import Any

BASELINE_STYLE = {"noiseless": "--", "random": ":"}


def ok(records: list[dict[str, Any]], metric: str) -> list[dict[str, Any]]:
    return [r for r in records if r["metric"] == metric and r["status"] == "ok"]


def series(records: list[dict[str, Any]], metric: str
           ) -> dict[str, list[tuple[float, dict[str, Any]]]]:
    """mechanism -> [(epsilon, values)] sorted by epsilon; baselines (no epsilon) left out."""
    out: dict[str, list[tuple[float, dict[str, Any]]]] = {}
    for r in ok(records, metric):
        if r["epsilon"] is not None:
            out.setdefault(r["mechanism"], []).append((r["epsilon"], r["values"]))
    return {m: sorted(v, key=lambda p: p[0]) for m, v in out.items()}


def value(records: list[dict[str, Any]], mechanism: str, epsilon: float | None, metric: str,
          name: str) -> Any:
    for r in ok(records, metric):
        if r["mechanism"] == mechanism and r["epsilon"] == epsilon:
            return r["values"].get(name)
    return None


def fmt(v: Any, digits: int = 3) -> str:
    if v is None:
        return "-"
    if isinstance(v, bool):
        return "yes" if v else "no"
    if isinstance(v, float):
        return f"{v:.{digits}g}" if abs(v) >= 1000 else f"{v:.{digits}f}"
    return str(v)


def markdown_table(header: list[str], rows: list[list[Any]]) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(fmt(c) for c in row) + " |" for row in rows]
    return "\n".join(lines)


def metric_table(records: list[dict[str, Any]], metric: str, names: list[str]) -> str:
    """Markdown table of ``names`` for every finished (mechanism, epsilon) cell of ``metric``."""
    rows = []
    first = {m: i for i, m in reversed(list(enumerate(r["mechanism"] for r in records)))}
    cells = sorted(ok(records, metric), key=lambda r: (first[r["mechanism"]],
                                                       -1.0 if r["epsilon"] is None
                                                       else r["epsilon"]))
    for r in cells:  # mechanisms in order of appearance, each by epsilon
        eps = "-" if r["epsilon"] is None else f"{r['epsilon']:g}"
        rows.append([r["mechanism"], eps, *[r["values"].get(n) for n in names]])
    return markdown_table(["mechanism", "epsilon", *names], rows)
