"""Where auto's data-parallel launch (grouped or 2x2 order, clusters sharing B or A and B) beats the
plain one (row-major, no clusters) on the same Schedule: from fidelity oracles' measured rows, by the
clusters auto's launch asks for, the waves of tiles and whether A's or B's rows straddle 32-byte L2
sectors (k or n an odd multiple of 8 two-byte elements). No GPU.

    PYTHONPATH=. python benchmarks/oracle_clusters.py benchmarks/data/fid_h200_seed42{54,58,65,67,72}.csv
"""

from __future__ import annotations

import argparse
import csv
import math
from collections import defaultdict

from streamk.gpu.catalogue import spec_for_tile
from streamk.gpu.decide.launches import cluster_shape
from streamk.gpu.decide.schedule import schedule_for
from streamk.plot.csvfile import open_text
from streamk.shapes import GemmShape
from streamk.target import preset

WAVE_BANDS = ((0, 0.5), (0.5, 0.8), (0.8, 1.01), (1.01, 3), (3, 1e9))


def geomean(values: list[float]) -> float:
    return math.exp(sum(map(math.log, values)) / len(values))


def same_schedule_pairs(path: str, target_name: str) -> list[tuple]:
    """(shape, tile, grid, clusters, straddles, auto us, plain DP us) where auto ran data-parallel."""
    target = preset(target_name)
    runs: dict[tuple[int, int, int], dict[str, dict[str, str]]] = defaultdict(dict)
    with open_text(path) as f:
        for r in csv.DictReader(f):
            if r["measured_us"]:
                runs[(int(r["m"]), int(r["n"]), int(r["k"]))][r["variant"]] = r
    pairs = []
    for shape, variants in runs.items():
        auto = variants.get("auto")
        dp = variants.get(f"data-parallel#{auto['tile']}") if auto else None
        # the same Schedule: auto's grid and prediction are plain DP's
        if dp is None or dp["grid"] != auto["grid"] or dp["predicted_us"] != auto["predicted_us"]:
            continue
        chosen = schedule_for("auto", GemmShape(*shape), auto["dtype"], target)
        if f"{chosen.tile.bm}x{chosen.tile.bn}x{chosen.tile.bk}" != auto["tile"]:
            continue
        clusters = cluster_shape(True, False, spec_for_tile(auto["dtype"], chosen.tile), chosen)
        straddles = shape[2] % 16 == 8 or shape[1] % 16 == 8
        pairs.append((shape, auto["tile"], int(auto["grid"]), clusters, straddles,
                      float(auto["measured_us"]), float(dp["measured_us"])))
    return pairs


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("csvs", nargs="+", help="fidelity oracle CSVs (streamk fidelity --out)")
    ap.add_argument("--target", default="h200", help="the preset whose auto decided (default h200)")
    ap.add_argument("--sms", type=int, default=132, help="SMs a wave fills (default 132)")
    args = ap.parse_args()
    pairs = [p for path in args.csvs for p in same_schedule_pairs(path, args.target)]
    print(f"{len(pairs)} shapes where auto ran data-parallel; auto's time / plain DP's (below 1: auto faster)")
    for clusters in sorted({p[3] for p in pairs}):
        for straddles in (True, False):
            for lo, hi in WAVE_BANDS:
                sel = [p[5] / p[6] for p in pairs if p[3] == clusters and p[4] == straddles and lo <= p[2] / args.sms < hi]
                if sel:
                    rows = "straddle" if straddles else "aligned"
                    print(f"clusters {clusters} rows {rows:8s} waves [{lo:g}, {hi:g}): {len(sel):3d} shapes "
                          f"{geomean(sel):.3f} (min {min(sel):.3f}, max {max(sel):.3f})")


if __name__ == "__main__":
    main()
