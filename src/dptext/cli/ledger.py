"""``dptext ledger init|budget|users|show|spent|pending|void|export|verify``: the ledger.

Every command takes ``--ledger URL`` (a path, ``sqlite:///PATH`` or ``postgresql://...``;
default ``$DPTEXT_LEDGER``, else ``<data dir>/ledger.sqlite``). Only ``init`` creates a ledger:
the others refuse a path where there is none, so a typo cannot start an empty ledger.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import math
import sys
from contextlib import nullcontext
from pathlib import Path

from dptext.cli.common import parse_as
from dptext.errors import DPTextError
from dptext.io import atomic_write


def _positive(text: str) -> float:
    x = parse_as(float, text, f"expected a number, got {text!r}")
    if not (math.isfinite(x) and x >= 0):
        raise argparse.ArgumentTypeError(f"expected a finite number >= 0, got {text!r}")
    return x


def _common(p: argparse.ArgumentParser) -> None:
    p.add_argument("--ledger", metavar="URL",
                   help="ledger file or postgresql:// URL (default: $DPTEXT_LEDGER, else the "
                        "dptext data directory)")
    p.add_argument("--timeout", type=float, default=10.0, metavar="S",
                   help="seconds to wait for another process's lock")


def _scope(p: argparse.ArgumentParser) -> None:
    p.add_argument("--owner", help="only releases by this owner")
    p.add_argument("--dataset", help="only releases of this dataset")


def _open(args, *, create: bool = False):
    from dptext.ledger.core import Ledger

    return Ledger(args.ledger, timeout=args.timeout, create=create,
                  delta=getattr(args, "delta", None) if create else None)


def _num(x: float | None) -> str:
    if x is None:
        return "-"
    return "inf" if math.isinf(x) else f"{x:.6g}"


# ------------------------------------------------------------------------------- commands
def cmd_init(args) -> int:
    from dptext.ledger.backends import backend_for
    from dptext.ledger.core import default_ledger_url

    url = args.ledger or default_ledger_url()
    backend = backend_for(url, args.timeout)
    path = backend.local_path  # None: a server
    if path is not None and backend.exists():
        raise DPTextError(f"a file already exists at {path}: not creating a ledger")
    if path is not None and args.ledger is None:
        path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    args.ledger = url
    with _open(args, create=True) as ledger:
        print(f"ledger {ledger.where} ({ledger.backend}), delta {ledger.delta:g} for PLD "
              "reports")
        if path is not None:
            from dptext.ledger.keys import SECRET_ENV, secret_path

            where = (f"${SECRET_ENV}" if ledger.secret_given else str(secret_path(path)))
            print(f"secret: {where} (keep it with the ledger: unit ids cannot be matched "
                  "without it)")
    return 0


def cmd_budget(args) -> int:
    with _open(args) as ledger:
        if args.epsilon is not None:
            if not args.owner or not args.dataset:
                raise DPTextError("setting a budget needs --owner and --dataset ('*' for any)")
            ledger.set_budget(args.owner, args.dataset, args.epsilon, args.delta or 0.0)
        budgets = ledger.budgets()
    if args.json:
        print(json.dumps([dataclasses.asdict(b) for b in budgets]))
        return 0
    if not budgets:
        print("no budgets (every release is recorded, none is limited)")
    for b in budgets:
        print(f"owner {b.owner:<16} dataset {b.dataset:<16} epsilon {b.epsilon:g}  "
              f"delta {b.delta:g}  per unit (basic composition)")
    return 0


def cmd_users(args) -> int:
    with _open(args) as ledger:
        rows = ledger.units(owner=args.owner, dataset=args.dataset)
    if args.limit is not None:
        rows = rows[:args.limit]
    if args.json:
        for r in rows:
            print(json.dumps({"unit": r.unit, "epsilon": r.epsilon, "delta": r.delta,
                              "records": r.records, "pending": r.pending,
                              "withheld": r.withheld}))
        return 0
    print(f"{'unit (keyed hash)':<34}{'epsilon':>12}{'delta':>10}{'released':>10}"
          f"{'pending':>9}{'withheld':>10}")
    for r in rows:
        print(f"{r.unit:<34}{_num(r.epsilon):>12}{r.delta:>10.3g}{r.records:>10}"
              f"{r.pending:>9}{r.withheld:>10}")
    return 0


def cmd_show(args) -> int:
    with _open(args) as ledger:
        unit = args.unit if args.hashed else ledger.unit_hash(args.unit)
        spent = ledger.spent_hashed(unit, owner=args.owner, dataset=args.dataset)
        history = ledger.history(unit, hashed=True)
        remaining = None
        if args.owner and args.dataset and not args.hashed:
            remaining = ledger.remaining(args.unit, owner=args.owner, dataset=args.dataset)
    if args.owner:
        history = [h for h in history if h["owner"] == args.owner]
    if args.dataset:
        history = [h for h in history if h["dataset"] == args.dataset]
    if args.json:
        print(json.dumps({"unit": unit, **spent.to_dict(), "remaining_epsilon": remaining,
                          "history": history}))
        return 0
    print(f"unit {args.unit} (stored as {unit})")
    print(f"  spent      epsilon {_num(spent.epsilon_basic)}, delta {spent.delta_basic:.3g} "
          "(basic composition, pending included; enforced)")
    print(f"  PLD        epsilon {_num(spent.epsilon_pld)} at delta {spent.delta:g} "
          "(dp_accounting, reported)")
    print(f"  BR         epsilon {_num(spent.epsilon_br)} at delta {spent.delta:g} "
          "(bounded-range composition of exponential-mechanism draws, or PLD where tighter; "
          "reported)")
    print(f"  records    {spent.records} released, {spent.pending} pending "
          f"(epsilon {_num(spent.epsilon_pending)}), {spent.withheld} withheld")
    if remaining is not None:
        print(f"  remaining  epsilon {_num(remaining)} for owner {args.owner!r}, dataset "
              f"{args.dataset!r}")
    by_release: dict[str, dict] = {}
    for h in history:
        r = by_release.setdefault(h["release_id"], {
            "owner": h["owner"], "dataset": h["dataset"], "mechanism": h["mechanism"],
            "first": h["created"], "epsilon": 0.0, "released": 0, "pending": 0,
            "withheld": 0})
        if h["kind"] == "withhold":
            r["withheld"] += 1
        elif h["status"] == "voided":  # never released: not spent
            r["voided"] = r.get("voided", 0) + 1
        else:
            r["epsilon"] += h["epsilon"]
            r["released" if h["status"] == "released" else "pending"] += 1
    for rid, r in by_release.items():
        voided = f", {r['voided']} voided" if r.get("voided") else ""
        print(f"  release {rid[:12]} {r['first'][:19]} owner {r['owner']!r} dataset "
              f"{r['dataset']!r} {r['mechanism']}: epsilon {r['epsilon']:.6g} over "
              f"{r['released']} released, {r['pending']} pending, {r['withheld']} withheld"
              f"{voided}")
    return 0


def cmd_spent(args) -> int:
    from dptext.accounting.units import nearest_rank

    with _open(args) as ledger:
        rows = ledger.units(owner=args.owner, dataset=args.dataset)
        budgets = ledger.budgets()
    eps = sorted(r.epsilon for r in rows)
    out = {
        "units": len(rows),
        "released": sum(r.records for r in rows),
        "pending": sum(r.pending for r in rows),
        "withheld": sum(r.withheld for r in rows),
        "max_epsilon": eps[-1] if eps else 0.0,
        "median_epsilon": nearest_rank(eps, 0.5),
        "p95_epsilon": nearest_rank(eps, 0.95),
        "max_delta": max((r.delta for r in rows), default=0.0),
    }
    if args.json:
        print(json.dumps(out))
        return 0
    scope = ", ".join(f"{k} {v!r}" for k, v in (("owner", args.owner),
                                                ("dataset", args.dataset)) if v) or "all"
    print(f"spent per unit ({scope}; basic composition, pending included)")
    print(f"  units {out['units']} (charged or withheld), records {out['released']} released, "
          f"{out['pending']} pending, {out['withheld']} withheld")
    print(f"  epsilon per unit: max {_num(out['max_epsilon'])}, median "
          f"{_num(out['median_epsilon'])}, p95 {_num(out['p95_epsilon'])}; largest delta "
          f"{out['max_delta']:.3g}")
    for b in budgets:
        print(f"  budget owner {b.owner!r} dataset {b.dataset!r}: epsilon {b.epsilon:g}, "
              f"delta {b.delta:g}")
    return 0


def cmd_export(args) -> int:
    with _open(args) as ledger:
        if not args.output or (args.output.exists() and not args.output.is_file()):
            # stdout, /dev/null, a pipe: written in place (never replaced by a rename)
            with (open(args.output, "w") if args.output else nullcontext(sys.stdout)) as out:
                for entry in ledger.entries():
                    out.write(json.dumps(entry, ensure_ascii=False) + "\n")
            return 0
        with atomic_write(args.output) as out:  # written whole: never a half-written export
            n = 0
            for entry in ledger.entries():
                out.write(json.dumps(entry, ensure_ascii=False) + "\n")
                n += 1
    print(f"exported {n} entries to {args.output}", file=sys.stderr)
    return 0


def cmd_pending(args) -> int:
    from datetime import UTC, datetime

    with _open(args) as ledger:
        rows = ledger.pending_releases(owner=args.owner)
    now = datetime.now(UTC)
    for r in rows:
        try:
            oldest = datetime.fromisoformat(r["oldest"])
            if oldest.tzinfo is None:
                oldest = oldest.replace(tzinfo=UTC)
            r["age_seconds"] = max(0, int((now - oldest).total_seconds()))
        except (TypeError, ValueError):
            r["age_seconds"] = None
    if args.json:
        for r in rows:
            print(json.dumps({k: v for k, v in r.items() if k != "ids"} | {
                "first_id": r["ids"][0], "last_id": r["ids"][-1]}))
        return 0
    if not rows:
        print("no pending charges")
        return 0
    print(f"{'release':<34}{'owner':<14}{'dataset':<14}{'mechanism':<11}{'pending':>8}"
          f"{'epsilon':>10}  oldest (age)")
    for r in rows:
        age = "-" if r["age_seconds"] is None else _age(r["age_seconds"])
        print(f"{r['release_id']:<34}{r['owner']:<14}{r['dataset']:<14}{r['mechanism']:<11}"
              f"{r['count']:>8}{_num(r['epsilon']):>10}  {r['oldest']} ({age})")
    return 0


def _age(seconds: int) -> str:
    for unit, size in (("d", 86400), ("h", 3600), ("min", 60)):
        if seconds >= size:
            return f"{seconds // size} {unit}"
    return f"{seconds} s"


def cmd_void(args) -> int:
    import getpass

    from dptext.corpus.reconcile import void_unreleased

    try:
        by = getpass.getuser()
    except (KeyError, OSError):
        by = "unknown"
    if args.service_privatize:
        from dptext.service.reconcile import void_unsent

        with _open(args) as ledger:
            out = void_unsent(ledger, args.release, reason=args.reason, by=by,
                              dry_run=args.dry_run)
        verb = "would void" if args.dry_run else "voided"
        print(f"{verb} {out['voidable'] if args.dry_run else out['voided']} pending charges "
              f"of /v1/privatize release {args.release} (committed before sending: never "
              f"sent)" + ("" if args.dry_run else f"; reason: {' '.join(args.reason.split())};"
                          f" by {by}; logged as a chained 'void' entry"))
        return 0
    with _open(args) as ledger:
        out = void_unreleased(ledger, args.release, args.job_dir, reason=args.reason, by=by,
                              dry_run=args.dry_run)
    if args.dry_run:
        print(f"would void {out['voidable']} pending charges of release {args.release} "
              f"(never written: not in a committed shard of {args.job_dir}); "
              f"{out['kept']} in committed shards would stay pending")
        return 0
    print(f"voided {out['voided']} pending charges of release {args.release} (reason: "
          f"{' '.join(args.reason.split())}; by {by}; logged as a chained 'void' entry)")
    if out["kept"]:
        print(f"{out['kept']} pending charges are in committed shards (their records were "
              f"written): not voided - rerun the job to commit them")
    if out["removed_workdir"]:
        print(f"removed {args.job_dir} (no committed shard): a rerun is a new release")
    return 0


def cmd_verify(args) -> int:
    with _open(args) as ledger:
        r = ledger.verify()
    print(f"ledger OK: {r.entries} entries chained, {r.releases} releases, {r.units} units "
          f"(charged or withheld), {r.charges} charges ({r.pending} pending); head "
          f"{r.head_hash}")
    return 0


# --------------------------------------------------------------------------------- wiring
def register(subparsers) -> None:
    """Register ``dptext ledger ...`` on an argparse subparsers object."""
    top = subparsers.add_parser("ledger", help="the persistent privacy budget ledger",
                                description=__doc__.split("\n\n")[1])
    sub = top.add_subparsers(dest="ledger_command", required=True)

    p = sub.add_parser("init", help="create a ledger (and its secret)")
    _common(p)
    p.add_argument("--delta", type=float, default=None,
                   help="the ledger's delta for PLD reports (default 1e-6)")
    p.set_defaults(func=cmd_init)

    p = sub.add_parser("budget", help="set (with --epsilon) or list per-unit budgets")
    _common(p)
    _scope(p)
    p.add_argument("--epsilon", type=_positive, help="per-unit epsilon budget")
    p.add_argument("--delta", type=_positive, help="per-unit delta budget (default 0)")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_budget)

    p = sub.add_parser("users", help="every unit with what it has spent (keyed hashes)")
    _common(p)
    _scope(p)
    p.add_argument("--limit", type=int, help="only the N units that spent most")
    p.add_argument("--json", action="store_true", help="one JSON object per line")
    p.set_defaults(func=cmd_users)

    p = sub.add_parser("show", help="one unit: spent, remaining, history")
    _common(p)
    _scope(p)
    p.add_argument("unit", help="the unit id (e.g. the author's name), hashed with the "
                                "ledger secret")
    p.add_argument("--hashed", action="store_true",
                   help="UNIT is already the stored keyed hash (from `ledger users`)")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_show)

    p = sub.add_parser("spent", help="summary over units: max, median, p95")
    _common(p)
    _scope(p)
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_spent)

    p = sub.add_parser("pending", help="pending charges (charged, never marked released) by "
                                       "release, with their age")
    _common(p)
    p.add_argument("--owner", help="only releases by this owner")
    p.add_argument("--json", action="store_true", help="one JSON object per release")
    p.set_defaults(func=cmd_pending)

    p = sub.add_parser("void", help="void the pending charges of a killed job that provably "
                                    "never left (not in a committed shard of its work "
                                    "directory); logged in the ledger")
    _common(p)
    p.add_argument("release", help="the release id (from `dptext ledger pending`)")
    evidence = p.add_mutually_exclusive_group(required=True)
    evidence.add_argument("--job-dir", metavar="DIR",
                          help="the job's work directory (OUTPUT.partial): its manifest or "
                               "release.json names the release, its committed shards the "
                               "charges that left")
    evidence.add_argument("--service-privatize", action="store_true",
                          help="a /v1/privatize release: committed before its response is "
                               "sent, so its pending charges were never sent")
    p.add_argument("--reason", required=True, help="why (kept in the ledger's entry)")
    p.add_argument("--dry-run", action="store_true", help="only say what would be voided")
    p.set_defaults(func=cmd_void)

    p = sub.add_parser("export", help="every entry as JSON lines (hashes included)")
    _common(p)
    p.add_argument("--output", "-o", type=Path, help="file (default: stdout)")
    p.set_defaults(func=cmd_export)

    p = sub.add_parser("verify", help="check the hash chain and the derived tables")
    _common(p)
    p.set_defaults(func=cmd_verify)
