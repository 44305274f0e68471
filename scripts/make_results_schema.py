#!/usr/bin/env python
"""Write ``gisnet/data/results_schema.json`` from ``docs/results.md``.

Usage: ``python scripts/make_results_schema.py [--check]``

docs/results.md is the human reference of every result layer and column, and
the source; the JSON is the package data :mod:`gisnet.output.metadata` reads at
run time (layer descriptions, column labels, units and meanings in the
GeoPackage, the workbook and PostGIS comments), so an installed gisnet needs no
docs/ folder. Run this after editing the document; ``--check`` only compares
(exit 1 when the committed JSON is out of date), as
``tests/test_gpkg_metadata.py`` does.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from results_doc import RESULTS_DOC, SCHEMA_JSON, schema_json

from gisnet.output import atomic_write_text


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description="Write gisnet/data/results_schema.json from "
                                            "docs/results.md.")
    p.add_argument("--doc", type=Path, default=RESULTS_DOC, help="the results document")
    p.add_argument("--out", type=Path, default=SCHEMA_JSON, help="the JSON to write")
    p.add_argument("--check", action="store_true",
                   help="write nothing; exit 1 when --out differs from what --doc makes")
    a = p.parse_args(argv)
    text = schema_json(a.doc.read_text(encoding="utf-8"))
    old = a.out.read_text(encoding="utf-8") if a.out.is_file() else None
    if a.check:
        if old != text:
            print(f"{a.out} is out of date: run python scripts/make_results_schema.py",
                  file=sys.stderr)
            return 1
        print(f"{a.out} is current")
        return 0
    if old == text:
        print(f"{a.out} is current")
        return 0
    atomic_write_text(a.out, text, "results schema JSON")
    print(f"wrote {a.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
