"""Every measured fidelity CSV predicted again offline, with and without calibrated terms: the
before / after table a model change is judged by (LOG.md v41d).

    python benchmarks/fidelity_table.py                        # every CSV of benchmarks/data, without c_row32
    python benchmarks/fidelity_table.py --without c_row32,c_l2 benchmarks/data/fidelity_h200_sm90_v31.csv.gz

"after" is each CSV's Target calibration as shipped (``streamk fidelity --from-csv`` predicts the
same); "before" is that calibration with the ``--without`` terms dropped (each prices as 0). The
Target is the GPU the file name says (h200, else h100), the dtype the CSV's rows record (else
float64 where the name says f64, else float16). Printed per CSV and model: runs, Spearman over all
runs, the median Spearman within a shape, median and p90 |error|, the share of shapes whose
predicted-best variant runs within 5% of the measured best, and the signed median error of the
data-parallel launches below one wave of at least ``--deep`` MAC iterations a tile (the residual
v41d set out to close; "-" where a run has none) and of the data-parallel launches of more than
one wave whose last wave runs at most a quarter of the slots ("DP last", the residual v43 set out to
close). ``--without ""`` prints the shipped model only (a model change is then judged by running
this script against two checkouts: ``PYTHONPATH=<checkout>``).
"""

from __future__ import annotations

import argparse
import math
from dataclasses import replace
from pathlib import Path

import numpy as np

from streamk.calibrate.fidelity import label, predict_rows, read_csv, summary
from streamk.calibrate.selection import selection
from streamk.shapes import TileShape
from streamk.target import Target, preset, with_calibration

DATA = Path(__file__).parent / "data"
PATTERNS = ("fidelity_*.csv", "fidelity_*.csv.gz", "oracle_*.csv", "oracle_*.csv.gz")  # what fidelity --from-csv reads


def target_of(path: Path) -> Target:
    return preset("h200" if "h200" in path.name else "h100")


def dtype_of(path: Path, rows: list[dict]) -> str:
    recorded = {r.get("dtype") for r in rows} - {None, ""}
    if recorded:
        return recorded.pop()
    return "float64" if "f64" in path.name else "float16"


def without(target: Target, terms: set[str]) -> Target:
    """``target`` with ``terms`` dropped from every kernel's calibration."""
    cals = tuple(replace(t.calibration, terms=tuple(x for x in t.calibration.terms if x.name not in terms))
                 for t in target.tiles if t.calibration is not None)
    return with_calibration(target, cals)


def dp_partial_wave(rows: list[dict], sms: int, deep: int) -> float:
    """Signed median error of the data-parallel launches of fewer CTAs than SMs, ``deep`` or more
    MAC iterations a tile."""
    errs = []
    for r in rows:
        if label(r["variant"]) != "data-parallel" or not math.isfinite(float(r["predicted_us"])):
            continue
        tile = [int(x) for x in str(r.get("tile") or r["variant"].partition("#")[2]).split("x")]
        m, n, k = int(r["m"]), int(r["n"]), int(r["k"])
        if int(r["grid"]) < sms and -(-k // tile[2]) >= deep and float(r["measured_us"]) > 0:
            errs.append(float(r["predicted_us"]) / float(r["measured_us"]) - 1)
    return float(np.median(errs)) if errs else math.nan


def dp_small_last_wave(rows: list[dict], target: Target, dtype: str, fill: float = 0.25) -> float:
    """Signed median error of the data-parallel launches of more than one wave whose last wave runs
    at most ``fill`` of the slots (SMs x the kernel's residency at that grid)."""
    errs = []
    for r in rows:
        if label(r["variant"]) != "data-parallel" or not math.isfinite(float(r["predicted_us"])):
            continue
        tile = [int(x) for x in str(r.get("tile") or r["variant"].partition("#")[2]).split("x")]
        cal = target.kernel(dtype, TileShape(*tile)).calibration
        grid = int(r["grid"])
        slots = target.sms * (cal.ctas_per_sm if cal is not None and grid > target.sms else 1)
        last = grid - (math.ceil(grid / slots) - 1) * slots
        if grid > slots and last <= fill * slots and float(r["measured_us"]) > 0:
            errs.append(float(r["predicted_us"]) / float(r["measured_us"]) - 1)
    return float(np.median(errs)) if errs else math.nan


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("csv", nargs="*", type=Path, help="fidelity CSVs (default: every one in benchmarks/data)")
    ap.add_argument("--without", default="c_row32", metavar="TERM[,TERM]", help="the terms 'before' leaves out")
    ap.add_argument("--deep", type=int, default=24, help="MAC iterations a tile of the DP residual's launches")
    args = ap.parse_args()
    paths = args.csv or sorted(p for pattern in PATTERNS for p in DATA.glob(pattern))
    terms = set(args.without.split(",")) - {""}
    print(f"before: the shipped calibration without {', '.join(sorted(terms))}; after: as shipped" if terms else
          "as shipped")
    print(f"{'csv':<40} {'model':<6} {'runs':>5} {'Spearman':>8} {'within':>7} {'median':>7} {'p90':>7} "
          f"{'best<=5%':>8} {'DP<wave':>8} {'DP last':>8}")
    for path in paths:
        rows = [r for r in read_csv(path) if not r.get("error") and float(r["measured_us"] or 0) > 0]
        target, dtype = target_of(path), dtype_of(path, rows)
        for name, t in ((("before", without(target, terms)),) if terms else ()) + (("after", target),):
            predicted = predict_rows(rows, t, dtype)
            s, sel = summary(predicted), selection(predicted)["overall"]["predicted_best"]
            dp = dp_partial_wave(predicted, target.sms, args.deep)
            last = dp_small_last_wave(predicted, target, dtype)
            pct = lambda x: f"{100 * x:.1f}%" if math.isfinite(x) else "-"  # noqa: E731
            print(f"{path.stem:<40} {name:<6} {s['runs']:>5} {s['spearman']:>8.4f} "
                  f"{s['within_shape_spearman_median']:>7.4f} {pct(s['median_abs_rel_err']):>7} "
                  f"{pct(s['p90_abs_rel_err']):>7} {pct(sel['within_5pct']):>8} {pct(dp):>8} {pct(last):>8}",
                  flush=True)


if __name__ == "__main__":
    main()
