"""auto as the code decides now, scored against a merged oracle (benchmarks/merge_oracle.py), per
half of the shapes and over all (issue 43): no GPU.

Each shape's auto Schedule is rebuilt and matched by launch (fingerprint and tile) to the oracle's
``auto`` row or to a candidate row; its measured time over the shape's best of every row is the
score. A shape whose rebuilt auto matches no row is counted, not scored. Halves: the parity of the
first byte of sha1("MxNxK"), so that a rule derived on one half is judged on the other.

With --launch a row counts only where it ran auto's very launch: the fingerprint leaves out the tile
order and the clusters, so auto's grouped, clustered launch and a named variant's row-major, plain
one of one Schedule match alike without it. A named row's launch is rebuilt (decide() on contiguous
operands); the auto row's is taken to be auto's now unless a named row of that launch was timed apart
from it (then it ran another) or it shares a named row's time (then it ran that one).

    python benchmarks/oracle_auto.py /tmp/merged.csv --target h200 [--list] [--launch]
"""

from __future__ import annotations

import argparse
import math
from collections import defaultdict

import numpy as np

from streamk.calibrate.fidelity import fingerprint, label, read_csv, resolve
from streamk.calibrate.selection import shape_half
from streamk.shapes import GemmShape
from streamk.target import preset

WITHIN = 1.05


def summary(ratios: list[float]) -> str:
    r = np.array(ratios)
    return (f"{100 * np.mean(r <= WITHIN):5.1f}% within 5% of the best, worst {r.max():.3f}, "
            f"geomean {math.exp(np.mean(np.log(r))):.4f} ({len(r)} shapes)")


def decided(text: str, shape: GemmShape, dtype: str, target) -> tuple:
    """(Schedule, CTAs a cluster) of the main kernel ``streamk fidelity`` launches for variant ``text``
    on contiguous row-major operands of ``shape`` (1: no cluster shares anything)."""
    from streamk.bench.variants import variant
    from streamk.dispatch import waits_only_backward
    from streamk.gpu.clusters import launch_clusters
    from streamk.gpu.decide import decide
    from streamk.gpu.decide.operands import Operand
    from streamk.gpu.request import Tuning, request
    from streamk.gpu.runtime.bind import operand_params
    from streamk.gpu.table import build_table

    m, n, k = shape.m, shape.n, shape.k
    a = Operand(None, "cuda", 1 << 20, (m, k), (k, 1), dtype)
    b = Operand(None, "cuda", 1 << 30, (k, n), (n, 1), dtype)
    c = Operand(None, "cuda", 2 << 30, (m, n), (n, 1), "float64" if dtype == "float64" else "float32")
    args = variant(text, lambda: target.sms)
    args.pop("_large_rungs", None)
    tuning = args.pop("_tuning", Tuning())
    req = request(args.pop("schedule"), args.pop("fixup", None), args.pop("tile", None), args.pop("machine", None),
                  args, tuning)
    d = decide(a, b, c, target, req)
    s = d.schedule
    found = launch_clusters(build_table(d.plan), d.spec, d.cluster, not waits_only_backward(d.plan),
                            operand_params(d).ldb * d.spec.itemsize, s.problem.iters_per_tile)
    return s, found[0][0] if found else 1


def launch_of(text: str, shape: GemmShape, dtype: str, target) -> tuple[str, int]:
    """(tile order, CTAs a cluster) of variant ``text``'s launch (``decided``)."""
    s, cluster = decided(text, shape, dtype, target)
    return s.tile_order, cluster


def launch_rows(rows: list[dict], launch: tuple, own: tuple[str, int], shape: GemmShape, dtype: str, target
                ) -> list[tuple]:
    """(variant != auto, variant, us) of ``rows`` that ran ``launch`` (fingerprint, tile) in auto's
    own order and clusters ``own`` (module doc). auto's rows (auto, auto#TILE) ran the rules of the
    oracle's commit, so their launch is read off the timing: that of a named row timed with them
    (same_as), else, timed apart from every named row, ``own`` unless a named row ran ``own``."""
    same = {r["variant"]: r for r in rows if (r["fingerprint"], r["tile"]) == launch}
    groups: dict[str, list[str]] = defaultdict(list)  # timing root -> the rows that share its time
    for v in same:
        root = v
        while same[root].get("same_as") in same:
            root = same[root]["same_as"]
        groups[root].append(v)
    named = {v: launch_of(v, shape, dtype, target) for v in same if label(v) != "auto"}
    out = []
    for members in groups.values():
        ran = next((named[v] for v in members if v in named), None)
        if ran is None and own not in named.values():
            ran = own  # auto's rows alone: the launch no named row ran, taken to be auto's own
        if ran == own:
            out += [(v != "auto", v, float(same[v]["measured_us"])) for v in members]
    return sorted(out)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("csv", help="a merged oracle CSV (measured rows of auto and the candidates)")
    ap.add_argument("--target", default="h200")
    ap.add_argument("--list", action="store_true", help="print every shape auto misses by more than 5%%")
    ap.add_argument("--launch", action="store_true",
                    help="match rows by auto's whole launch: its tile order and clusters too (module doc)")
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
        if args.launch:
            own = launch_of("auto", GemmShape(m, n, k), dtype, target)
            same = launch_rows(rows, launch, own, GemmShape(m, n, k), dtype, target)
        else:
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
