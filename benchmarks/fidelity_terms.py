"""A fidelity CSV predicted again offline under chosen term values: one term, or several jointly,
fitted on half of the shapes, both halves scored before and after (LOG.md v26).

    python benchmarks/fidelity_terms.py benchmarks/data/fidelity_h100_f16_sm90_128_v24.csv.gz --before c_l2=0
    python benchmarks/fidelity_terms.py CSV --before c_l2=0 --fit c_l2 --on data-parallel,data-parallel%132
    python benchmarks/fidelity_terms.py benchmarks/data/fidelity_h200_sm90_v31.csv.gz --target h200 \
        --before c_row32=0 --fit c_row32 --on data-parallel --max-grid 132
    python benchmarks/fidelity_terms.py benchmarks/data/fid_h200_seed4333.csv.gz --target h200 \
        --tile 64x192x64 --set c_scatter=0.1068 --fit b,d,c_free,c1 --on all
    python benchmarks/fidelity_terms.py benchmarks/data/fid_h200_decode_seed436[234].csv --target h200 \
        --tile 8x128x64 --before d_reduce=0 --set d_reduce=0 --fit d_reduce --on auto

"after" is the Target's calibration as shipped with the ``--set`` values (a term the entry lacks
included), the ``--fit`` terms (comma-separated) fitted from there where given: relative least
squares, jointly, the other terms held, each kept >= 0, on the runs of the ``--on`` variants
(``all``: every run) of the fitting half, of at most ``--max-grid`` CTAs where given. "before" is
the shipped one with ``--before`` values (a term at 0: the model without it). A CSV of several
kernels (a multi-tile fidelity run) is scored on the runs of one, ``--tile``.
Halves: shapes sorted by (m, n, k), even positions fit, odd ones are held out (``--fit-half odd``:
the other way round). Each row's Schedule is rebuilt once (``fidelity.resolve``, checked against
its fingerprint); a row today's auto no longer builds is rebuilt as auto ran before its aligned
splits (LOG.md v24). Printed: whether the column before reproduces the CSV's ``predicted_us``,
then Spearman over all runs, the median Spearman within a shape, median and p90 |error|, the share
of shapes whose predicted best runs within 5% of their measured best (among this kernel's runs;
``streamk.calibrate.selection``) and each variant's signed median error, for all runs and for the
held-out half.
"""

from __future__ import annotations

import argparse
import math
from dataclasses import replace

import numpy as np

from streamk.calibrate.fidelity import fingerprint, label, read_csv, resolve, summary
from streamk.calibrate.predict import predict_from
from streamk.calibrate.selection import selection
from streamk.errors import StreamkError
from streamk.schedule import Schedule
from streamk.shapes import ITEMSIZE, GemmShape, TileShape
from streamk.target import Target, preset

STEP_US = 1e-3  # finite-difference step of the fit: the prediction is piecewise linear in a term


def rebuild(rows: list[dict], target: Target, dtype: str) -> list[Schedule | None]:
    """Each row's Schedule as the GPU ran it (None where neither Target builds it)."""
    before_splits = replace(target, tiles=tuple(replace(t, aligned_splits=False) for t in target.tiles))
    out = []
    for r in rows:
        shape, found = GemmShape(int(r["m"]), int(r["n"]), int(r["k"])), None
        for t in (target, before_splits):
            try:
                s = resolve(r["variant"], shape, dtype, t)
            except StreamkError:
                continue
            if fingerprint(s) == r["fingerprint"]:
                found = s
                break
        out.append(found)
    return out


def odd_rows(rows: list[dict]) -> np.ndarray:
    """Per row, whether its shape sits at an odd position of the shapes sorted by (m, n, k): the
    halves a term is fitted on and held out from."""
    key = [(int(r["m"]), int(r["n"]), int(r["k"])) for r in rows]
    position = {sh: i for i, sh in enumerate(sorted(set(key)))}
    return np.array([position[sh] % 2 == 1 for sh in key], dtype=bool)


def predict(schedules: list[Schedule], values: dict[str, float], target: Target, dtype: str) -> np.ndarray:
    cal = target.kernel(dtype, schedules[0].tile).calibration
    return np.array([predict_from(s, values, target.sms, cal.ctas_per_sm, l2_bytes=cal.l2_bytes,
                                  element_bytes=ITEMSIZE[dtype]) for s in schedules])


def fit_terms(schedules: list[Schedule], measured: np.ndarray, values: dict[str, float], terms: list[str],
              target: Target, dtype: str) -> tuple[dict[str, float], dict[str, float]]:
    """``terms`` (us, each >= 0) of least relative squared error, jointly, the others held, and their
    standard errors: Gauss-Newton on forward differences, a term that would go negative held at 0
    (and reported with a standard error of 0: it is not fitted), a step that raises the error halved."""
    w, theta = 1.0 / measured, np.array([values.get(t, 0.0) for t in terms])
    at = lambda th: {**values, **dict(zip(terms, th.tolist()))}  # noqa: E731
    base = predict(schedules, at(theta), target, dtype)
    sse = float(np.sum((w * (measured - base)) ** 2))
    for _ in range(20):
        jac = np.stack([(predict(schedules, at(theta + STEP_US * unit), target, dtype) - base) / STEP_US
                        for unit in np.eye(len(terms))], 1)
        free = (theta > 0) | (jac.T @ (w * w * (measured - base)) > 0)  # at 0 and pushed below: held there
        step = np.zeros(len(terms))
        if free.any():
            step[free] = np.linalg.lstsq(w[:, None] * jac[:, free], w * (measured - base), rcond=None)[0]
        for _ in range(8):
            trial = np.maximum(theta + step, 0.0)
            new = predict(schedules, at(trial), target, dtype)
            new_sse = float(np.sum((w * (measured - new)) ** 2))
            if new_sse <= sse * (1 + 1e-12):
                break
            step /= 2
        else:
            break  # no step lowers the error
        moved, theta, base, sse = np.max(np.abs(trial - theta)), trial, new, new_sse
        if moved < 1e-6:
            break
    fitted = theta > 0
    se = np.zeros(len(terms))
    if fitted.any():
        wj = w[:, None] * jac[:, fitted]
        cov = np.linalg.pinv(wj.T @ wj) * sse / max(len(measured) - int(fitted.sum()), 1)
        se[fitted] = np.sqrt(np.maximum(np.diag(cov), 0.0))
    return dict(zip(terms, theta.tolist())), dict(zip(terms, se.tolist()))


def scored(rows: list[dict], predicted: np.ndarray) -> dict:
    with_pred = [dict(r, predicted_us=p) for r, p in zip(rows, predicted)]
    return {**summary(with_pred), "pick_within_5pct": selection(with_pred)["overall"]["predicted_best"]["within_5pct"]}


def print_scores(rows: list[dict], pred: dict[str, np.ndarray], held: list[int]) -> None:
    """The fidelity numbers of each column of ``pred``, over all rows and over the ``held`` ones."""
    stats = {(half, when): scored([rows[i] for i in idx], pred[when][idx])
             for half, idx in (("all", list(range(len(rows)))), ("held-out", held)) for when in pred}
    print(f"\n{'runs':<16} {'n':>5} {'Spearman':>8} {'within':>7} {'|err| median':>12} {'p90':>7} "
          f"{'best<=5%':>8}")
    for (half, when), s in stats.items():
        print(f"{half + ', ' + when:<16} {s['runs']:>5} {s['spearman']:>8.3f} "
              f"{s['within_shape_spearman_median']:>7.4f} {100 * s['median_abs_rel_err']:>11.1f}% "
              f"{100 * s['p90_abs_rel_err']:>6.1f}% {100 * s['pick_within_5pct']:>7.1f}%")
    print(f"\nsigned median error per variant ((predicted - measured) / measured)\n{'variant':<28} "
          + " ".join(f"{h + ' ' + w:>16}" for h, w in stats))
    for name in stats["all", "before"]["per_variant"]:
        cells = [s["per_variant"].get(name, {}).get("median_rel_err", math.nan) for s in stats.values()]
        print(f"{name:<28} " + " ".join(f"{100 * c:>15.1f}%" for c in cells))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("csv", nargs="+", help="fidelity CSVs (streamk fidelity; several seeds are pooled, their shapes "
                                           "halved together) of one kernel, or of several with --tile")
    ap.add_argument("--target", default="h100", help="the preset whose calibration predicts")
    ap.add_argument("--dtype", default="float16")
    ap.add_argument("--before", action="append", default=[], metavar="TERM=US", help="a term's value before")
    ap.add_argument("--set", action="append", default=[], metavar="TERM=US",
                    help="a term's value after (where fitted, the fit's start)")
    ap.add_argument("--fit", metavar="TERM[,TERM]", help="the terms fitted (jointly) on the fitting half's --on runs")
    ap.add_argument("--on", default="data-parallel,data-parallel%132",
                    help="variants (without tile) the fit uses, or all")
    ap.add_argument("--tile", type=TileShape.parse, metavar="BMxBNxBK",
                    help="score (and fit) only this kernel's runs (needed where the CSV holds several)")
    ap.add_argument("--fit-half", choices=("even", "odd"), default="even", help="the half of the shapes fitted on")
    ap.add_argument("--max-grid", type=int, metavar="G",
                    help="fit only on launches of at most G CTAs (the Target's SMs: one wave of a kernel of one CTA an "
                         "SM, whose CTAs all run at one busy count)")
    args = ap.parse_args()
    target = preset(args.target)
    rows = [r for path in args.csv for r in read_csv(path) if not r.get("error") and float(r["measured_us"] or 0) > 0]
    built = rebuild(rows, target, args.dtype)
    rows, schedules = [r for r, s in zip(rows, built) if s], [s for s in built if s]
    if args.tile is not None:
        keep = [s.tile == args.tile for s in schedules]
        rows, schedules = [r for r, k in zip(rows, keep) if k], [s for s, k in zip(schedules, keep) if k]
    tiles = sorted({str(s.tile) for s in schedules})
    if len(tiles) != 1:
        ap.error(f"the CSV's rebuilt runs are on {', '.join(tiles) or 'no tile'}"
                 f"{'' if args.tile is None else f' (--tile {args.tile})'}: name one kernel with --tile")
    cal = target.kernel(args.dtype, schedules[0].tile).calibration
    shipped = {t.name: t.us for t in cal.terms}
    measured = np.array([float(r["measured_us"]) for r in rows])
    before = dict(shipped, **{k: float(v) for k, _, v in (item.partition("=") for item in args.before)})
    pred = {"before": predict(schedules, before, target, args.dtype)}
    csv_pred = np.array([float(r["predicted_us"] or "nan") for r in rows])
    diff = np.abs(pred["before"] / csv_pred - 1)[np.isfinite(csv_pred)]
    print(f"{', '.join(args.csv)}: {len(rows)} runs rebuilt ({len(built) - len(rows)} not); {cal.dtype} {cal.tile}: the column "
          f"before reproduces the CSV's predicted_us on {int(np.sum(diff < 1e-9))} of {len(diff)} runs "
          f"(max |diff| {diff.max():.1e})")
    in_fit = odd_rows(rows) == (args.fit_half == "odd")
    fitting = {(r["m"], r["n"], r["k"]) for r, f in zip(rows, in_fit) if f}
    after = dict(shipped, **{k: float(v) for k, _, v in (item.partition("=") for item in args.set)})
    terms = args.fit.split(",") if args.fit else []
    if terms:
        on = set(args.on.split(","))
        idx = np.flatnonzero(in_fit & np.array(["all" in on or label(r["variant"]) in on for r in rows])
                             & np.array([args.max_grid is None or s.grid <= args.max_grid for s in schedules]))
        fitted, se = fit_terms([schedules[i] for i in idx], measured[idx], after, terms, target, args.dtype)
        after.update(fitted)
        print(f"{', '.join(terms)} fitted on {len(idx)} runs "
              f"({args.on}{'' if args.max_grid is None else f', grid <= {args.max_grid}'})"
              f" of {len(fitting)} shapes ({args.fit_half} half): "
              + "; ".join(f"{t} {fitted[t]:.4f} +- {se[t]:.4f} us (before {before.get(t, 0.0):.4f})" for t in terms))
    changed = {k: v for k, v in before.items() if shipped.get(k) != v}
    moved = {k: v for k, v in after.items() if shipped.get(k) != v}
    print(f"before: shipped{' with ' + str(changed) if changed else ''}; after: shipped"
          + (" with " + ", ".join(f"{t} = {v!r}" for t, v in moved.items()) if moved else ""))
    pred["after"] = predict(schedules, after, target, args.dtype)
    print_scores(rows, pred, [i for i in range(len(rows)) if not in_fit[i]])


if __name__ == "__main__":
    main()
