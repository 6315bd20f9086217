"""A dry run (``dptext sanitize ... --estimate``, ``POST /v1/estimate``): what a release would
cost, before anything is privatized, charged or written.

A record's cost is what the ledger would charge it - basic composition of its tokens' worst-case
epsilons - and it follows from the record's shape alone: the number of tokens the mechanism
would charge (``Mechanism.token_counts``: the space's vocabulary and the stopwords for a word
mechanism, no fitted table; the word slots for DP-MLM; the tokenizer for DP-Prompt) times the
per-token charge (``guarantee.worst_case_epsilon``; with ``document_epsilon`` the per-token
epsilon that record gets). The summary gives the per-record costs (min / median / p95 / max,
nearest rank), the per-person totals, and, against a per-person budget, how many records and
people would be withheld - the ledger's rule applied in input order: a record whose person's
total would pass the budget is withheld and not charged, and a later, cheaper one may still
fit. It also says what per-token epsilon a document budget would give (the one asked for, or
the median record cost as an example).

Entity mode (``--entities``; issue 45): a record's cost depends on what is detected in it, so
the dry run runs detection and the replacement itself on each record, keeps nothing of the
output, writes nothing and charges nothing: the cost is the record's report's (the draws it
makes: 0 for placeholders and surrogates drawn independently of the input, the mechanism's
for words it privatizes; with ``consistent="unit"`` a person's entity is charged once, at its
first record), and it counts the detected spans per category and the records that would be
withheld (the leak check, a language the detectors do not read) with the reason.

With a ledger (``--ledger``, read only) each person starts from what the ledger says they may
still spend (:meth:`dptext.ledger.Ledger.remaining`), so today's spend is counted. The summary
lists every record's cost (``per_record``) and every person's total (``per_person``) in input
order, as ``--estimate`` promises; the lines on stderr give their quantiles.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence

from dptext.accounting.composition import per_token_epsilon
from dptext.accounting.units import RECORD_IS_UNIT, nearest_rank
from dptext.errors import DPTextError
from dptext.mechanisms.base import Mechanism


def _quantiles(values: list[float]) -> dict:
    v = sorted(values)
    return {"min": v[0] if v else 0.0, "median": nearest_rank(v, 0.5),
            "p95": nearest_rank(v, 0.95), "max": v[-1] if v else 0.0}


class CostEstimate:
    """Accumulates the records of a dry run (``add``) and summarizes them (``summary``).

    ``budget``: the per-person epsilon to check withholding against (None: not checked);
    ``remaining``: a callable unit -> the epsilon that unit may still spend (the service asks
    its ledger; it overrides ``budget`` for the units it answers for, None meaning no budget).
    """

    def __init__(self, m: Mechanism, *, budget: float | None = None,
                 unit_field: str | None = None, remaining=None) -> None:
        self.m, self.budget, self.unit_field, self._remaining = m, budget, unit_field, remaining
        self.document_epsilon = getattr(m, "document_epsilon", None)
        self.costs: list[float] = []
        self.tokens: list[int] = []
        self.derived: list[float] = []  # per-token epsilons of a document budget
        self.units: dict[str, list] = {}  # unit -> [charged, records, withheld, left]
        self.rejected: list[str] = []
        self.withheld = 0
        self._records = 0
        self.per_record: list[dict] = []
        self.entities = _is_entity(m)
        self.categories: dict[str, int] = {}
        self.withheld_by_mechanism: dict[str, int] = {}  # reason -> records
        self.rng = None
        if self.entities:
            import numpy as np

            self.rng = np.random.default_rng()
        if self.document_epsilon is None and not self.entities:
            self._charge = m.guarantee.worst_case_epsilon
            if not math.isfinite(self._charge):
                raise DPTextError(f"{m.name}: the per-token guarantee has no finite worst case; "
                                  "there is no cost to estimate")

    def _record_costs(self, texts: Sequence[str]) -> tuple[list[int], list[float], list]:
        """Per text: tokens, cost, derived per-token epsilon (None without a document
        budget); DPTextError for a text the mechanism refuses."""
        if self.entities:
            return self._entity_costs(texts)
        counts = self.m.token_counts(texts)
        if self.document_epsilon is None:
            return counts, [n * self._charge for n in counts], [None] * len(counts)
        eps = self.m.epsilons(texts)
        unit_cost = self.m.cost_per_epsilon()
        return counts, [n * e * unit_cost for n, e in zip(counts, eps, strict=True)], eps

    def _entity_costs(self, texts: Sequence[str], units=None) -> tuple[list, list, list]:
        """Entity mode: detection and replacement run, the output dropped (module docstring);
        a record the mechanism withholds costs 0 and is counted with its reason."""
        results = self.m.privatize_batch(list(texts), rng=self.rng, units=units)
        counts, costs = [], []
        for r in results:
            rep = r.report
            reason = getattr(rep, "withheld", None)
            if reason is not None:
                key = reason.split(":")[0]
                self.withheld_by_mechanism[key] = self.withheld_by_mechanism.get(key, 0) + 1
                self._pending_withheld.append(reason)
                counts.append(0)
                costs.append(0.0)
                continue
            self._pending_withheld.append(None)
            for cat, row in (getattr(rep, "spans", None) or {}).items():
                self.categories[cat] = self.categories.get(cat, 0) + row.get("spans", 0)
            counts.append(sum(row.get("tokens", 0) for row in
                              (getattr(rep, "spans", None) or {}).values()))
            costs.append(float(rep.epsilon))
        return counts, costs, [None] * len(counts)

    def add(self, fields: Sequence[Sequence[str]], units: Sequence[str | None],
            where: Sequence[str] | None = None) -> None:
        """One batch: ``fields[f][i]`` is field f of record i; ``units[i]`` its person (None:
        the record is its own person); ``where[i]`` names it in a refusal."""
        n = len(units)
        where = list(where) if where is not None else [f"record {self._records + i + 1}"
                                                         for i in range(n)]
        per_record = [[0, 0.0, []] for _ in range(n)]
        refused: dict[int, str] = {}
        mech_withheld: dict[int, str] = {}
        for column in fields:
            self._pending_withheld: list = []
            try:
                if self.entities:  # a person's entities drawn (and charged) once
                    parts = [self._entity_costs(column, [
                        u if u is not None else f"#record {self._records + i}"
                        for i, u in enumerate(units)])]
                else:
                    parts = [self._record_costs(column)]
                index = [list(range(n))]
                for i, why in enumerate(self._pending_withheld):
                    if why is not None:
                        mech_withheld.setdefault(i, why)
            except DPTextError:  # one by one, so the refused record is named
                parts, index = [], []
                for i in range(n):
                    try:
                        parts.append(self._record_costs([column[i]]))
                        index.append([i])
                    except DPTextError as err:
                        refused[i] = str(err)
            for (counts, costs, eps), idx in zip(parts, index, strict=True):
                for i, c, cost, e in zip(idx, counts, costs, eps, strict=True):
                    per_record[i][0] += c
                    per_record[i][1] += cost
                    if e is not None and c:
                        per_record[i][2].append(e)
        for i, (tokens, cost, eps) in enumerate(per_record):
            self._records += 1
            if i in refused:
                self.rejected.append(f"{where[i]}: {refused[i]}")
                self.per_record.append({"record": where[i], "refused": refused[i]})
                continue
            if i in mech_withheld:  # the mechanism would withhold it: nothing charged
                self.withheld += 1
                self.per_record.append({"record": where[i], "unit": units[i], "epsilon": 0.0,
                                        "withheld": mech_withheld[i]})
                continue
            self.costs.append(cost)
            self.tokens.append(tokens)
            self.derived.extend(eps)
            unit = units[i] if units[i] is not None else f"record {self._records}"
            u = self.units.get(unit)
            if u is None:
                left = self.budget
                if self._remaining is not None and units[i] is not None:
                    left = self._remaining(units[i])
                u = self.units[unit] = [0.0, 0, 0, left]
            u[1] += 1
            if u[3] is not None and u[0] + cost > u[3] * (1 + 1e-12):
                u[2] += 1
                self.withheld += 1
                self.per_record.append({"record": where[i], "unit": units[i], "epsilon": cost,
                                        "withheld": "over the person's budget"})
            else:
                u[0] += cost
                self.per_record.append({"record": where[i], "unit": units[i], "epsilon": cost,
                                        "tokens": tokens})

    def refuse(self, reason: str) -> None:
        """A record that cannot be read or has no person: counted and named, not costed."""
        self._records += 1
        self.rejected.append(reason)

    def add_texts(self, texts: Iterable[str], units: Sequence[str | None] | None = None
                  ) -> None:
        texts = list(texts)
        self.add([texts], list(units) if units is not None else [None] * len(texts))

    def summary(self) -> dict:
        totals = [u[0] for u in self.units.values()]
        out = {
            "mechanism": self.m.name,
            "records": self._records,
            "records_refused": len(self.rejected),
            "refused": self.rejected[:10],
            "tokens_charged": _quantiles([float(t) for t in self.tokens]),
            "record_epsilon": _quantiles(self.costs),
            "record_epsilon_total": math.fsum(self.costs),
            "composition": "basic (what the ledger charges): the sum of each token's worst-case "
                           "epsilon",
            "unit_field": self.unit_field,
            "units": len(self.units),
            "unit_epsilon": _quantiles(totals),
            "unit_note": (RECORD_IS_UNIT if self.unit_field is None else
                          f"the person named by {self.unit_field!r}; totals are what would be "
                          "charged (withheld records excluded)"),
            "budget": self.budget,
            "records_withheld": self.withheld,
            "units_with_withheld_records": sum(1 for u in self.units.values() if u[2]),
            "units_fully_withheld": sum(1 for u in self.units.values() if u[2] == u[1]),
            "charged": False,
            "written": False,
            "per_record": self.per_record,
            "per_person": [{"unit": unit, "epsilon": u[0], "records": u[1], "withheld": u[2],
                            "budget_left_before": u[3]} for unit, u in self.units.items()],
        }
        if self.entities:
            out["entities"] = True
            out["spans_by_category"] = dict(sorted(self.categories.items()))
            out["withheld_by_mechanism"] = dict(sorted(self.withheld_by_mechanism.items()))
        if self.document_epsilon is not None:
            out["document_epsilon"] = self.document_epsilon
            out["per_token_epsilon"] = _quantiles(self.derived) if self.derived else None
        elif self.costs and self.tokens and max(self.tokens) > 0 and not self.entities:
            # what a document budget equal to the median record cost would give
            e = out["record_epsilon"]["median"] or out["record_epsilon"]["max"]
            cost = self._charge / self.m.guarantee.epsilon if self.m.guarantee.epsilon else 1.0
            derived = [per_token_epsilon(e, n, cost_per_epsilon=cost)
                       for n in self.tokens if n]
            out["document_epsilon_example"] = {"document_epsilon": e,
                                               "per_token_epsilon": _quantiles(derived)}
        return out


def describe(summary: dict) -> list[str]:
    """The summary in a few lines for a person (the CLI prints them on stderr)."""
    r, u = summary["record_epsilon"], summary["unit_epsilon"]
    lines = [f"estimate ({summary['mechanism']}): {summary['records']} records, nothing "
             "privatized, charged or written",
             f"  per record   epsilon min {r['min']:.4g}, median {r['median']:.4g}, "
             f"p95 {r['p95']:.4g}, max {r['max']:.4g} (basic composition, as the ledger "
             "charges)",
             f"  per person   {summary['units']} "
             + (f"(--user-field {summary['unit_field']})" if summary["unit_field"]
                else "(each record is its own person)")
             + f": total min {u['min']:.4g}, median {u['median']:.4g}, p95 {u['p95']:.4g}, "
               f"max {u['max']:.4g}"]
    if summary["budget"] is not None:
        lines.append(f"  budget {summary['budget']:g}  would withhold {summary['records_withheld']}"
                     f" records; {summary['units_with_withheld_records']} people lose at least "
                     f"one record, {summary['units_fully_withheld']} lose all of theirs")
    if summary.get("per_token_epsilon"):
        p = summary["per_token_epsilon"]
        lines.append(f"  document epsilon {summary['document_epsilon']:g}: per-token epsilon "
                     f"min {p['min']:.4g}, median {p['median']:.4g}, max {p['max']:.4g}")
    elif summary.get("document_epsilon_example"):
        ex = summary["document_epsilon_example"]
        p = ex["per_token_epsilon"]
        lines.append(f"  --document-epsilon {ex['document_epsilon']:.4g} (the median record "
                     f"cost) would give per-token epsilon min {p['min']:.4g}, median "
                     f"{p['median']:.4g}, max {p['max']:.4g}")
    if summary.get("entities"):
        cats = ", ".join(f"{c} {n}" for c, n in summary["spans_by_category"].items())
        lines.append(f"  detected     {cats or 'nothing'}")
        why = summary["withheld_by_mechanism"]
        lines.append("  withheld     " + (", ".join(f"{n} ({r})" for r, n in why.items())
                                          if why else "none by the leak check or language"))
    if summary["records_refused"]:
        lines.append(f"  refused      {summary['records_refused']} records, e.g. "
                     f"{summary['refused'][0]}")
    return lines


def estimate_file(m: Mechanism, input_spec: str, *, fields: Sequence[str] = ("text",),
                  input_format: str | None = None, user_field: str | None = None,
                  budget: float | None = None, max_record_bytes: int | None = None,
                  batch_size: int = 512, remaining=None) -> dict:
    """The dry run over every record of ``input_spec`` (a file, directory, glob or ``-``);
    ``remaining``: unit -> epsilon left (a ledger's, read only)."""
    from dptext.corpus.records import MAX_RECORD_BYTES, RecordReader
    from dptext.corpus.sources import expand

    m.check_admissible()
    est = CostEstimate(m, budget=budget, unit_field=user_field, remaining=remaining)
    for source in expand(input_spec, input_format):
        reader = RecordReader(source, fields,
                              max_record_bytes=max_record_bytes or MAX_RECORD_BYTES)
        batch: list[tuple[list[str], str | None, str]] = []  # (texts, unit, where)
        for record in reader:
            where = f"{source.shown} line {record.line}"
            unit, error = None, record.error
            if error is None and user_field is not None:
                payload = record.payload
                if source.fmt == "csv":
                    payload = dict(zip(reader.header or [], payload, strict=False))
                value = payload.get(user_field) if isinstance(payload, dict) else None
                if isinstance(value, bool) or not isinstance(value, str | int) or value == "":
                    error = f"no privacy unit (--user-field {user_field!r})"
                else:
                    unit = str(value)
            if error is not None:
                est.refuse(f"{where}: {error}")
                continue
            batch.append((record.texts, unit, where))
            if len(batch) >= batch_size:
                _add_batch(est, batch, len(fields))
        _add_batch(est, batch, len(fields))
    return est.summary()


def _is_entity(m: Mechanism) -> bool:
    from dptext.targeted import TargetedMechanism

    return isinstance(m, TargetedMechanism)


def ledger_remaining(ledger, owner: str, dataset: str):
    """``unit -> epsilon left`` from a ledger, read only (None: no budget applies)."""
    return lambda unit: ledger.remaining(unit, owner=owner, dataset=dataset)


def _add_batch(est: CostEstimate, batch: list, n_fields: int) -> None:
    if batch:
        est.add([[texts[f] for texts, _, _ in batch] for f in range(n_fields)],
                [unit for _, unit, _ in batch], [where for _, _, where in batch])
        batch.clear()
