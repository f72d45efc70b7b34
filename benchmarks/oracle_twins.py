"""auto's launch against a named variant's launch of the very same Schedule, from fidelity oracles'
measured rows (issue 43): no GPU.

``fingerprint`` leaves out the tile order and the clusters, so where auto ran data-parallel or a split
its row and a named row (data-parallel#TILE, fixed-split#TILE, ...) can hold one Schedule: auto's in
grouped-8 or 2x2 order with clusters sharing B (or A and B), the named one row-major and plain. Each
such pair timed apart (no same_as between them) is listed with auto's launch as the rules before
launches.plain_partial_wave had it (the Target's switch off), and grouped by the launch's clusters,
whether A's or B's rows straddle 32-byte sectors and the wave's fill; --derive names the oracles a
rule is read off, the others are held out.

    PYTHONPATH=. python benchmarks/oracle_twins.py benchmarks/data/fid_h200_seed{4285,4272,4267,4265,4258}.csv \\
        --derive 4285 4272
"""

from __future__ import annotations

import argparse
import csv
import dataclasses
import math
import re
from collections import defaultdict

from streamk.calibrate.fidelity import fingerprint
from streamk.gpu.decide.launches import PLAIN_MAX_WAVE, STRADDLE_BYTES
from streamk.plot.csvfile import open_text
from streamk.shapes import ITEMSIZE, GemmShape
from streamk.target import preset

from oracle_auto import decided

KINDS = {1: "alone", 2: "pairs", 4: "quads"}


def geomean(values: list[float]) -> float:
    return math.exp(sum(map(math.log, values)) / len(values)) if values else math.nan


def twins(path: str, target) -> tuple[list[dict], int]:
    """One pair a shape (auto's row, a named row of its Schedule timed apart; data-parallel first)
    and the count of pairs whose auto launch could not be rebuilt."""
    shapes: dict[tuple[int, int, int], dict[str, dict]] = defaultdict(dict)
    with open_text(path) as f:
        for r in csv.DictReader(f):
            if r["measured_us"] and not r["error"]:
                shapes[(int(r["m"]), int(r["n"]), int(r["k"]))][r["variant"]] = r
    out, lost = [], 0
    for (m, n, k), rows in shapes.items():
        auto = rows.get("auto")
        if auto is None:
            continue
        def root(v: str) -> str:  # the row whose timing ``v`` shares (same_as names the first)
            return rows[v]["same_as"] if rows[v]["same_as"] in rows else v

        launch = (auto["fingerprint"], auto["tile"])
        named = sorted((not v.startswith("data-parallel"), v) for v, r in rows.items()
                       if not v.startswith("auto") and (r["fingerprint"], r["tile"]) == launch
                       and root(v) != root("auto"))
        if not named:
            continue
        shape = GemmShape(m, n, k)
        s, cluster = decided(f"auto#{auto['tile']}", shape, auto["dtype"], target)
        if fingerprint(s) != auto["fingerprint"]:
            lost += 1
            continue
        size = ITEMSIZE[auto["dtype"]]
        twin = rows[named[0][1]]
        out.append({"shape": (m, n, k), "twin": twin["variant"], "tile": auto["tile"], "grid": s.grid,
                    "tiles": (s.problem.tiles_m, s.problem.tiles_n), "iters": s.problem.iters_per_tile,
                    "order": s.tile_order, "kind": KINDS[cluster],
                    "straddle": (k * size) % STRADDLE_BYTES != 0 or (n * size) % STRADDLE_BYTES != 0,
                    "ratio": float(auto["measured_us"]) / float(twin["measured_us"])})
    return out, lost


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("csvs", nargs="+", help="fidelity oracle CSVs (streamk fidelity --out)")
    ap.add_argument("--target", default="h200")
    ap.add_argument("--derive", nargs="*", default=[],
                    help="the seeds (numbers in the file names) a rule is read off")
    ap.add_argument("--list", action="store_true", help="print every pair")
    args = ap.parse_args()
    target = dataclasses.replace(preset(args.target), plain_partial_waves=False)  # auto's launch as measured
    pairs = []
    for path in args.csvs:
        seed = (re.findall(r"seed(\d+)", path) or [path])[-1]
        found, lost = twins(path, target)
        print(f"{path}: {len(found)} pairs, auto / twin time geomean {geomean([p['ratio'] for p in found]):.3f}, "
              f"{sum(p['ratio'] > 1.05 for p in found)} over 1.05x; {lost} whose auto launch is not rebuilt")
        pairs += [dict(p, seed=seed, derive=seed in args.derive) for p in found]
    if args.list:
        for p in sorted(pairs, key=lambda p: -p["ratio"]):
            m, n, k = p["shape"]
            print(f"  {p['seed']} {m}x{n}x{k} {p['tile']} tiles {p['tiles'][0]}x{p['tiles'][1]} iters {p['iters']} "
                  f"grid {p['grid']} {p['order']} {p['kind']} {'straddle' if p['straddle'] else 'aligned'} "
                  f"{p['ratio']:.3f}x {p['twin']}")
    print(f"auto / twin time by clusters, rows and fill (<= {PLAIN_MAX_WAVE} of a wave or more); derive | held out")
    for kind in KINDS.values():
        for straddle in (False, True):
            for short in (True, False):
                sel = [p for p in pairs if p["kind"] == kind and p["straddle"] == straddle
                       and (p["grid"] <= PLAIN_MAX_WAVE * target.sms) == short]
                sides = [[p["ratio"] for p in sel if p["derive"] == d] for d in (True, False)]
                if sel:
                    text = " | ".join(f"{len(v):3d} {geomean(v):.3f} ({min(v, default=math.nan):.3f}-"
                                      f"{max(v, default=math.nan):.3f})" for v in sides)
                    print(f"  {kind:5s} {'straddle' if straddle else 'aligned ':8s} {'short' if short else 'fuller'}: {text}")


if __name__ == "__main__":
    main()
