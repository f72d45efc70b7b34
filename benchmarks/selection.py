"""Grid and decomposition selection against an oracle (issue 18 item 4), from a fidelity CSV.

A fidelity run that timed, per shape, a sweep of candidates (grids and decompositions on one tile)
is the oracle: the best measured candidate of each shape. A candidate is a launch: its Schedule's
fingerprint and its tile order (the fingerprint holds tile indices, not which tile each index is:
DP in row-major and in grouped-8 order share one, and ran up to 1.4x apart). For each selector this prints the share
of shapes whose pick runs within 5% of that best, the pick's cost (its time over the best; geomean
and worst) and how many shapes it could be scored on. Selectors:
* ``auto... (as run)``: each auto row of the CSV (auto under the constants of the run's day, or
  those its variant gives, e.g. ``auto:32,12,1,8``);
* ``auto (now)``: auto's Schedule rebuilt under the Target's current constants, scored where it is
  one of the measured candidates (same fingerprint), else left out and counted;
* ``simulator``: the candidate the calibrated simulator predicts fastest (the Target's current
  calibration);
* the CUTLASS heuristics and data-parallel rows, as run.

``--deterministic`` leaves the atomic policy's runs out of the oracle and the simulator's choice:
auto picks only deterministic policies (bitwise-identical C from run to run), and on the dot
tiles, whose 2 KB output tiles make a tile's atomic add cheap, atomic Stream-K is the fastest
candidate on most shapes (LOG.md v35).

    python benchmarks/selection.py benchmarks/data/oracle_h100_f16_v19.csv.gz --target h100
"""

from __future__ import annotations

import argparse
import math
from collections import defaultdict

import numpy as np

from streamk.calibrate.fidelity import fingerprint, label, predict_rows, read_csv, resolve
from streamk.errors import StreamkError
from streamk.shapes import GemmShape
from streamk.target import preset

WITHIN = 1.05


def _score(costs: list[float], shapes: int) -> str:
    if not costs:
        return "no shape scored"
    c = np.array(costs)
    return (f"{np.mean(c <= WITHIN):6.3f} within 5% of the best ({len(c)}/{shapes} shapes), cost geomean "
            f"{math.exp(np.mean(np.log(c))):.3f}, worst {c.max():.2f}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("csv", nargs="+", help="fidelity CSVs of one tile's candidate sweep")
    ap.add_argument("--target", default="h100", help="the preset whose constants and calibration select")
    ap.add_argument("--dtype", default="float16")
    ap.add_argument("--deterministic", action="store_true",
                    help="leave the atomic policy's runs out (auto picks only deterministic policies)")
    args = ap.parse_args()
    target = preset(args.target)
    rows = [r for path in args.csv for r in read_csv(path)]
    rows = [r for r in rows if not r.get("error") and r["measured_us"] and float(r["measured_us"]) > 0]
    if args.deterministic:
        rows = [r for r in rows if r.get("fixup") != "atomic"]
    rows = predict_rows(rows, target, args.dtype)
    shapes: dict[tuple[int, int, int], list[dict]] = defaultdict(list)
    for r in rows:
        shapes[(int(r["m"]), int(r["n"]), int(r["k"]))].append(r)
    tile = rows[0]["variant"].partition("#")[2].partition("+")[0]
    picks: dict[str, list[float]] = defaultdict(list)
    unmeasured = 0
    for (m, n, k), cands in shapes.items():
        best = min(float(r["measured_us"]) for r in cands)
        by_launch = {}
        for r in cands:  # the tile order each variant ran in (today's resolution of its text)
            try:
                order = resolve(r["variant"], GemmShape(m, n, k), args.dtype, target).tile_order
            except StreamkError:
                continue
            by_launch[(r["fingerprint"], order)] = float(r["measured_us"])
        for r in cands:
            head = label(r["variant"])
            if head.partition(":")[0] in ("auto", "cutlass2-sk", "cutlass3-sk", "data-parallel"):
                picks[f"{head} (as run)"].append(float(r["measured_us"]) / best)
        predicted = [r for r in cands if math.isfinite(float(r["predicted_us"]))]
        if predicted:
            pick = min(predicted, key=lambda r: float(r["predicted_us"]))
            picks["simulator"].append(float(pick["measured_us"]) / best)
        try:
            schedule = resolve(f"auto#{tile}", GemmShape(m, n, k), args.dtype, target)
            now = (fingerprint(schedule), schedule.tile_order)
        except StreamkError:
            now = None
        if now in by_launch:
            picks["auto (now)"].append(by_launch[now] / best)
        else:
            unmeasured += 1
    print(f"{len(shapes)} shapes, {len(rows)} runs on {tile}; oracle: the best measured candidate per shape")
    autos = sorted(name for name in picks if name.startswith("auto") and name != "auto (now)")
    for name in (*autos, "auto (now)", "simulator", "cutlass2-sk (as run)", "cutlass3-sk (as run)",
                 "data-parallel (as run)"):
        print(f"{name:<28} {_score(picks[name], len(shapes))}")
    print(f"auto (now) picked a schedule no candidate ran on {unmeasured} shapes")


if __name__ == "__main__":
    main()
