"""A noiseless baseline tuned as well as the private rows (issue 47, "the training comparison says
privacy is free"; docs/uedp.md, "Comparison at matched user-level epsilon").

    nice -n 19 .venv/bin/python benchmarks/bench_training_baseline.py [--only NAME ...]
        [--workdir DIR]

The comparison's corpus and split (House of Commons, 250 speeches, seed 0, q_u 1, beta 1, the
small LSTM over 300 public words) and its 4 rounds, with:

* the step size tuned on the noiseless runs (``--server-lr`` 1, 2, 4; the private rows of the
  table all ran at 1), for FedAvg (2 local steps) and for one local step (DP-SGD with user
  sampling's noiseless twin);
* the noise of the epsilon-1 run without the clipping and the privacy (``noise-only``: userdp
  with ``--beta 1000`` and z such that the per-coordinate std z beta / |U| is the epsilon-1
  run's z x 1 / 182), which separates what the noise does from what clipping does - a
  noiseless FedAvg with Gaussian weight noise, the regularised baseline;
* the private runs at epsilon 10, 3, 1 (delta 1e-10) at server-lr 1 and at the tuned step;
* longer training: 12 rounds noiseless, with the weight noise, and at epsilon 1 (server-lr 1
  and 2);
* UeDP f_E+ at epsilon 10 and 3 and its epsilon-3 noise without clipping or privacy.

Every private run passes ``--population 182`` (the training speakers, declared public for this
experiment) so that the denominator is the same in every row (docs/uedp.md, "Dividing by
q_u |U|"). Each run is one ``dptext train`` process (benchmarks/bench_recipes.py ``run``).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_recipes import HOC, LSTM_SMALL, machine, run, show  # noqa: E402

BASE = HOC + ["--limit", "250", *LSTM_SMALL]
PUBLIC = ["--population", "182"]
# the epsilon-1 userdp runs' noise multiplier (delta 1e-10, q_u 1, public population: the
# accountant's calibration for 4 and 12 rounds)
EPS1_Z = {4: 12.2896, 12: 21.2862}
# f_E+ at epsilon 3, 4 rounds, q_eff 1 (q_s = 1), public population
UEDP_EPS3_Z = 4.3064


def noise_only(rounds: int, lr: int, local: list[str]) -> list[str]:
    """userdp without clipping (beta 1000) at the noise std of the epsilon-1 run, z beta / 182
    per coordinate of the step: the same noise, no privacy (epsilon in the thousands)."""
    return BASE + ["--algo", "userdp", "--rounds", str(rounds), "--beta", "1000", "--z",
                   f"{EPS1_Z[rounds] / 1000:.6g}", "--server-lr", str(lr), *PUBLIC, *local]


def jobs() -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    for steps, tag in ((2, "fedavg"), (1, "sgd")):
        local = ["--local-steps", str(steps)]
        for lr in (1, 2, 4):
            out[f"{tag}-noiseless-lr{lr}"] = BASE + ["--algo", "noiseless", "--rounds", "4",
                                                     "--server-lr", str(lr), *local]
        out[f"{tag}-noise-only"] = noise_only(4, 1, local)
        out[f"{tag}-noise-only-lr2"] = noise_only(4, 2, local)
        for eps in (10, 3, 1):
            for lr in (1, 2):
                out[f"{tag}-eps{eps}-lr{lr}"] = BASE + [
                    "--algo", "userdp", "--rounds", "4", "--epsilon", str(eps), "--delta",
                    "1e-10", "--server-lr", str(lr), *PUBLIC, *local]
        if tag == "fedavg":  # longer training
            for lr in (1, 2):
                out[f"fedavg-noiseless-12rounds-lr{lr}"] = BASE + [
                    "--algo", "noiseless", "--rounds", "12", "--server-lr", str(lr)]
                out[f"fedavg-eps1-12rounds-lr{lr}"] = BASE + [
                    "--algo", "userdp", "--rounds", "12", "--epsilon", "1", "--delta", "1e-10",
                    "--server-lr", str(lr), *PUBLIC]
                out[f"fedavg-noise-only-12rounds-lr{lr}"] = noise_only(12, lr, [])
    # UeDP f_E+ (the comparison's q_e 0.5, q_s 1; sensitivity 3 beta): the epsilon-10 and -3
    # rows at both steps, and the epsilon-3 noise without clipping or privacy
    uedp = ["--algo", "uedp", "--q-e", "0.5", "--q-s", "1", "--rounds", "4", *PUBLIC]
    for lr in (1, 2):
        for eps in (10, 3):
            out[f"uedp-eps{eps}-lr{lr}"] = BASE + uedp + [
                "--epsilon", str(eps), "--delta", "1e-10", "--server-lr", str(lr)]
        out[f"uedp-noise-only-eps3-lr{lr}"] = BASE + uedp + [
            "--beta", "1000", "--z", f"{UEDP_EPS3_Z / 1000:.6g}", "--server-lr", str(lr)]
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--only", nargs="+", help="runs to do (default: all)")
    ap.add_argument("--workdir", default="/tmp/dptext-baseline")
    args = ap.parse_args()
    work = Path(args.workdir)
    work.mkdir(parents=True, exist_ok=True)
    print(machine(), flush=True)
    rows = []
    every = jobs()
    unknown = sorted(set(args.only or ()) - set(every))
    if unknown:
        raise SystemExit(f"unknown runs: {', '.join(unknown)}; choose from {', '.join(every)}")
    for name in args.only or every:  # in the order given
        argv = every[name]
        row = run(name, argv, work)
        rows.append(row)
        show(row)
        if "error" not in row:
            metrics = json.loads((work / name / "metrics.json").read_text())
            curve = ", ".join(f"{r['perplexity']:.1f}" for r in metrics["rounds"])
            print(f"    rounds: {curve}", flush=True)
    (work / "baseline.json").write_text(json.dumps(rows, indent=1))
    print(machine(), flush=True)


if __name__ == "__main__":
    main()
