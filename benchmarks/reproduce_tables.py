"""The paper's Tables 1 and 2 from a `streamk bench` CSV: each of our variants against our DP of
the same tile, cuBLAS on the raw and on the padded shapes, cuBLAS above the compute-intensity
threshold, and the oracle of our DP tiles (the best data-parallel variant in the CSV, per shape).

    python benchmarks/reproduce_tables.py benchmarks/data/bench_h100_f16_tables.csv.gz \
        --dp "data-parallel#128x128" --variants "two-tile-sk-dp#128x128;stream-k#128x128;auto#128x128;auto"

Ratios are time_other / time_ours (> 1: ours faster): geomean, and min / max over the shapes.
"""

from __future__ import annotations

import argparse
import csv
import math

from streamk.plot.csvfile import open_text

BIG = (8192, 8192, 8192)
COMPUTE_BOUND = 400.0  # flop per byte, the threshold `streamk bench` reports by


def _rows(path: str) -> list[dict]:
    out = []
    for r in csv.DictReader(open_text(path)):
        if (int(r["m"]), int(r["n"]), int(r["k"])) != BIG:
            out.append(r)
    return out


def _stat(ratios: list[float]) -> str:
    geo = math.exp(sum(map(math.log, ratios)) / len(ratios))
    return f"{geo:.2f} ({min(ratios):.2f}-{max(ratios):.2f})"


def table(path: str, dp: str, variants: list[str]) -> str:
    rows = _rows(path)
    dps = [c for c in rows[0] if c.startswith("data-parallel") and c + "_grid" in rows[0]]
    bound = [r for r in rows if float(r["intensity"]) > COMPUTE_BOUND]
    t = lambda r, c: float(r[c])  # noqa: E731
    head = (f"| ours ({len(rows)} shapes, {rows[0]['dtype']}) | vs our DP {dp} | vs cuBLAS raw | vs cuBLAS padded "
            f"| vs cuBLAS padded, > {COMPUTE_BOUND:.0f} flop/B ({len(bound)}) | vs oracle of our DP tiles ({len(dps)}) |")
    lines = [head, "|" + " --- |" * 6]
    for v in variants:
        cells = [_stat([t(r, dp) / t(r, v) for r in rows]),
                 _stat([t(r, "cublas_raw") / t(r, v) for r in rows]),
                 _stat([t(r, "cublas_padded") / t(r, v) for r in rows]),
                 _stat([t(r, "cublas_padded") / t(r, v) for r in bound]) if bound else "-",
                 _stat([min(t(r, d) for d in dps) / t(r, v) for r in rows])]
        lines.append(f"| {v} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("csv")
    p.add_argument("--dp", default="data-parallel", help="the variant that is our DP of the same tile")
    p.add_argument("--variants", required=True, help="';'-separated columns of the CSV to tabulate")
    args = p.parse_args()
    print(table(args.csv, args.dp, args.variants.split(";")))


if __name__ == "__main__":
    main()
