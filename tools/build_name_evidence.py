"""Build src/dptext/data/name_evidence.txt.gz from the names-dataset package.

names-dataset 3.3.1 (Philippe Remy; MIT in its package metadata) ranks first names and
surnames per country from 491 million Facebook profiles of 105 countries; its wheel is 56 MB
and its tables take about 1 GB of memory once loaded. For detection dptext ships only a
compact derivative: every one-word name in Latin letters (accents kept) that ranks within
the first RANK first names or surnames of at least one of the 105 countries, case-folded,
with its best rank and whether it is a first name (f), a surname (l) or both (fl):
``name<TAB>rank<TAB>f|l|fl``, one a line. The detectors (dptext.detect.names) read it once per
process; a word on it is evidence of a name, weighed with its context (an ordinary English
word on it, "will", "hope", needs a name's context).

    .venv/bin/pip install -c constraints.txt names-dataset
    .venv/bin/python tools/build_name_evidence.py
"""

from __future__ import annotations

import gzip
import pickle
import re
import sys
from importlib import metadata
from importlib.util import find_spec
from pathlib import Path

RANK = 2000
OUT = Path(__file__).resolve().parents[1] / "src/dptext/data/name_evidence.txt.gz"
_LATIN = re.compile(r"[A-Za-z\u00c0-\u024f]+(?:['-][A-Za-z\u00c0-\u024f]+)?")


def main() -> int:
    spec = find_spec("names_dataset")
    if spec is None:
        print("names-dataset is not installed: .venv/bin/pip install -c constraints.txt "
              "names-dataset", file=sys.stderr)
        return 1
    base = Path(spec.submodule_search_locations[0]) / "v3"
    best: dict[str, int] = {}
    kinds: dict[str, str] = {}
    for kind, file in (("f", "first_names.pkl.gz"), ("l", "last_names.pkl.gz")):
        with gzip.open(base / file) as fh:
            table = pickle.load(fh)  # noqa: S301 - the package's own data file
        for name, info in table.items():
            ranks = info.get("rank") or {}
            if not ranks or not _LATIN.fullmatch(name) or len(name) < 2:
                continue
            rank = min(ranks.values())
            if rank > RANK:
                continue
            low = name.casefold()
            best[low] = min(best.get(low, rank), rank)
            if kind not in kinds.get(low, ""):
                kinds[low] = kinds.get(low, "") + kind
        del table
    head = (f"# names-dataset {metadata.version('names-dataset')} (MIT): one-word names in "
            f"Latin letters ranked <= {RANK} in one of 105 countries; name, best rank, f/l")
    lines = [head] + [f"{n}\t{best[n]}\t{kinds[n]}" for n in sorted(best)]
    OUT.write_bytes(gzip.compress(("\n".join(lines) + "\n").encode(), mtime=0))
    print(f"{OUT}: {len(best):,} names, {OUT.stat().st_size:,} bytes")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
