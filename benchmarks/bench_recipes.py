"""Training recipes that visibly learn at a user-level epsilon <= 10 (docs/uedp.md, "Recipes"),
and the comparison of the algorithms at matched epsilon (docs/uedp.md, "Comparison").

    .venv/bin/python benchmarks/bench_recipes.py recipes [--only NAME ...] [--workdir DIR]
    .venv/bin/python benchmarks/bench_recipes.py compare [--epsilons 1 3 10] [--algos ...]
        [--workdir DIR]

``compare`` runs, on one corpus and split (House of Commons, 250 speeches, seed 0, 4 rounds, the
small LSTM): noiseless FedAvg, de-identification, and at each user-level epsilon (delta 1e-10)
user-level DP-FedAvg (``userdp``), UeDP f_E (``uedp-naive``) and f_E+ (``uedp``), user-level
DP-SGD with user sampling (``dpsgd-user``: userdp with one local step) and example-level DP-SGD
with a user-level guarantee (``dpsgd-example``: at most 8 sentences a user, every example every
round); tokens/s is the rounds' trained tokens over their seconds.

Each run is one ``dptext train`` process (``python -m dptext.cli``, 1 torch thread), timed from
outside (wall seconds, the child's peak resident memory from ``wait4``); the figures printed are
read from its ``metrics.json``: held-out perplexity of the untrained and the trained model, the
learning verdict, epsilon at delta 1e-5 and 1e-10 (the run's noise multiplier through the
accountant), and for UeDP the epsilon of the entities held by more than K users. ``lscpu``'s
model and flags and ``uptime`` are printed before and after (the machine is shared).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))  # this checkout's dptext, as the runs use
HOC = ["--data", "dataset:house_of_commons"]
NOTES = "notes.jsonl"  # written by benchmarks/clinical_notes.py into the work directory
NOTES_ARGS = ["--data", NOTES, "--user-field", "patient_id", "--text-field", "note"]
LSTM_SMALL = ["--vocab-size", "300", "--max-len", "12", "--q-u", "1", "--beta", "1",
              "--seed", "0"]

RECIPES = {
    # the README's example: 150 speeches (~135 training speakers), 3 rounds, <= 8 sentences a
    # speaker a round
    "readme": HOC + ["--limit", "150", "--algo", "userdp", "--rounds", "3", "--epsilon", "8",
                     "--delta", "1e-10", "--max-sentences", "8", *LSTM_SMALL],
    # 250 speeches (~230 training speakers), 4 rounds
    "hoc-userdp": HOC + ["--limit", "250", "--algo", "userdp", "--rounds", "4",
                         "--epsilon", "8", "--delta", "1e-10", *LSTM_SMALL],
    "hoc-uedp": HOC + ["--limit", "250", "--algo", "uedp", "--q-e", "0.5", "--q-s", "1",
                       "--rounds", "4", "--epsilon", "8", "--delta", "1e-10", *LSTM_SMALL],
    "notes-userdp": NOTES_ARGS + ["--algo", "userdp", "--rounds", "4", "--epsilon", "8",
                                  "--delta", "1e-10", *LSTM_SMALL],
    "notes-uedp": NOTES_ARGS + ["--algo", "uedp", "--q-e", "0.5", "--q-s", "1", "--rounds", "4",
                                "--epsilon", "8", "--delta", "1e-10", *LSTM_SMALL],
    # the MiniLM classifier: a speech's party from its frozen sentence embedding
    "hoc-cls-userdp": HOC + ["--limit", "250", "--task", "cls", "--algo", "userdp",
                             "--rounds", "4", "--epsilon", "8", "--delta", "1e-10", "--q-u", "1",
                             "--beta", "1", "--local-lr", "5", "--seed", "0"],
    # the MiniLM classifier on a label readable from the text that varies within a user: a
    # generated clinical note's kind (note_type: 6 classes, benchmarks/clinical_notes.py)
    "notes-cls-userdp": NOTES_ARGS + ["--label-field", "note_type", "--task", "cls",
                                      "--algo", "userdp", "--rounds", "20", "--epsilon", "8",
                                      "--delta", "1e-10", "--q-u", "1", "--beta", "7",
                                      "--local-lr", "10", "--seed", "0"],
    # SmolLM2-135M with rank-8 LoRA adapters on its last 2 blocks (162,816 trained parameters),
    # every House of Commons speaker (535 training) every round, one local gradient step on at
    # most 2 sentences of 16 tokens, clipped at half the median update norm, server-lr 5
    "hoc-smollm2-lora": HOC + ["--model", "smollm2", "--lora-rank", "8", "--trainable-blocks",
                               "2", "--algo", "userdp", "--rounds", "2", "--q-u", "1",
                               "--epsilon", "8", "--delta", "1e-10", "--beta", "0.15",
                               "--local-lr", "1", "--server-lr", "5", "--local-steps", "1",
                               "--max-sentences", "2", "--max-len", "16", "--seed", "0"],
    # 16 accounts only: user-level DP over 15 training accounts
    "tweets-userdp": ["--data", "dataset:health_tweets", "--limit", "3000", "--algo", "userdp",
                      "--rounds", "4", "--epsilon", "8", "--delta", "1e-10", *LSTM_SMALL],
}


# compare: each algorithm's options beyond the common ones (noiseless and deid first)
COMPARED = {
    "noiseless": ["--algo", "noiseless"],
    "deid": ["--algo", "deid"],
    "userdp": ["--algo", "userdp"],
    "uedp-naive": ["--algo", "uedp-naive", "--q-e", "0.5", "--q-s", "1"],
    "uedp": ["--algo", "uedp", "--q-e", "0.5", "--q-s", "1"],
    # Charles et al. 2024: user-level sampling (DP-FedSGD) and example-level sampling
    "dpsgd-user": ["--algo", "userdp", "--local-steps", "1"],
    "dpsgd-example": ["--algo", "dpsgd-example", "--examples-per-user", "8", "--local-steps",
                      "1"],
}


def machine() -> str:
    lscpu = subprocess.run(["lscpu"], capture_output=True, text=True).stdout
    keep = [line for line in lscpu.splitlines()
            if line.startswith(("Model name", "CPU(s):", "Flags"))]
    flags = [f for f in " ".join(keep).split() if f in ("avx2", "avx512f", "avx512_vnni",
                                                        "fma", "sse4_2")]
    model = next((line.split(":", 1)[1].strip() for line in keep
                  if line.startswith("Model name")), "?")
    cpus = next((line.split(":", 1)[1].strip() for line in keep
                 if line.startswith("CPU(s)")), "?")
    uptime = subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip()
    return f"lscpu: {model}, {cpus} CPUs, flags {' '.join(flags)}; uptime: {uptime}"


def run(name: str, argv: list[str], workdir: Path) -> dict:
    from dptext.accounting.uedp import TrainingPrivacy

    out = workdir / name
    env = {**os.environ, "OMP_NUM_THREADS": "1", "PYTHONPATH": str(ROOT / "src"),
           "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}
    # GNU time reports the child's own peak resident memory (KiB)
    cmd = ["/usr/bin/time", "-f", "peak_kb=%M", sys.executable, "-m", "dptext.cli", "train",
           *argv, "--no-progress", "--output", str(out)]
    start = time.perf_counter()
    done = out / "bench.json"  # a finished run of the same command is read, not re-run
    if done.is_file() and json.loads(done.read_text())["argv"] == argv:
        wall, peak_mb = (json.loads(done.read_text())[k] for k in ("wall_s", "peak_mb"))
    else:
        proc = subprocess.run(cmd, cwd=workdir, env=env, capture_output=True, text=True)
        wall = time.perf_counter() - start
        stderr = proc.stderr
        peak = [line for line in stderr.splitlines() if line.startswith("peak_kb=")]
        peak_mb = int(peak[-1].split("=")[1]) / 1024 if peak else None
        if proc.returncode != 0:
            return {"name": name, "error": stderr.strip().splitlines()[-1:], "wall_s": wall}
        done.write_text(json.dumps({"argv": argv, "wall_s": wall, "peak_mb": peak_mb}))
    s = json.loads((out / "metrics.json").read_text())
    c = s["config"]
    row = {"name": name, "algo": c["algo"], "users": s["users"], "test_users": s["test_users"],
           "rounds": c["rounds"], "z": c["z"], "wall_s": wall, "peak_mb": peak_mb,
           "round_s": sum(r["seconds"] for r in s["rounds"]) / len(s["rounds"]),
           "untrained_ppl": s["untrained"].get("perplexity", s["untrained"]["loss"]),
           "ppl": s["rounds"][-1].get("perplexity", s["rounds"][-1]["loss"]),
           "error_rate": s["rounds"][-1].get("error_rate"),
           "learned": s["learning"]["learned"],
           "baseline": s["learning"]["baseline"],
           "baseline_loss": s["learning"]["baseline_loss"],
           "headline": s["headline"], "warning": s.get("warning")}
    tokens = sum(r.get("tokens", 0) for r in s["rounds"])
    row["tokens_per_s"] = tokens / max(sum(r["seconds"] for r in s["rounds"]), 1e-9)
    if c["algo"] in ("uedp", "uedp-naive", "userdp", "dpsgd-example"):
        p = TrainingPrivacy(c["algo"], c["q_u"], c["z"], c["q_e"], c["q_s"], c["entity_users"],
                            c.get("examples_per_user", 1))
        row["eps_1e-5"] = p.epsilon(c["rounds"], 1e-5)
        row["eps_1e-10"] = p.epsilon(c["rounds"], 1e-10)
        wide = s.get("wide_entities")
        if wide:
            w = p.for_entity_users(wide["most_other_holders"])
            row["wide"] = {"entities": s["entities_held_by_more_than_K_users"],
                           "most": wide["most_other_holders"],
                           "eps_1e-5": w.epsilon(c["rounds"], 1e-5),
                           "eps_1e-10": w.epsilon(c["rounds"], 1e-10)}
    return row


def show(row: dict) -> None:
    if "error" in row:
        print(f"| {row['name']} | failed: {row['error']} |", flush=True)
        return
    eps = ("-" if "eps_1e-5" not in row else
           f"{row['eps_1e-5']:.2f} / {row['eps_1e-10']:.2f}")
    wide = row.get("wide")
    wide_s = ("-" if not wide else
              f"{wide['entities']} entities (up to {wide['most']} users): "
              f"{wide['eps_1e-5']:.4g} / {wide['eps_1e-10']:.4g}")
    peak = "?" if row["peak_mb"] is None else f"{row['peak_mb']:.0f} MB"
    cls = row.get("error_rate") is not None  # cross-entropy and error rate, not perplexity
    digits = 3 if cls else 1
    result = (f"{row['untrained_ppl']:.{digits}f} -> **{row['ppl']:.{digits}f}** "
              f"({'learned' if row['learned'] else 'NOT learned'}")
    if cls:
        result += (f"; cross-entropy; {row['baseline']} {row['baseline_loss']:.3f}; error rate "
                   f"{row['error_rate']:.3f}")
    print(f"| {row['name']} | {row['users']} (+{row['test_users']} held out) | {result}) | "
          f"{eps} | {wide_s} | {row['wall_s']:.0f} s ({row['round_s']:.0f} s/round, "
          f"{row['tokens_per_s']:.0f} tokens/s), {peak} |", flush=True)
    if row.get("warning"):
        print(f"    warning: {row['warning']}", flush=True)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("what", choices=("recipes", "compare"))
    ap.add_argument("--only", nargs="+", help="recipes to run (default: all)")
    ap.add_argument("--epsilons", nargs="+", type=float, default=[1.0, 3.0, 10.0],
                    help="compare: user-level epsilons at delta 1e-10")
    ap.add_argument("--algos", nargs="+", default=list(COMPARED),
                    help="compare: the algorithms (default all)")
    ap.add_argument("--workdir", default="/tmp/dptext-recipes")
    args = ap.parse_args()
    work = Path(args.workdir)
    work.mkdir(parents=True, exist_ok=True)
    notes = work / NOTES  # regenerated when written before it carried note_type
    if not notes.exists() or '"note_type"' not in notes.open(encoding="utf-8").readline():
        subprocess.run([sys.executable, str(ROOT / "benchmarks" / "clinical_notes.py"),
                        str(work / NOTES), "--patients", "400", "--seed", "0"], check=True)
    print(machine(), flush=True)
    print("| recipe | training users | held-out perplexity untrained -> trained | epsilon "
          "(delta 1e-5 / 1e-10) | entities held by more than K=1 users: epsilon | time, "
          "peak memory |")
    print("|---|---|---|---|---|---|")
    if args.what == "recipes":
        jobs = {k: v for k, v in RECIPES.items() if not args.only or k in args.only}
    else:  # the same corpus and split (seed 0) for every algorithm
        base = HOC + ["--limit", "250", "--rounds", "4", *LSTM_SMALL]
        jobs = {algo: base + COMPARED[algo] for algo in ("noiseless", "deid")
                if algo in args.algos}
        for eps in args.epsilons:
            for algo in list(COMPARED)[2:]:
                if algo not in args.algos:
                    continue
                jobs[f"{algo}-eps{eps:g}"] = base + [*COMPARED[algo], "--epsilon", f"{eps:g}",
                                                     "--delta", "1e-10"]
    rows = []
    for name, argv in jobs.items():
        row = run(name, argv, work)
        rows.append(row)
        show(row)
    (work / f"{args.what}.json").write_text(json.dumps(rows, indent=1))
    print(machine(), flush=True)


if __name__ == "__main__":
    main()
