"""``dptext serve`` and ``dptext keys create|list|revoke``."""

from __future__ import annotations

import json
import sys

from dptext.cli.common import parse_as
from dptext.errors import DPTextError


def _positive(text: str) -> int:
    import argparse

    value = parse_as(int, text, f"a positive integer, got {text!r}")
    if value < 1:
        raise argparse.ArgumentTypeError(f"a positive integer, got {value}")
    return value


def _port(text: str) -> int:
    import argparse

    port = parse_as(int, text, f"a port is an integer, got {text!r}")
    if not 0 < port < 65536:
        raise argparse.ArgumentTypeError(f"a port is in 1-65535, got {port}")
    return port


def cmd_serve(args) -> int:
    try:
        import uvicorn
    except ImportError:
        raise DPTextError("the service needs its extra: pip install 'dptext[service]'") from None
    from dptext.service.app import Settings, create_app

    if args.host not in ("127.0.0.1", "localhost", "::1") and not args.allow_remote:
        raise DPTextError(f"--host {args.host} listens beyond this machine; put the service "
                          f"behind a TLS reverse proxy (docs/service.md) and pass "
                          f"--allow-remote to confirm")
    print(f"dptext: serving on http://{args.host}:{args.port} (API docs at /docs)",
          file=sys.stderr, flush=True)
    # X-Forwarded-For / X-Forwarded-Proto are read only from the proxies the operator names:
    # uvicorn's own default trusts 127.0.0.1 (or $FORWARDED_ALLOW_IPS), so any local client
    # could name itself another address and dodge the per-address limits (issue 47 N8)
    proxy = {"proxy_headers": bool(args.forwarded_allow_ips),
             "forwarded_allow_ips": args.forwarded_allow_ips or ""}
    from dptext.service.limits import Limits

    limits = Limits(rate_per_second=args.rate_per_second, rate_burst=args.rate_burst,
                    max_jobs_per_owner=args.max_jobs, max_mechanisms=args.max_mechanisms,
                    max_mechanism_bytes=args.max_mechanism_mb * 2**20,
                    max_new_mechanisms_per_owner_hour=args.max_new_mechanisms_per_hour)
    if args.workers == 1:
        app = create_app(Settings(ledger=args.ledger, data_dir=args.data_dir, limits=limits,
                                  batch_window=args.batch_window))
        uvicorn.run(app, host=args.host, port=args.port, log_level=args.log_level, **proxy)
    else:  # worker processes build the app themselves from the environment
        import os

        os.environ["DPTEXT_SERVICE_LEDGER"] = args.ledger or ""
        os.environ["DPTEXT_SERVICE_DATA"] = args.data_dir or ""
        os.environ["DPTEXT_SERVICE_LIMITS"] = json.dumps(
            {"rate_per_second": args.rate_per_second, "rate_burst": args.rate_burst,
             "max_jobs_per_owner": args.max_jobs, "max_mechanisms": args.max_mechanisms,
             "max_mechanism_bytes": args.max_mechanism_mb * 2**20,
             "max_new_mechanisms_per_owner_hour": args.max_new_mechanisms_per_hour})
        uvicorn.run("dptext.service.app:app_from_environment", factory=True, host=args.host,
                    port=args.port, workers=args.workers, log_level=args.log_level, **proxy)
    return 0


def _store(args):
    from dptext.ledger import Ledger
    from dptext.service.keys import KeyStore

    ledger = Ledger(args.ledger)  # creates the ledger first, so its file is a ledger
    return KeyStore(ledger.url)


def cmd_keys(args) -> int:
    store = _store(args)
    if args.action == "create":
        if not args.owner:
            raise DPTextError("keys create needs an OWNER")
        key = store.create(args.owner)
        print(key)
        print(f"dptext: key for {args.owner}: shown once, stored only as a salted hash",
              file=sys.stderr)
    elif args.action == "list":
        for k in store.list(args.owner):
            print(f"{k.key_id}  {k.owner:20s} created {k.created}"
                  + (f"  REVOKED {k.revoked}" if k.revoked else ""))
    else:
        if not args.owner:
            raise DPTextError("keys revoke needs the key or its id")
        if not store.revoke(args.owner):
            raise DPTextError(f"no active key {args.owner!r}")
        print(f"revoked {args.owner}")
    return 0


def register(subparsers) -> None:
    from dptext.cli.common import add_command

    s = add_command(subparsers, "serve", help="run the privatization service and web page")
    s.add_argument("--host", default="127.0.0.1", help="address to listen on (loopback)")
    s.add_argument("--port", type=_port, default=8000, help="port")
    s.add_argument("--ledger", help="ledger URL or path (default $DPTEXT_LEDGER or the "
                                    "data directory)")
    s.add_argument("--data-dir", help="where jobs are kept (default: beside the ledger)")
    s.add_argument("--workers", type=int, default=1,
                   help="worker processes (each loads the mechanisms it serves once)")
    s.add_argument("--rate-per-second", type=float, default=50.0,
                   help="requests per second per API key, sustained")
    s.add_argument("--rate-burst", type=int, default=100, help="requests per key at once")
    s.add_argument("--max-jobs", type=int, default=2, help="file jobs per owner at once")
    s.add_argument("--max-mechanisms", type=_positive, default=32,
                   help="fitted mechanisms kept in memory (least recently used dropped)")
    s.add_argument("--max-mechanism-mb", type=_positive, default=2048,
                   help="MiB of fitted mechanisms' tables kept in memory")
    s.add_argument("--max-new-mechanisms-per-hour", type=_positive, default=20,
                   help="distinct parameter sets one owner may have fitted per hour")
    s.add_argument("--batch-window", type=float, default=0.01,
                   help="seconds an LM request waits for others to share its batch (0: "
                        "each request runs alone)")
    s.add_argument("--forwarded-allow-ips", metavar="IPS",
                   help="comma-separated addresses of the reverse proxies whose "
                        "X-Forwarded-For is trusted (default: none; every address is the "
                        "connection's peer)")
    s.add_argument("--allow-remote", action="store_true",
                   help="allow a --host other than loopback")
    s.add_argument("--log-level", default="info",
                   choices=("critical", "error", "warning", "info", "debug"))
    s.set_defaults(func=cmd_serve)

    k = add_command(subparsers, "keys", help="create, list or revoke service API keys")
    k.add_argument("action", choices=("create", "list", "revoke"))
    k.add_argument("owner", nargs="?", help="create: the owner; revoke: the key or key id; "
                                            "list: only this owner")
    k.add_argument("--ledger", help="ledger URL or path (as for serve)")
    k.set_defaults(func=cmd_keys)
