"""Build src/dptext/data/name_frequencies.json.gz from the names-dataset package.

names-dataset 3.3.1 (Philippe Remy, Apache-2.0; https://github.com/philipperemy/name-dataset)
ranks first names and surnames per country from 491 million Facebook profiles of 105
countries. The wheel is 56 MB; dptext ships only what its surrogates draw from: for each
country below, the names ranked there (single words in Latin letters, capitalised), in rank
order. A name's weight is Zipf's law on its rank (1/rank; the package gives ranks, not counts).

    .venv/bin/pip install -c constraints.txt names-dataset
    .venv/bin/python tools/build_name_frequencies.py
"""

from __future__ import annotations

import gzip
import json
import pickle
import re
import sys
import unicodedata
from importlib import metadata
from importlib.util import find_spec
from pathlib import Path

COUNTRIES = ("US", "GB", "CA", "IE", "IN", "ZA")  # AU and NZ: no ranks in 3.3.1
OUT = Path(__file__).resolve().parents[1] / "src/dptext/data/name_frequencies.json.gz"
_SHAPE = re.compile(r"[A-Z][a-z]+(?:['-][A-Z][a-z]+)?|(?:Mc|Mac|O')[A-Z][a-z]+")


def _latin(word: str) -> bool:
    return all(c in "'-" or "LATIN" in unicodedata.name(c, "") for c in word)


def _ok(name: str) -> bool:
    """One word in Latin letters, capitalised ("O'Brien", "Jean-Luc" and "José" too)."""
    folded = unicodedata.normalize("NFKD", name).encode("ascii", "ignore").decode()
    return " " not in name and _latin(name) and bool(_SHAPE.fullmatch(folded))


def main() -> int:
    spec = find_spec("names_dataset")
    if spec is None:
        print("names-dataset is not installed: .venv/bin/pip install -c constraints.txt "
              "names-dataset", file=sys.stderr)
        return 1
    base = Path(spec.submodule_search_locations[0]) / "v3"
    out: dict = {
        "source": f"names-dataset {metadata.version('names-dataset')} (Apache-2.0, Philippe "
                  "Remy): per-country ranks of first names and surnames from Facebook profiles",
        "weight": "Zipf on the rank: 1/rank",
        "countries": list(COUNTRIES), "first": {}, "last": {}}
    for role, file in (("first", "first_names.pkl.gz"), ("last", "last_names.pkl.gz")):
        with gzip.open(base / file) as fh:
            table = pickle.load(fh)  # noqa: S301 - the package's own data file
        for c in COUNTRIES:
            ranked = sorted((v["rank"][c], k) for k, v in table.items()
                            if v.get("rank") and c in v["rank"] and _ok(k))
            out[role][c] = [[k, r] for r, k in ranked]
        del table
    OUT.write_bytes(gzip.compress(json.dumps(out, ensure_ascii=False,
                                             separators=(",", ":")).encode(), mtime=0))
    sizes = {c: (len(out["first"][c]), len(out["last"][c])) for c in COUNTRIES}
    print(f"{OUT}: {OUT.stat().st_size:,} bytes; (first, last) per country {sizes}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
