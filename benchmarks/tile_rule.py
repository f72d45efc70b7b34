"""Score auto's tile rule (streamk.gpu.select.choose_tile, as it is in this checkout) on bench CSVs
that timed auto under an earlier rule beside the same auto forced onto other tiles, offline.

Each CSV comes from `streamk bench --decomps "auto;auto#128x128x64;auto#128x256x64"` run on the
checkout whose rule is the baseline; a shape whose tile the current rule changes is scored by the
forced column of that tile (auto's schedule on a given tile is the same whichever rule named it).

    python benchmarks/tile_rule.py benchmarks/data/tiles_h100_f16_v27_seed7.csv [...] [--target h100]

Prints per CSV: shapes, how many the rule changes, the geomean speedup over the baseline on all
shapes and the worst changed shapes, and auto against padded / raw cuBLAS before and after.
"""

from __future__ import annotations

import argparse
import csv
import math

from streamk.gpu.decide.tiles import choose_tile
from streamk.shapes import GemmShape
from streamk.target import PRESETS


def geomean(xs: list[float]) -> float:
    return math.exp(sum(map(math.log, xs)) / len(xs)) if xs else float("nan")


def score(path: str, target: str, worst: int) -> None:
    rows = [r for r in csv.DictReader(open(path)) if r["auto"] and r["m"] != "8192"]
    gain, padded, raw, changed = [], ([], []), ([], []), []
    for r in rows:
        shape = GemmShape(int(r["m"]), int(r["n"]), int(r["k"]))
        tile = str(choose_tile(shape, r["dtype"], PRESETS[target]))
        before = float(r["auto"])
        column = f"auto#{tile}"
        if tile == r["auto_tile"]:
            after = before
        elif r.get(column):
            after = float(r[column])
        else:
            raise SystemExit(f"{path}: {shape} now takes {tile}, which the CSV did not time (no {column} column)")
        gain.append(before / after)
        for pair, key in ((padded, "cublas_padded"), (raw, "cublas_raw")):
            pair[0].append(float(r[key]) / before)
            pair[1].append(float(r[key]) / after)
        if tile != r["auto_tile"]:
            changed.append((before / after, f"{shape.m}x{shape.n}x{shape.k}", r["auto_tile"], tile))
    changed.sort()
    print(f"{path}: {len(rows)} shapes, {len(changed)} change tile; speedup geo {geomean(gain):.3f} "
          f"(min {min(gain):.2f}); vs padded cuBLAS {geomean(padded[0]):.3f} -> {geomean(padded[1]):.3f}, "
          f"vs raw {geomean(raw[0]):.3f} -> {geomean(raw[1]):.3f}")
    for ratio, shape, old, new in changed[:worst]:
        print(f"    {shape:>16} {old} -> {new}: {ratio:.2f}x")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("csv", nargs="+", help="bench CSVs with auto, auto#128x128x64 and auto#128x256x64 columns")
    ap.add_argument("--target", default="h100", choices=sorted(PRESETS), help="the Target the rule runs for")
    ap.add_argument("--worst", type=int, default=5, help="changed shapes to list, slowest first (default 5)")
    args = ap.parse_args()
    for path in args.csv:
        score(path, args.target, args.worst)


if __name__ == "__main__":
    main()
