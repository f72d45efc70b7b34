"""A fidelity CSV's residual (measured / predicted) by how many CTAs run at once against the SMs,
per tile (issue 43 item 2, LOG.md v49: a CTA sharing its TPC).

    streamk fidelity --from-csv benchmarks/data/fid_h200_seed4254.csv.gz --target h200 --out /tmp/p.csv
    python benchmarks/tpc_residual.py /tmp/p.csv --target h200 [--deep 8] [--variants data-parallel]
    python benchmarks/tpc_residual.py /tmp/p.csv --halves       # each half's fidelity scores
    python benchmarks/tpc_residual.py benchmarks/data/fid_h200_seed4254.csv.gz --fit-dp 128x128x64,128x256x64

Classes, by the first wave's CTAs b (``min(grid, sms x residency)``; the GPU backend launches a grid
of at most ``sms`` CTAs one an SM): ``<=1/2`` (b <= sms / 2: each CTA can sit alone on its TPC, an SM
pair), ``1/2-1`` (some TPCs hold two), ``full x1`` (grid > sms on a kernel of one CTA an SM: every
TPC full for a wave at least), and on kernels of two CTAs an SM ``1-2x`` (sms < b < 2 sms) and
``full x2`` (b = 2 sms). Each cell: the signed median of measured / predicted - 1 and its runs.
"""

from __future__ import annotations

import argparse
import math

import numpy as np

from streamk.calibrate.fidelity import label, read_csv
from streamk.calibrate.selection import shape_half
from streamk.shapes import TileShape
from streamk.target import preset

TPC_GRID_MAX, TPC_GRID_STEP = 0.15, 0.005  # us: fit_dp's search (the traces' alone-vs-partnered gap is 0.08)
CLASSES = ("<=1/2", "1/2-1", "full x1", "1-2x", "full x2")


def occupancy_class(grid: int, sms: int, ctas_per_sm: int) -> str:
    """Where a launch of ``grid`` CTAs sits against ``sms`` SMs (module doc)."""
    if grid <= sms // 2:
        return "<=1/2"
    if grid <= sms:
        return "1/2-1"
    if ctas_per_sm == 1:
        return "full x1"
    return "1-2x" if grid < 2 * sms else "full x2"


def held_out(m: int, n: int, k: int) -> bool:
    """The held-out half (selection.shape_half 1; the fitting half 0, as oracle_auto.py's)."""
    return shape_half(m, n, k) == 1


def fit_dp(path: str, target_name: str, dtype: str, tiles: list[str]) -> None:
    """c_tpc of each tile by grid search (0 to TPC_GRID_MAX us, step TPC_GRID_STEP), the other terms as
    shipped: least relative squares over the fitting half's data-parallel runs; the held-out half's
    DP median |error| before and after."""
    import sys
    sys.path.insert(0, __file__.rsplit("/", 1)[0])
    from fidelity_terms import rebuild  # benchmarks/ is not a package
    from streamk.calibrate.predict import predict_from

    target = preset(target_name)
    rows = [r for r in read_csv(path) if not r.get("error") and float(r["measured_us"] or 0) > 0
            and label(r["variant"]) == "data-parallel"]
    for tile_text in tiles:
        picked = [r for r in rows if r["tile"] == tile_text]
        built = rebuild(picked, target, dtype)
        picked, schedules = [r for r, s in zip(picked, built) if s], [s for s in built if s]
        cal = target.kernel(dtype, TileShape(*(int(x) for x in tile_text.split("x")))).calibration
        shipped = {t.name: t.us for t in cal.terms}
        measured = np.array([float(r["measured_us"]) for r in picked])
        held = np.array([held_out(int(r["m"]), int(r["n"]), int(r["k"])) for r in picked])

        def predicted(c_tpc: float) -> np.ndarray:
            return np.array([predict_from(s, {**shipped, "c_tpc": c_tpc}, target.sms, cal.ctas_per_sm,
                                          l2_bytes=cal.l2_bytes, element_bytes=2) for s in schedules])

        def rms(p: np.ndarray, sel: np.ndarray) -> float:
            return float(np.sqrt(np.mean(((measured[sel] - p[sel]) / measured[sel]) ** 2)))

        grid = np.arange(0.0, TPC_GRID_MAX + 1e-9, TPC_GRID_STEP)
        preds = [predicted(float(v)) for v in grid]
        best = int(np.argmin([rms(p, ~held) for p in preds]))
        med = [float(np.median(np.abs(p[held] / measured[held] - 1))) for p in (preds[0], preds[best])]
        print(f"{tile_text}: c_tpc {grid[best]:.3f} us ({len(picked)} DP runs, {int((~held).sum())} fitted); "
              f"fitting rms {100 * rms(preds[0], ~held):.1f} -> {100 * rms(preds[best], ~held):.1f}%; held-out "
              f"rms {100 * rms(preds[0], held):.1f} -> {100 * rms(preds[best], held):.1f}%, median |error| "
              f"{100 * med[0]:.1f} -> {100 * med[1]:.1f}%")


def half_scores(path: str) -> None:
    """Per half of the shapes: median |error|, Spearman within a shape, and the predicted best of each
    tile's candidates within 5% of their measured best."""
    from streamk.calibrate.fidelity import summary
    rows = [r for r in read_csv(path) if not r.get("error") and r.get("predicted_us")
            and math.isfinite(float(r["predicted_us"])) and float(r["measured_us"]) > 0]
    for half in (False, True):
        part = [r for r in rows if held_out(int(r["m"]), int(r["n"]), int(r["k"])) == half]
        s = summary(part)
        picks = []
        for tile in sorted({r["tile"] for r in part}):
            shapes: dict[tuple, list[dict]] = {}
            for r in part:
                if r["tile"] == tile and label(r["variant"]) != "auto":
                    shapes.setdefault((r["m"], r["n"], r["k"]), []).append(r)
            ok = [float(min(v, key=lambda r: float(r["predicted_us"]))["measured_us"])
                  <= 1.05 * min(float(r["measured_us"]) for r in v) for v in shapes.values()]
            picks.append(f"{tile} {100 * np.mean(ok):.1f}%")
        print(f"{'held-out' if half else 'fitting'} half: {s['runs']} runs, |error| median "
              f"{100 * s['median_abs_rel_err']:.1f}%, p90 {100 * s['p90_abs_rel_err']:.1f}%, within-shape Spearman "
              f"{s['within_shape_spearman_median']:.4f}; predicted best within 5%: {', '.join(picks)}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("csv", nargs="+")
    ap.add_argument("--target", default="h200")
    ap.add_argument("--dtype", default="float16")
    ap.add_argument("--deep", type=int, default=0, help="only tiles of at least this many MAC iterations")
    ap.add_argument("--variants", default="", help="labels (without tile), comma-separated; default all")
    ap.add_argument("--half", choices=("all", "fit", "held"), default="all")
    ap.add_argument("--halves", action="store_true", help="print each half's fidelity scores instead")
    ap.add_argument("--fit-dp", metavar="TILE,TILE", help="fit c_tpc per tile on the fitting half's DP runs instead")
    args = ap.parse_args()
    if args.fit_dp:
        fit_dp(args.csv[0], args.target, args.dtype, args.fit_dp.split(","))
        return
    if args.halves:
        for path in args.csv:
            print(path)
            half_scores(path)
        return
    target = preset(args.target)
    keep = set(filter(None, args.variants.split(",")))
    cells: dict[tuple[str, str], list[float]] = {}
    for path in args.csv:
        for r in read_csv(path):
            if r.get("error") or not r.get("predicted_us") or not math.isfinite(float(r["predicted_us"])):
                continue
            m, n, k = int(r["m"]), int(r["n"]), int(r["k"])
            if args.half != "all" and held_out(m, n, k) != (args.half == "held"):
                continue
            if keep and label(r["variant"]) not in keep:
                continue
            tile = TileShape(*(int(x) for x in r["tile"].split("x")))
            if math.ceil(k / tile.bk) < args.deep:
                continue
            try:
                cps = target.kernel(args.dtype, tile).calibration.ctas_per_sm
            except Exception:  # a tile without a calibrated kernel: not predicted
                continue
            cls = occupancy_class(int(r["grid"]), target.sms, cps)
            ratio = float(r["measured_us"]) / float(r["predicted_us"]) - 1
            cells.setdefault((r["tile"], cls), []).append(ratio)
    tiles = sorted({t for t, _ in cells}, key=lambda t: [int(x) for x in t.split("x")])
    print(f"measured / predicted - 1, signed median (runs); {', '.join(args.csv)}; deep >= {args.deep}; "
          f"variants {args.variants or 'all'}; half {args.half}")
    print(f"{'tile':<12}" + "".join(f"{c:>16}" for c in CLASSES))
    for t in tiles:
        row = []
        for c in CLASSES:
            v = cells.get((t, c))
            row.append(f"{100 * np.median(v):+7.1f}% ({len(v):>4})" if v else "")
        print(f"{t:<12}" + "".join(f"{x:>16}" for x in row))


if __name__ == "__main__":
    main()
