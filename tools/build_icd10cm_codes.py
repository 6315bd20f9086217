"""Build src/dptext/data/icd10cm_codes.txt.gz from the simple-icd-10-cm package.

simple-icd-10-cm 1.5.0 (Stefano Travasci, MIT licence) ships the ICD-10-CM classification of
the US National Center for Health Statistics (CMS/NCHS, a US government work in the public
domain). dptext ships only the codes (the chapters and blocks left out: categories and
subcategories with their dot, "I48.91"), one a line, so that a diagnosis code in a note is kept
as clinical content (dptext.detect.clinical) without importing the package at run time (its
import reads the whole classification, about 7 s).

    .venv/bin/pip install -c constraints.txt simple-icd-10-cm
    .venv/bin/python tools/build_icd10cm_codes.py
"""

from __future__ import annotations

import gzip
import sys
from importlib import metadata
from pathlib import Path

OUT = Path(__file__).resolve().parents[1] / "src/dptext/data/icd10cm_codes.txt.gz"


def main() -> int:
    try:
        import simple_icd_10_cm as cm
    except ImportError:
        print("simple-icd-10-cm is not installed: .venv/bin/pip install -c constraints.txt "
              "simple-icd-10-cm", file=sys.stderr)
        return 1
    codes = sorted(c for c in cm.get_all_codes(True) if cm.is_category_or_subcategory(c))
    head = f"# ICD-10-CM codes from simple-icd-10-cm {metadata.version('simple-icd-10-cm')} (MIT)"
    OUT.write_bytes(gzip.compress(("\n".join([head, *codes]) + "\n").encode(), mtime=0))
    print(f"{OUT}: {len(codes):,} codes, {OUT.stat().st_size:,} bytes")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
