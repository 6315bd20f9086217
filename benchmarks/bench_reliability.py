"""What the reliability changes cost (docs/reliability.md): tokenizer, exact CusText sampling,
and the cryptographically secure generator, each measured against what it replaced in the same
process, interleaved, best of REPEATS (the machine is shared; the minimum is the least noisy).

    python benchmarks/bench_reliability.py [--tokens 100000]
        [--parts glue,tokenizer,sampling,pipeline,raw]

Uses the default 50k-word space and the 100k-token text of bench_mechanisms.py.
"""

from __future__ import annotations

import argparse
import re
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_mechanisms import make_text  # noqa: E402

REPEATS = 7


def best(fn, repeats: int = REPEATS) -> float:
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return min(times)


# the tokenizer this change replaced (text.py before issue 12), for comparison
_OLD_WORD = re.compile(r"((?:[^\W_][\u0300-\u036f]*)+(?:['\u2019](?:[^\W_][\u0300-\u036f]*)+)*)")
_OLD_ASCII = re.compile(r"([^\W_]+(?:['\u2019][^\W_]+)*)")


def old_split(text: str) -> list[str]:
    return (_OLD_ASCII if text.isascii() else _OLD_WORD).split(text)


def old_custext_sample(cum, members, set_of, rows, rng):
    u = rng.random(len(rows))
    j = (cum[rows] < u[:, None]).sum(1)
    return members[set_of[rows], j]


def glue_letters(n: int = 10_000) -> None:
    """Letters/marks the tokenizer leaves in the (released) glue of n fuzzed records."""
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "support"))
    import fuzz_corpus as fc

    from dptext.text import split_words

    rng = np.random.default_rng(0)
    texts = [fc.fuzz_text(rng, long_words=False) for _ in range(n)]
    for name, split in (("before", old_split), ("after", split_words)):
        counts = [sum(fc.has_letter_property(c) for g in split(t)[0::2] for c in g)
                  for t in texts]
        print(f"letters/marks in the glue of {n} fuzzed records, {name}: {sum(counts)} "
              f"characters in {sum(c > 0 for c in counts)} records", flush=True)


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--tokens", type=int, default=100_000)
    p.add_argument("--parts", default="glue,tokenizer,sampling,pipeline,raw")
    args = p.parse_args()
    parts = set(args.parts.split(","))
    if "glue" in parts:
        glue_letters()
    import dptext
    from dptext.resources import default_space
    from dptext.rng import secure_generator
    from dptext.text import split_words

    text = make_text(args.tokens)
    lines = text.split(". ")
    mixed = [line + " caf\u00e9 \u24b6\u24db\u24d8 \u0930\u092e\u0947\u0936" for line in lines]
    print("tokenizer (split_words over the text's sentences), s, best of", REPEATS)
    for name, data in (("ASCII", lines), ("non-ASCII", mixed)) if "tokenizer" in parts else ():
        t_old = best(lambda d=data: [old_split(x) for x in d])
        t_new = best(lambda d=data: [split_words(x) for x in d])
        print(f"  {name:10s} before {t_old:.3f}  after {t_new:.3f}  ratio {t_new / t_old:.2f}",
              flush=True)

    space = default_space(progress=False)
    m = dptext.mechanism("custext", epsilon=2.0, space=space).fit()
    t = m._tables
    # tables in the old layout (member-order cumulative sums) for the comparison
    members, set_of = t["members"], t["set_of"]
    probs = np.zeros(t["out"].shape)
    realized = np.exp(dptext.exact_sampling.realized_log_probabilities(t))
    col = np.empty(len(space), dtype=np.int64)
    valid = members >= 0
    col[members[valid]] = np.nonzero(valid)[1]
    rr = np.broadcast_to(np.arange(len(space))[:, None], t["out"].shape)
    live = t["out"] >= 0
    probs[rr[live], col[t["out"][live]]] = realized[live]
    cum_old = np.cumsum(probs, 1)
    rows = np.array([space.lookup(w) for w in text.split()], dtype=np.int64)
    rows = rows[rows >= 0]
    gen = np.random.default_rng(0)
    t_old = t_new = 0.0
    for _ in range(3):  # alternate, keep each one's best
        t_old = min(t_old or 1e9, best(lambda: old_custext_sample(cum_old, members, set_of,
                                                                   rows, gen)))
        t_new = min(t_new or 1e9, best(lambda: m._sample(rows, gen)))
    print(f"custext sampling of {len(rows)} tokens, s: grid inverse CDF {t_old:.4f}, exact "
          f"{t_new:.4f} (ratio {t_new / t_old:.2f}); {len(rows) / t_new:,.0f} tokens/s",
          flush=True)

    print("privatize_batch tokens/s (whole pipeline), PCG64 vs ChaCha20 (rng='secure')",
          flush=True)
    for name, eps in (("custext", 2.0), ("laplace", 10.0)) if "pipeline" in parts else ():
        mech = m if name == "custext" else dptext.mechanism(name, epsilon=eps, space=space).fit()
        part = lines if name == "custext" else lines[: len(lines) // 20]  # laplace: ~5k tokens
        n_tok = sum(r.report.tokens_total for r in mech.privatize_batch(part, rng=0))
        t_pcg = best(lambda mm=mech, x=part: mm.privatize_batch(x, rng=np.random.default_rng(1)),
                     3)
        t_sec = best(lambda mm=mech, x=part: mm.privatize_batch(x, rng=secure_generator()), 3)
        print(f"  {name:8s} PCG64 {n_tok / t_pcg:10,.0f}  ChaCha20 {n_tok / t_sec:10,.0f}  "
              f"(cost {100 * (t_sec / t_pcg - 1):+.0f}%)", flush=True)

    if "raw" not in parts:
        return
    from randomgen import AESCounter

    print("raw generator throughput, million draws/s (10M doubles / normals)")
    for name, make in (("PCG64", lambda: np.random.default_rng(0)),
                       ("ChaCha20", secure_generator),
                       ("AES-CTR", lambda: np.random.Generator(AESCounter()))):
        g = make()
        r = best(lambda gg=g: gg.random(10_000_000), 3)
        n = best(lambda gg=g: gg.standard_normal(10_000_000), 3)
        print(f"  {name:9s} random {10 / r:7.1f}  standard_normal {10 / n:7.1f}")


if __name__ == "__main__":
    main()
