"""``dptext audit`` and ``dptext audit-training`` (docs/audit.md).

Exit status: 0 when every audit is consistent, 3 when one finds a VIOLATION (2: bad input).
"""

from __future__ import annotations

import json
import sys

from dptext.cli.common import parse_value
from dptext.errors import DPTextError

EXIT_VIOLATION = 3
# Mechanisms without a default epsilon (DP-MLM, DP-Prompt) are audited at this one unless told:
# near epsilon = 2 their outputs are almost uniform over tens of thousands of tokens.
LM_EPSILON = 25.0



def _params(items: list[str] | None) -> dict:
    out = {}
    for item in items or []:
        name, sep, value = item.partition("=")
        if not sep or not name:
            raise DPTextError(f"--param takes NAME=VALUE, got {item!r}")
        out[name.strip().replace("-", "_")] = parse_value(value.strip())
    return out


def _build(name: str, epsilon: float | None, params: dict):
    from dptext.mechanisms.registry import mechanism, parameters, registered

    table = registered()
    if name not in table:
        raise DPTextError(f"unknown mechanism {name!r}; available: {', '.join(table)}")
    params = dict(params)
    if epsilon is not None:
        params["epsilon"] = epsilon
    elif parameters(table[name]).get("epsilon") == "<required>":
        params["epsilon"] = LM_EPSILON
    return mechanism(name, **params)


def _write_json(path: str, payload) -> None:
    from dptext.io import atomic_write

    with atomic_write(path, encoding="utf-8") as f:
        json.dump(payload, f, indent=2)
        f.write("\n")


def cmd_audit(args) -> int:
    from dptext.audit import audit, audit_exact
    from dptext.mechanisms.registry import registered

    if args.all == bool(args.mechanism):
        raise DPTextError("name one MECHANISM, or give --all")
    if args.samples is not None and args.samples < 20:
        raise DPTextError(f"--samples must be >= 20, got {args.samples}")
    if not 0.0 < args.confidence < 1.0:
        raise DPTextError(f"--confidence must lie in (0, 1), got {args.confidence}")
    params = _params(args.param)
    if args.space is not None:
        if args.all:
            raise DPTextError("--space applies to one word mechanism; not with --all")
        if "space" in params:
            raise DPTextError("give the space once: --space or --param space=...")
        from dptext.cli.common import load_space

        params["space"] = load_space(args.space)
    names = list(registered()) if args.all else [args.mechanism]
    results = []
    for name in names:
        m = _build(name, args.epsilon, params if not args.all else {})
        if args.exact:
            r = audit_exact(m, full=args.full, seed=args.seed)
        else:
            r = audit(m, samples=args.samples, confidence=args.confidence, full=args.full,
                      seed=args.seed)
        print(r.summary(), flush=True)
        results.append(r)
    if args.json:
        payload = [r.to_dict() for r in results]
        _write_json(args.json, payload if args.all else payload[0])
    if args.plot:
        from dptext.audit.plots import plot_results

        plot_results(results, args.plot)
    bad = [r.mechanism for r in results if r.verdict == "VIOLATION"]
    if bad:
        print(f"dptext audit: VIOLATION in {', '.join(bad)}", file=sys.stderr)
        return EXIT_VIOLATION
    return 0


def cmd_audit_training(args) -> int:
    from dptext.audit.training import audit_training, audit_training_one_run
    from dptext.training.trainer import TrainConfig

    # one run: the paper's 95% and a delta small against 1 / (2 m) (the bound's delta term is
    # 2 m delta); two worlds: 99% and 1e-3 as before
    if args.confidence is None:
        args.confidence = 0.95 if args.one_run else 0.99
    if args.delta is None:
        args.delta = 1e-5 if args.one_run else 1e-3
    if not 0.0 < args.confidence < 1.0:
        raise DPTextError(f"--confidence must lie in (0, 1), got {args.confidence}")
    if not 0.0 < args.q_u <= 1.0:
        raise DPTextError(f"--q-u must lie in (0, 1], got {args.q_u}")
    if not (args.z > 0 and 0.0 < args.delta < 1.0):
        raise DPTextError("--z must be > 0 and --delta in (0, 1)")
    config = TrainConfig(algo="userdp", rounds=args.rounds, q_u=args.q_u, z=args.z,
                         beta=args.beta, delta=args.delta, local_steps=1, local_lr=1.0)
    if args.one_run:
        r = audit_training_one_run(config, canaries=args.canaries, background=args.users,
                                   tensors=args.tensors, width=args.width,
                                   confidence=args.confidence, seed=args.seed)
    else:
        r = audit_training(config, trials=args.trials, confidence=args.confidence,
                           users=args.users, tensors=args.tensors, seed=args.seed)
    print(r.summary())
    if args.json:
        _write_json(args.json, r.to_dict())
    return EXIT_VIOLATION if r.verdict == "VIOLATION" else 0


def register(subparsers) -> None:
    a = subparsers.add_parser(
        "audit", help="statistical audit of a mechanism's claimed epsilon (docs/audit.md)")
    a.add_argument("mechanism", nargs="?", help="registered mechanism name")
    a.add_argument("--epsilon", "-e", type=float, help="epsilon to audit (default: the "
                   f"mechanism's own; {LM_EPSILON:g} for DP-MLM/DP-Prompt)")
    a.add_argument("--param", action="append", metavar="NAME=VALUE",
                   help="mechanism parameter (repeatable), e.g. --param k=10")
    a.add_argument("--space", help="embedding space of a word mechanism: minilm-50k (the "
                   "default), glove-6b-50d, a saved .npz or a vectors file")
    a.add_argument("--samples", type=int,
                   help="draws per input (default 20,000 for word mechanisms, 1,000 for LM "
                   "rewriting; ten times that with --full)")
    a.add_argument("--confidence", type=float, default=0.99,
                   help="confidence of the lower bounds")
    a.add_argument("--json", metavar="OUT", help="write the result(s) as JSON")
    a.add_argument("--plot", metavar="OUT.png", help="bar chart of lower bounds vs claims")
    a.add_argument("--all", action="store_true", help="audit every registered mechanism")
    a.add_argument("--full", action="store_true",
                   help="the long version: 4x the pairs, 10x the samples")
    a.add_argument("--exact", action="store_true",
                   help="exact log-ratios from distribution() (mechanisms that have it)")
    a.add_argument("--seed", type=int, help="seed of the draws (default: OS entropy, printed "
                   "in the JSON so a VIOLATION can be reproduced)")
    a.set_defaults(func=cmd_audit)

    t = subparsers.add_parser(
        "audit-training",
        help="canary audit of user-level DP-FedAvg against the accountant's epsilon")
    t.add_argument("--trials", type=int, default=200, help="training runs per world")
    t.add_argument("--z", type=float, default=2.0, help="noise multiplier (2)")
    t.add_argument("--beta", type=float, default=0.05, help="clipping bound")
    t.add_argument("--rounds", type=int, default=1, help="rounds per run")
    t.add_argument("--q-u", type=float, default=1.0, help="user sampling rate (1)")
    t.add_argument("--delta", type=float, help="delta (1e-3; 1e-5 with --one-run)")
    t.add_argument("--users", type=int, default=4,
                   help="users per run, the target included (with --one-run: users besides "
                        "the canaries, always included)")
    t.add_argument("--tensors", type=int, default=64, help="parameter tensors of the model")
    t.add_argument("--confidence", type=float, help="confidence (0.99; 0.95 with --one-run)")
    t.add_argument("--one-run", action="store_true",
                   help="one training run with --canaries canary users, each included with "
                        "probability 1/2 (Steinke, Nasr, Jagielski 2023) instead of --trials "
                        "runs per world")
    t.add_argument("--canaries", type=int, default=1000, help="canary users (--one-run)")
    t.add_argument("--width", type=int, default=16,
                   help="entries per tensor (--one-run; tensors x width: a power of two above "
                        "--canaries)")
    t.add_argument("--json", metavar="OUT", help="write the result as JSON")
    t.add_argument("--seed", type=int)
    t.set_defaults(func=cmd_audit_training)
