"""``dptext mechanisms``, ``dptext resources`` and ``dptext cache``: what dptext offers, what
it has built, and where."""

from __future__ import annotations

from dptext.cli import build_mlm
from dptext.cli.common import add_command, progress_wanted
from dptext.errors import DPTextError


def cmd_mechanisms(args) -> int:
    from dptext.mechanisms.registry import REQUIRED, parameters, registered

    for name, cls in registered().items():
        print(f"{name:10s} {cls.summary}")
        print(f"{'':10s} guarantee: {cls.guarantee_summary}")
        if cls.typical_epsilon is not None:
            t = cls.typical_epsilon
            print(f"{'':10s} typical epsilon: {t.text} ({t.evidence})")
        for space, t in cls.typical_epsilon_spaces.items():
            print(f"{'':10s} typical epsilon on {space}: {t.text} ({t.evidence})")
        params = ", ".join(f"{k} (required)" if v == REQUIRED else f"{k}={v!r}"
                           for k, v in parameters(cls).items())
        print(f"{'':10s} parameters: {params}")
    print("\n  every mechanism also takes document_epsilon=E (--document-epsilon E) instead of "
          "epsilon: each record costs at most E (docs/choosing-epsilon.md)")
    return 0


def cmd_resources(args) -> int:
    from dptext.lm.loading import masked_lm_resource
    from dptext.resources import default_space, list_resources

    for r in list_resources(masked_lm_resource()):
        status = "ready" if r.ready else "missing"
        print(f"{r.name:22s} {status:8s} {r.what}\n{'':31s} {r.location}")
    _print_cpu()
    if not args.list:
        space = default_space(progress=progress_wanted(args))
        print(f"{space}: Delta_min={space.delta_min:.4g}, Delta_max={space.delta_max:.4g}, "
              f"{len(space.aliases)} merged variants")
    return 0


def _print_cpu() -> None:
    """The CPU features dptext's speed depends on (never its outputs): int8 search levels,
    bf16 kernels (docs/reliability.md, "Tests that depend on the CPU")."""
    from dptext.devices import cpu_features, cpu_info, has_int8_dot
    from dptext.lm.quantize import native_bf16, torch_cpu_capability

    model, _ = cpu_info()
    features = ", ".join(f"{name} {'yes' if has else 'no'}"
                         for name, has in cpu_features().items())
    print(f"cpu                    {model}: {features}")
    bf16 = "yes" if native_bf16() else "no (precision=bf16 is emulated, slower than fp32)"
    int8 = ("8-bit word codes (VNNI/AMX)" if has_int8_dot()
            else "7-bit word codes (no VNNI/AMX: about 1.2-1.3x search=exact)")
    print(f"{'':23s}torch CPU capability {torch_cpu_capability()}; oneDNN bf16 kernels {bf16}; "
          f"--search int8 {int8}")


def _size(n: int) -> str:
    for unit in ("B", "KB", "MB", "GB"):
        if n < 1024 or unit == "GB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return f"{n:.1f} GB"


def _size_arg(text: str) -> int:
    import argparse
    import re

    m = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*([KMGT]?)i?B?\s*", text, re.IGNORECASE)
    if m is None:
        raise argparse.ArgumentTypeError(f"a size such as 500MB or 2GB, got {text!r}")
    scale = 1024 ** " KMGT".index(m.group(2).upper() or " ")
    return int(float(m.group(1)) * scale)


def cmd_cache(args) -> int:
    from dptext.resources import cache_entries, clear_cache

    if args.action == "list":
        entries = cache_entries()
        total = 0
        for e in entries:
            total += e.bytes
            print(f"{e.kind:14s} {_size(e.bytes):>9s}  {e.path}")
        print(f"{len(entries)} entries, {_size(total)} in all")
        return 0
    if args.action == "clear":
        if not args.kind and not args.all:
            raise DPTextError("cache clear needs --all or --kind KIND (see `dptext cache list`)")
        freed, removed = clear_cache(kinds=None if args.all else args.kind)
        print(f"removed {removed} entries, freed {_size(freed)}")
        return 0
    if args.action == "prune":
        from dptext.resources import CACHE_MAX_ENV, cache_cap, prune_cache

        cap = args.max_size if args.max_size is not None else cache_cap()
        if cap is None:
            raise DPTextError(f"cache prune needs --max-size (${CACHE_MAX_ENV} is 'none')")
        kinds = args.kind or ["fitted"]
        freed, removed = prune_cache(cap, kinds)
        left = sum(e.bytes for e in cache_entries() if e.kind in kinds)
        print(f"removed {removed} least recently used entries, freed {_size(freed)}; "
              f"{', '.join(kinds)} now {_size(left)} (at most {_size(cap)})")
        return 0
    raise DPTextError(f"unknown cache action {args.action!r}")


def register(subparsers) -> None:
    m = add_command(subparsers, "mechanisms", help="list mechanisms, parameters and guarantees")
    m.set_defaults(func=cmd_mechanisms)

    r = add_command(subparsers, "resources",
                    help="list the offline defaults and build what is missing")
    r.add_argument("--list", action="store_true", help="only list; build nothing")
    r.add_argument("--no-progress", action="store_true")
    r.set_defaults(func=cmd_resources)
    actions = r.add_subparsers(dest="resource_action")
    build = add_command(actions, "build", help="build or re-train an offline resource")
    build_mlm.register(build.add_subparsers(dest="what", required=True))

    c = add_command(subparsers, "cache", help="show or free what the cache holds")
    c.add_argument("action", choices=("list", "clear", "prune"))
    c.add_argument("--kind", action="append",
                   help="with clear or prune: only entries of this kind (repeatable), e.g. "
                        "fitted (prune's default)")
    c.add_argument("--max-size", type=_size_arg, metavar="SIZE",
                   help="with prune: keep at most this much (e.g. 500MB, 2GB; default "
                        "$DPTEXT_CACHE_MAX_MB or 1 GB), least recently used out first")
    c.add_argument("--all", action="store_true", help="with clear: every entry")
    c.set_defaults(func=cmd_cache)
