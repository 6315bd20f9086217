"""The fuzz/fault campaign of issue 12, re-runnable (docs/reliability.md, "The campaign").

    python benchmarks/fuzz_campaign.py [--records 10000] [--space default|tiny]
                                       [--rss 100000,1000000] [--seed 0]

1. Fuzzed records (tests/support/fuzz_corpus.py) in txt, JSONL, CSV (CRLF) and CSV (CR-only),
   through every word mechanism with ``dptext.sanitize``: crashes (any exception but DPTextError),
   records in = out, raw releases (an output word that is neither a vocabulary word nor the
   placeholder, or glue that differs from the input's), letters in glue, other JSONL/CSV fields
   changed.
2. Bad inputs through ``dptext sanitize`` (in-process ``dptext.cli.main``): each must exit
   non-zero with exactly one ``dptext: error:`` line naming the problem and leave no output.
3. Peak RSS of ``sanitize`` (custext) for N plain records, each N in its own process.

tests/core/test_reliability_fuzz.py runs a short version in ``make test``.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import resource
import subprocess
import sys
import time
import traceback
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests" / "support"))

import fuzz_corpus as fc  # noqa: E402

SLOW = {"laplace"}
SLOW_RECORDS = 1000


def tiny_space():
    from dptext import EmbeddingSpace

    rng = np.random.default_rng(12)
    words = fc.VOCAB + [f"tok{i}" for i in range(45)]
    space = EmbeddingSpace(words, rng.standard_normal((len(words), 8)).astype(np.float32),
                           name="fuzz-60")
    space.geometry(32)
    return space


def _records(path: Path, fmt: str) -> list:
    from dptext.io import read_csv, read_json_objects, read_lines

    if fmt == "txt":
        return [line for _, line in read_lines(path, strip_bom=True)]
    if fmt == "jsonl":
        return [obj for _, obj in read_json_objects(path)]
    return [fields for _, _, fields in read_csv(path)[1]]


def _check_release(original: str, released: str, space, placeholder: str) -> tuple[int, int]:
    """(raw releases, letters in glue) of one record."""
    from dptext.text import normalize_word, split_words

    sentinel = "zzplaceholderzz"  # the placeholder "[UNK]" tokenizes as glue + word + glue
    a, b = split_words(original), split_words(released.replace(placeholder, sentinel))
    raw = 0
    if a[0::2] != b[0::2]:
        raw += 1  # the glue is released verbatim and must be the input's, unchanged
    for w in b[1::2]:
        if w != sentinel and normalize_word(w) not in space.index:
            raw += 1
    letters = sum(fc.has_letter_property(c) for g in a[0::2] for c in g)
    return raw, letters


def fuzz(root: Path, n_records: int, space, seed: int, *, long_words: bool = True,
         cache: bool = False) -> dict:
    from dptext.errors import DPTextError
    from dptext.sanitize import sanitize

    rng = np.random.default_rng(seed)
    texts = [fc.fuzz_text(rng, long_words=long_words) for _ in range(n_records)]
    if long_words and n_records > 10:
        texts[1] = "alice met bob " * 75_000  # a 1 MB line (210,000 words)
    paths = fc.write_corpus(root / "in", texts, rng)
    # Laplace does an exact nearest-word search per token (~1,000 tokens/s on the default
    # space): it gets the first SLOW_RECORDS records without the 1 MB line.
    small = [t for i, t in enumerate(texts) if i != 1][:SLOW_RECORDS]
    small_paths = fc.write_corpus(root / "in-small", small, np.random.default_rng(seed))
    totals = {"runs": 0, "crashes": 0, "errors": 0, "records_in": 0, "records_out": 0,
              "count_mismatches": 0, "raw_releases": 0, "letters_in_glue": 0,
              "other_fields_changed": 0, "seconds": 0.0, "crash_details": []}
    for name, make in fc.mechanism_factories(space).items():
        m = make().fit(cache=cache)
        chosen = small_paths if name in SLOW and len(texts) > SLOW_RECORDS else paths
        for kind, path in chosen.items():
            fmt = "csv" if kind.startswith("csv") else kind
            out = root / "out" / f"{name}-{kind}.{fmt}"
            out.parent.mkdir(parents=True, exist_ok=True)
            totals["runs"] += 1
            start = time.perf_counter()
            try:
                # the campaign checks that the other fields come back unchanged: keep them
                sanitize(m, path, out, fmt=fmt, rng=seed, keep_other=True)
            except DPTextError as err:
                totals["errors"] += 1
                totals["crash_details"].append(f"{name}/{kind}: error {err}")
                continue
            except Exception:
                totals["crashes"] += 1
                totals["crash_details"].append(f"{name}/{kind}: "
                                               + traceback.format_exc().splitlines()[-1])
                continue
            finally:
                totals["seconds"] += time.perf_counter() - start
            before, after = _records(path, fmt), _records(out, fmt)
            totals["records_in"] += len(before)
            totals["records_out"] += len(after)
            if len(before) != len(after):
                totals["count_mismatches"] += 1
                continue
            for x, y in zip(before, after, strict=True):
                if fmt == "txt":
                    pair = (x.rstrip("\r\n"), y.rstrip("\r\n"))
                    other = x[len(pair[0]):] != y[len(pair[1]):]
                elif fmt == "jsonl":
                    pair = (x["text"], y["text"])
                    other = {k: v for k, v in x.items() if k != "text"} != {
                        k: v for k, v in y.items() if k != "text"}
                else:
                    pair = (x[1], y[1])
                    other = (x[0], x[2]) != (y[0], y[2])
                raw, letters = _check_release(*pair, space, m.placeholder)
                totals["raw_releases"] += raw
                totals["letters_in_glue"] += letters
                totals["other_fields_changed"] += int(other)
    totals["seconds"] = round(totals["seconds"], 1)
    return totals


def bad_inputs(root: Path, space_path: Path) -> dict:
    from dptext.cli import main

    cases = fc.write_bad_inputs(root / "bad")
    results = {"cases": len(cases), "one_line_errors": 0, "failures": []}
    for name, file_name, extra, needle in cases:
        out = root / "bad" / f"{name}.out"
        fmt = ["--format", "csv"] if file_name.endswith(".csv") and "--format" not in extra else []
        argv = ["sanitize", "-i", str(root / "bad" / file_name), "-o", str(out), "--space",
                str(space_path), "--no-progress", "--keep-other", *fmt, *extra]
        err = io.StringIO()
        try:
            with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
                rc = main(argv)
        except SystemExit as exc:  # argparse errors exit(2) with one line
            rc = exc.code
        except Exception:
            rc = "crash: " + traceback.format_exc().splitlines()[-1]
        lines = err.getvalue().strip().splitlines()
        leftovers = [p.name for p in out.parent.iterdir()
                     if p.name.startswith((out.name, f".{out.name}"))]
        good = (rc not in (0, None) and not isinstance(rc, str) and len(lines) == 1
                and lines[0].startswith("dptext: error: ") and needle in lines[0]
                and not leftovers)
        if good:
            results["one_line_errors"] += 1
        else:
            results["failures"].append({"case": name, "rc": rc, "stderr": lines[:3],
                                        "left": leftovers})
    return results


def peak_rss_mb() -> int:
    """This process's peak RSS (VmHWM; unlike ru_maxrss it is not inherited from the parent
    across fork + exec)."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return round(int(line.split()[1]) / 1024)
    return round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024)


def rss_one(n: int, space_name: str) -> dict:
    import dptext
    from dptext.sanitize import sanitize

    space = tiny_space() if space_name == "tiny" else None
    rng = np.random.default_rng(0)
    vocab = np.array(fc.VOCAB)
    path = Path(f"/tmp/dptext-rss-{n}.txt")
    with open(path, "w", encoding="utf-8") as f:
        for _ in range(n // 10_000 or 1):
            block = rng.choice(vocab, size=(min(n, 10_000), 12))
            f.write("\n".join(" ".join(r) for r in block) + "\n")
    m = dptext.mechanism("custext", epsilon=2.0, space=space).fit()
    base = peak_rss_mb()
    start = time.perf_counter()
    report = sanitize(m, path, path.with_suffix(".out"), rng=0)
    took = time.perf_counter() - start
    peak = peak_rss_mb()
    path.unlink()
    path.with_suffix(".out").unlink()
    return {"records": report.records, "peak_rss_mb": peak,
            "rss_before_sanitize_mb": base, "seconds": round(took, 1)}


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--records", type=int, default=10_000)
    p.add_argument("--space", choices=("default", "tiny"), default="default")
    p.add_argument("--rss", default="100000,1000000", help="record counts ('' to skip)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--root", default="/tmp/dptext-fuzz")
    p.add_argument("--rss-one", type=int, help=argparse.SUPPRESS)
    args = p.parse_args()
    if args.rss_one:
        print(json.dumps(rss_one(args.rss_one, args.space)))
        return
    root = Path(args.root)
    root.mkdir(parents=True, exist_ok=True)
    if args.space == "tiny":
        space = tiny_space()
    else:
        from dptext.resources import default_space

        space = default_space(progress=False)
    space_path = root / "space.npz"
    tiny_space().save(space_path)
    figures = {"fuzz": fuzz(root, args.records, space, args.seed,
                            cache=args.space == "default"),
               "bad_inputs": bad_inputs(root, space_path), "rss": {}}
    for n in [int(x) for x in args.rss.split(",") if x]:
        out = subprocess.run([sys.executable, __file__, "--rss-one", str(n), "--space",
                              args.space], capture_output=True, text=True, check=True)
        figures["rss"][n] = json.loads(out.stdout.strip().splitlines()[-1])
    print(json.dumps(figures, indent=2))


if __name__ == "__main__":
    main()
