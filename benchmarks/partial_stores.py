"""Fidelity runs of one kernel predicted again under chosen terms: terms fitted on some runs
(relative least squares over their runs with a partial store), scored on all (LOG.md v26d, v27e;
v26d's store_share candidate needs the simulator of commit 3f9cb44). By default the four sm90
128x128x64 runs; ``--runs`` names others, ``--halves`` splits each run into its even and odd shapes
(sorted by m, n, k) so that one run can fit on one half and be scored on the other.

    python benchmarks/partial_stores.py --fit b,d --on v24,seed11
    python benchmarks/partial_stores.py --set b=2.0 --set d=1.2
    python benchmarks/partial_stores.py --runs s11=fidelity_h100_f16_sm90_256_v27_seed11.csv.gz --halves --fit b,d --on s11-even
    python benchmarks/partial_stores.py --with-dp --fit l2_us_per_mb --on seed11,seed7 --set l2_us_per_mb=0.1

Each row's Schedule is rebuilt once per CSV (``fidelity_terms.rebuild``, fingerprints checked) and
cached under ``--cache``; "before" is the shipped calibration, "after" it with the fitted or set
terms. Printed per CSV: Spearman, median within-shape Spearman, median and p90 |error|, and each
variant's signed median error.
"""

from __future__ import annotations

import argparse
import math
import pickle
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import numpy as np

from fidelity_terms import odd_rows, rebuild, scored
from streamk.calibrate.fidelity import read_csv
from streamk.calibrate.predict import predict_from
from streamk.shapes import ITEMSIZE
from streamk.target import preset

DATA = Path(__file__).parent / "data"
RUNS = {"v24": "fidelity_h100_f16_sm90_128_v24.csv.gz", "seed11": "fidelity_h100_f16_sm90_128_v26_seed11.csv.gz",
        "seed7": "fidelity_h100_f16_sm90_128_v26_seed7.csv.gz", "seed13": "fidelity_h100_f16_sm90_128_v26_seed13.csv.gz"}
STEP = 1e-2  # finite-difference step (us): predictions are piecewise linear in each term


def load(csv_name: str, cache: Path, dtype: str = "float16") -> tuple[list[dict], list]:
    """The CSV's usable rows and their rebuilt Schedules (cached)."""
    path = cache / f"{Path(csv_name).stem}.pkl"
    if path.exists():
        return pickle.loads(path.read_bytes())
    target = preset("h100")
    rows = [r for r in read_csv(DATA / csv_name) if not r.get("error") and float(r["measured_us"] or 0) > 0]
    built = rebuild(rows, target, dtype)
    out = ([r for r, s in zip(rows, built) if s], [s for s in built if s])
    path.write_bytes(pickle.dumps(out))
    return out


def halves(rows: list[dict], schedules: list) -> dict[str, tuple[list[dict], list]]:
    """The runs of the even and of the odd shapes (``fidelity_terms.odd_rows``)."""
    odd = odd_rows(rows)
    return {name: ([r for r, o in zip(rows, odd) if o == want], [s for s, o in zip(schedules, odd) if o == want])
            for name, want in (("even", False), ("odd", True))}


def _predict(args: tuple) -> np.ndarray:
    schedules, values, dtype = args
    cal = preset("h100").kernel(dtype, schedules[0].tile).calibration
    return np.array([predict_from(s, values, 132, cal.ctas_per_sm, l2_bytes=cal.l2_bytes,
                                  element_bytes=ITEMSIZE[dtype]) for s in schedules])


def predict(pool: ProcessPoolExecutor, schedules: list, values: dict[str, float], dtype: str,
            chunks: int = 8) -> np.ndarray:
    parts = [schedules[i::chunks] for i in range(chunks)]
    out = np.empty(len(schedules))
    for i, p in enumerate(pool.map(_predict, [(p, values, dtype) for p in parts])):
        out[i::chunks] = p
    return out


def fit(pool: ProcessPoolExecutor, schedules: list, measured: np.ndarray, values: dict[str, float],
        terms: list[str], dtype: str) -> tuple[dict[str, float], dict[str, float]]:
    """Gauss-Newton on relative error, the terms kept >= 0; their values and standard errors."""
    w, theta = 1.0 / measured, np.array([values.get(t, 0.0) for t in terms])
    for it in range(3):
        cur = dict(values, **dict(zip(terms, theta)))
        base = predict(pool, schedules, cur, dtype)
        jac = np.stack([(predict(pool, schedules, dict(cur, **{t: cur[t] + STEP}), dtype) - base) / STEP for t in terms], 1)
        step = np.linalg.lstsq(w[:, None] * jac, w * (measured - base), rcond=None)[0]
        theta = np.maximum(theta + step, 0.0)
        print(f"  iteration {it}: {dict(zip(terms, np.round(theta, 3)))}", flush=True)
        if np.max(np.abs(step)) < 5e-3:
            break
    cur = dict(values, **dict(zip(terms, theta)))
    resid = w * (measured - predict(pool, schedules, cur, dtype))
    cov = np.linalg.inv((w[:, None] * jac).T @ (w[:, None] * jac)) * float(resid @ resid) / (len(measured) - len(terms))
    return cur, dict(zip(terms, np.sqrt(np.diag(cov))))


def show(name: str, rows: list[dict], before: np.ndarray, after: np.ndarray) -> None:
    sb, sa = scored(rows, before), scored(rows, after)
    print(f"{name:<7} before S {sb['spearman']:.4f} W {sb['within_shape_spearman_median']:.4f} "
          f"median {100 * sb['median_abs_rel_err']:.2f}% p90 {100 * sb['p90_abs_rel_err']:.1f}% | after S "
          f"{sa['spearman']:.4f} W {sa['within_shape_spearman_median']:.4f} median "
          f"{100 * sa['median_abs_rel_err']:.2f}% p90 {100 * sa['p90_abs_rel_err']:.1f}%")
    cells = []
    for v in sb["per_variant"]:
        cells.append(f"{v} {100 * sb['per_variant'][v]['median_rel_err']:+.1f}->"
                     f"{100 * sa['per_variant'][v]['median_rel_err']:+.1f}")
    print("   " + "; ".join(cells))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--fit", default="", help="comma-separated terms fitted")
    ap.add_argument("--on", default="v24,seed11", help="the runs the fit uses")
    ap.add_argument("--set", action="append", default=[], metavar="TERM=US", help="a term's value after")
    ap.add_argument("--cache", type=Path, default=Path("/tmp/partial_stores"))
    ap.add_argument("--runs", help="NAME=CSV,... under benchmarks/data (default: the four sm90 128x128x64 runs)")
    ap.add_argument("--halves", action="store_true", help="split every run into NAME-even and NAME-odd")
    ap.add_argument("--dtype", default="float16", help="the runs' input dtype (its kernel's calibration predicts)")
    ap.add_argument("--with-dp", action="store_true", help="fit on the data-parallel runs too (terms of the mainloop)")
    args = ap.parse_args()
    args.cache.mkdir(exist_ok=True)
    runs = dict(item.split("=", 1) for item in args.runs.split(",")) if args.runs else RUNS
    data = {n: load(path, args.cache, args.dtype) for n, path in runs.items()}
    if args.halves:
        data = {f"{n}-{h}": part for n, run in data.items() for h, part in halves(*run).items()}
    cal = preset("h100").kernel(args.dtype, next(iter(data.values()))[1][0].tile).calibration
    shipped = {t.name: t.us for t in cal.terms}
    after = dict(shipped, **{k: float(v) for k, _, v in (s.partition("=") for s in args.set)})
    with ProcessPoolExecutor(2) as pool:
        if args.fit:
            on = args.on.split(",")
            # only runs with a partial store move with these terms: data-parallel's never do
            keep = [(r, s) for n in on for r, s in zip(*data[n]) 
                    if args.with_dp or not r["variant"].startswith("data-parallel")]
            schedules = [s for _, s in keep]
            measured = np.array([float(r["measured_us"]) for r, _ in keep])
            after, se = fit(pool, schedules, measured, after, args.fit.split(","), args.dtype)
            print(f"fitted on {args.on}: " + ", ".join(f"{t} {after[t]:.3f} +- {se[t]:.3f}" for t in se))
        changed = {k: round(v, 4) for k, v in after.items() if shipped.get(k) != v}
        print(f"after: shipped with {changed}")
        for n, (rows, schedules) in data.items():
            show(n, rows, predict(pool, schedules, shipped, args.dtype), predict(pool, schedules, after, args.dtype))


if __name__ == "__main__":
    main()
