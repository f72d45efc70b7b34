"""Merge a fidelity run of the candidates with a run of the real auto into one oracle CSV (issue 43).

The first CSV's rows whose variant starts with ``auto`` are dropped (an auto pinned to some tile,
not the one ``gemm()`` runs); the second CSV's ``auto`` rows are added. Every other row of the
second CSV (a repeated candidate, timed for the run-to-run noise) is left out.

    python benchmarks/merge_oracle.py benchmarks/data/fid_h200_seed4254.csv.gz \
        benchmarks/data/fid_h200_seed4254_auto.csv --out /tmp/merged.csv
"""

from __future__ import annotations

import argparse
import csv
from pathlib import Path

from streamk.plot.csvfile import open_text


def merge(candidates: Path, auto: Path) -> tuple[list[str], list[dict[str, str]]]:
    """The candidates' rows without their auto rows, then the second run's auto rows."""
    with open_text(candidates) as f:
        reader = csv.DictReader(f)
        fields = list(reader.fieldnames or [])
        rows = [r for r in reader if not r["variant"].startswith("auto")]
    with open_text(auto) as f:
        rows += [r for r in csv.DictReader(f) if r["variant"] == "auto"]
    return fields, rows


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("candidates", type=Path, help="the fidelity CSV of the candidates")
    ap.add_argument("auto", type=Path, help="the fidelity CSV whose 'auto' rows ran auto's own tile")
    ap.add_argument("--out", type=Path, required=True)
    args = ap.parse_args()
    fields, rows = merge(args.candidates, args.auto)
    with open(args.out, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=fields, extrasaction="ignore")
        w.writeheader()
        w.writerows(rows)
    print(f"{len(rows)} rows -> {args.out}")


if __name__ == "__main__":
    main()
