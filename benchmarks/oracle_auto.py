"""auto as the code decides now, scored against a merged oracle (benchmarks/merge_oracle.py), per
half of the shapes and over all (issue 43): no GPU.

Each shape's auto Schedule is rebuilt and matched by launch (fingerprint and tile) to the oracle's
``auto`` row or to a candidate row; its measured time over the shape's best of every row is the
score. A shape whose rebuilt auto matches no row is counted, not scored. Halves: the parity of the
first byte of sha1("MxNxK"), so that a rule derived on one half is judged on the other.

    python benchmarks/oracle_auto.py /tmp/merged.csv --target h200 [--list]
"""

from __future__ import annotations

import argparse
import math
from collections import defaultdict

import numpy as np

from streamk.calibrate.fidelity import fingerprint, read_csv, resolve
from streamk.calibrate.selection import shape_half
from streamk.shapes import GemmShape
from streamk.target import preset

WITHIN = 1.05


def summary(ratios: list[float]) -> str:
    r = np.array(ratios)
    return (f"{100 * np.mean(r <= WITHIN):5.1f}% within 5% of the best, worst {r.max():.3f}, "
            f"geomean {math.exp(np.mean(np.log(r))):.4f} ({len(r)} shapes)")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("csv", help="a merged oracle CSV (measured rows of auto and the candidates)")
    ap.add_argument("--target", default="h200")
    ap.add_argument("--list", action="store_true", help="print every shape auto misses by more than 5%%")
    args = ap.parse_args()
    target = preset(args.target)
    shapes: dict[tuple[int, int, int], list[dict]] = defaultdict(list)
    for r in read_csv(args.csv):
        if not r.get("error") and r.get("measured_us") and float(r["measured_us"]) > 0:
            shapes[(int(r["m"]), int(r["n"]), int(r["k"]))].append(r)
    ratios: dict[int, list[float]] = {0: [], 1: []}
    unmatched = 0
    for (m, n, k), rows in sorted(shapes.items()):
        dtype = rows[0].get("dtype") or "float16"
        s = resolve("auto", GemmShape(m, n, k), dtype, target)
        launch = (fingerprint(s), f"{s.tile.bm}x{s.tile.bn}x{s.tile.bk}")
        same = sorted((r["variant"] != "auto", r["variant"], float(r["measured_us"])) for r in rows
                      if (r["fingerprint"], r["tile"]) == launch)
        if not same:
            unmatched += 1
            continue
        best = min(float(r["measured_us"]) for r in rows)
        ratio = same[0][2] / best
        ratios[shape_half(m, n, k)].append(ratio)
        if args.list and ratio > WITHIN:
            print(f"{m}x{n}x{k}: auto runs {same[0][1]} ({s.decomposition} on {launch[1]}, grid {s.grid}) "
                  f"{ratio:.3f}x the best")
    for h in (0, 1):
        print(f"half {h}: {summary(ratios[h])}")
    print(f"all:    {summary(ratios[0] + ratios[1])}; {unmatched} shapes whose auto matches no row")


if __name__ == "__main__":
    main()
