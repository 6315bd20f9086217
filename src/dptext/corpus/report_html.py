"""The release report a reviewer reads (issue 45): ``OUTPUT.report.html`` beside a release.

Built from what the job already wrote - its report file (``OUTPUT.report.json``), its rejects
file and its output - never from the input: the examples are released records (surrogates and
the text released verbatim anyway), never an original; the privacy units are counted, never
named. Every value is HTML-escaped (a record may hold ``<script>``). Sections: what was
replaced per category with counts, a few released examples, what was withheld and why, the
leak check's result, each column's fate, the guarantee and its limits in plain words, and the
ledger's charges per person.
"""

from __future__ import annotations

import html
import json
from pathlib import Path

_CSS = """body{font:15px/1.45 system-ui,sans-serif;max-width:60rem;margin:2rem auto;padding:0 1rem;
color:#1d2530}h1{font-size:1.5rem}h2{font-size:1.15rem;margin-top:1.6rem;border-bottom:1px solid
#d6dce3}table{border-collapse:collapse;width:100%}td,th{border:1px solid #d6dce3;padding:.3rem
.5rem;text-align:left;vertical-align:top}th{background:#f1f4f7}.ok{color:#176b2c}.bad{color:#a1231b}
pre{white-space:pre-wrap;background:#f6f8fa;padding:.6rem;border-radius:4px}.note{color:#555}"""
_PLAIN = {
    "placeholder": "replaced by a label such as [DATE]; nothing of the value is kept",
    "name surrogate": "replaced by a made-up name of the same shape",
    "word surrogate": "replaced by a made-up place or organisation of the same kind",
    "surrogate": "replaced by a made-up value of the same type",
    "realistic surrogate": "replaced by a realistic made-up value of the same shape",
}


def _e(value) -> str:
    return html.escape(str(value), quote=True)


def _table(head: list[str], rows: list[list]) -> str:
    out = ["<table><tr>" + "".join(f"<th>{_e(h)}</th>" for h in head) + "</tr>"]
    out += ["<tr>" + "".join(f"<td>{_e(c)}</td>" for c in row) + "</tr>" for row in rows]
    return "".join(out) + "</table>"


def _examples(output: Path | None, fields: list[str], n: int) -> list[str]:
    if output is None or not output.is_file():
        return []
    out = []
    try:
        with open(output, encoding="utf-8") as f:
            if output.suffix == ".csv":
                import csv

                rows = csv.DictReader(f)
                for row in rows:
                    out.append(" | ".join(str(row.get(k, "")) for k in fields if k in row))
                    if len(out) >= n:
                        break
            else:
                for line in f:
                    if line.strip():
                        rec = json.loads(line)
                        out.append(" | ".join(str(rec.get(k, "")) for k in fields)
                                   if isinstance(rec, dict) else str(rec))
                    if len(out) >= n:
                        break
    except (OSError, ValueError):
        return []
    return [e[:400] + ("..." if len(e) > 400 else "") for e in out]


def render(summary: dict, *, rejects: list[dict] = (), examples: list[str] = (),
           leak_check: dict | None = None, title: str = "Release report") -> str:
    """The report as one HTML page (module docstring)."""
    s = summary or {}
    parts = [f"<!doctype html><html lang=en><meta charset=utf-8><title>{_e(title)}</title>"
             f"<style>{_CSS}</style><h1>{_e(title)}</h1>"]
    released, total = s.get("records", 0), s.get("records_in", s.get("records", 0))
    parts.append(f"<p>{_e(released)} of {_e(total)} records released by "
                 f"<b>{_e(s.get('mechanism', '?'))}</b>"
                 + (f", detector {_e(s['detector'])}" if s.get("detector") else "") + ".</p>")
    spans = s.get("spans_by_type") or {}
    if spans:
        parts.append("<h2>What was replaced</h2>")
        parts.append(_table(["category", "mentions", "draws", "reused", "how"], [
            [cat, row.get("spans", 0), row.get("draws", 0), row.get("reused", 0),
             row.get("treatment", "")] for cat, row in sorted(spans.items())]))
        reasons = s.get("privatized_by_reason") or {}
        if reasons:
            parts.append("<p>" + "; ".join(
                f"{_e(n)} tokens {_e(_PLAIN.get(r, r))}" for r, n in sorted(reasons.items()))
                + ".</p>")
    residual = s.get("residual") or {}
    if residual:
        parts.append(f"<p>Residual net ({_e(residual.get('policy'))}): "
                     f"{_e(residual.get('tokens', 0))} tokens outside every detected span that "
                     "are not ordinary words.</p>")
    if examples:
        parts.append("<h2>Examples from the release</h2><p class=note>Released records as "
                     "published (surrogates in place; never an original value).</p>")
        parts += [f"<pre>{_e(x)}</pre>" for x in examples]
    parts.append("<h2>Withheld records</h2>")
    if rejects:
        parts.append(_table(["record", "why"], [
            [r.get("record", "?"), r.get("reason") or r.get("error") or r.get("why", "")]
            for r in rejects[:200]]))
        if len(rejects) > 200:
            parts.append(f"<p>... and {len(rejects) - 200} more (the rejects file).</p>")
    else:
        parts.append("<p class=ok>None: every record was released.</p>")
    parts.append("<h2>Leak check</h2>")
    if leak_check and leak_check.get("before_release"):
        n = sum("surviving identifier" in str(r.get("reason", "")) for r in rejects)
        parts.append(f"<p class=ok>Ran on every record before release (--check): {n} "
                     "records in which an identifier survived were withheld (above); every "
                     "released record passed it.</p>")
    elif leak_check and leak_check.get("ran"):
        leaks = leak_check.get("leaks", 0)
        cls = "ok" if not leaks else "bad"
        by = ", ".join(f"{k} {v}" for k, v in (leak_check.get("by_category") or {}).items())
        parts.append(f"<p class={cls}>{_e(leaks)} identifiers found again in "
                     f"{_e(leak_check.get('compared', 0))} released records"
                     + (f" ({_e(by)})" if by else "") + ".</p>")
    elif any("surviving identifier" in str(r.get("reason", "")) for r in rejects):
        parts.append("<p>The leak check ran on every record (--check): the records above "
                     "whose reason is a surviving identifier were withheld.</p>")
    else:
        parts.append("<p class=note>Not run on this release (use --check, or "
                     "<code>dptext check</code> on the two files).</p>")
    cols = s.get("columns") or {}
    if cols:
        parts.append("<h2>Columns</h2>")
        fate = {"privatized": "de-identified", "released_verbatim_not_protected":
                "released verbatim, NOT protected", "hashed": "replaced by keyed pseudonyms",
                "dropped": "dropped"}
        parts.append(_table(["column", "fate"], [
            [c, what] for k, what in fate.items() for c in cols.get(k) or []]))
    parts.append("<h2>The guarantee and its limits</h2>")
    parts.append("<p>Every detected identifier was replaced whole; the text around it is "
                 "released as written. What the detectors missed is released verbatim - the "
                 "leak check and the gold figures (docs/deid.md) say how often that happens. "
                 "Surrogates are drawn independently of the real values: a surrogate says "
                 "nothing about the value it replaces beyond its kind and shape, but the same "
                 "person's repeated mentions share one surrogate, so a reader can link them."
                 "</p>")
    if s.get("document_guarantee"):
        parts.append(f"<p class=note>{_e(s['document_guarantee'])}</p>")
    units = s.get("units") or {}
    parts.append("<h2>Ledger charges</h2>")
    if isinstance(units, dict) and units.get("units"):
        worst = units.get("worst_unit") or {}
        parts.append(_table(["persons", "records", "worst epsilon", "median", "p95"], [[
            units.get("units"), units.get("records", ""), worst.get("epsilon", ""),
            units.get("epsilon_median", ""), units.get("epsilon_p95", "")]]))
        parts.append(f"<p class=note>{_e(units.get('composition', ''))}; unit field "
                     f"{_e(units.get('unit_field', ''))} (the persons are counted here, never "
                     "named).</p>")
    else:
        parts.append(f"<p>Largest single record: {_e(s.get('max_record_epsilon', 0))}-DP; "
                     "each record counts as one person.</p>")
    return "".join(parts) + "</html>\n"


def write_report_html(report_json: Path, html_path: Path, *, output: Path | None = None,
                      rejects: Path | None = None, fields: list[str] = (),
                      leak_check: dict | None = None, examples: int = 3) -> Path:
    """Read a finished job's report (and rejects, and a few released records) and write the
    HTML report atomically beside them."""
    from dptext.io import atomic_write

    summary = json.loads(Path(report_json).read_text(encoding="utf-8"))
    rows = []
    if rejects is not None and Path(rejects).is_file():
        for line in Path(rejects).read_text(encoding="utf-8").splitlines():
            if line.strip():
                try:
                    rec = json.loads(line)
                except ValueError:
                    continue
                rows.append({k: rec.get(k) for k in ("record", "line", "reason", "error")
                             if k in rec})
    page = render(summary, rejects=rows, leak_check=leak_check,
                  examples=_examples(output, list(fields) or list(
                      (summary.get("columns") or {}).get("privatized") or ["text"]), examples))
    with atomic_write(html_path, "w", durable=True, encoding="utf-8") as f:
        f.write(page)
    return Path(html_path)
