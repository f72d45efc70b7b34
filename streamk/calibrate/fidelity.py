"""Fidelity: the calibrated simulator's time against the GPU's, shape by shape (no GPU needed here).

A fidelity run (``streamk fidelity``) times, for each corpus shape, every decomposition and fixup
policy the GPU runs and writes one CSV row per (shape, variant). What is here is pure: rebuild
the very Schedule a row ran (``bench.variants.variant`` -> ``decide.schedule.schedule_for``, checked against the
row's fingerprint), predict it with a Target's calibration, and score the predictions: Spearman
over all runs, the median Spearman within a shape, absolute relative errors, per variant.
"""

from __future__ import annotations

import csv
import hashlib
import math
from pathlib import Path
from typing import Any, Sequence

import numpy as np

from ..errors import InputError, StreamkError
from ..schedule import Schedule
from ..shapes import GemmShape, TileShape
from ..target import Target
from .predict import predict_us

# The decompositions and policies the GPU runs, as `streamk bench` variants (#TILE appended).
VARIANTS = ("data-parallel", "fixed-split", "stream-k", "dp-one-tile-sk", "two-tile-sk-dp", "auto", "cutlass2-sk",
            "cutlass3-sk", "stream-k!turnstile+back", "stream-k!last-arrival", "stream-k!separate-reduce",
            "stream-k!atomic")
FIELDS = ("m", "n", "k", "dtype", "variant", "tile", "grid", "fixup", "fingerprint", "measured_us", "p20_us",
          "p80_us", "relerr", "same_as", "error", "predicted_us", "unpredicted")
CSV_MADE_BY = "streamk fidelity (on a GPU)"


def default_variants(tile: TileShape) -> list[str]:
    """Every decomposition and policy in ``VARIANTS``, pinned to the calibrated kernel's tile."""
    return pin(VARIANTS, tile)


def pin(variants: Sequence[str], tile: TileShape) -> list[str]:
    """Each variant on ``tile`` where it names no tile of its own (#TILE), so that a run measures the
    kernel it is said to (unpinned, a variant runs the paper's tile, or auto's pick)."""
    pinned = f"#{tile.bm}x{tile.bn}x{tile.bk}"  # the whole tile: 128x256 alone is the sm80 128x256x32
    return [v if "#" in v else v.replace("+", f"{pinned}+", 1) if "+" in v else f"{v}{pinned}" for v in variants]


def run_variants(variants: Sequence[str], tile: TileShape, tile_given: bool) -> list[str]:
    """The variants a fidelity run times: each pinned to ``tile``, except where some name their own
    tile and no --tile was given: then one without #TILE (auto) runs the tile auto picks, as gemm()
    does, so that auto is judged against every tile's candidates rather than confined to one."""
    if not tile_given and any("#" in v for v in variants):
        return list(variants)
    return pin(variants, tile)


def label(variant_text: str) -> str:
    """A variant's name without its tile: the series a plot and a table show."""
    head, *flags = variant_text.split("+")
    return "+".join([head.partition("#")[0], *flags])


def fingerprint(schedule: Schedule) -> str:
    """What identifies a Schedule's work: its units, CTA ranges and fixup policy."""
    h = hashlib.sha1(schedule.units.tobytes() + schedule.cta_offsets.tobytes() + schedule.fixup.encode())
    return h.hexdigest()[:16]


def resolve(variant_text: str, shape: GemmShape, dtype: str, target: Target) -> Schedule:
    """The Schedule ``streamk.gpu.prepare(**variant(variant_text))`` runs for ``shape`` on ``target``."""
    from ..gpu.catalogue import spec_for_tile
    from ..gpu.decide.schedule import schedule_for
    from ..bench.variants import variant

    args = variant(variant_text, lambda: target.sms)
    name, tile = args.pop("schedule"), args.pop("tile", None)
    args.pop("_tuning", None)  # packing and PDL change kernels, not the Schedule
    tile = None if tile is None else spec_for_tile(dtype, tile).tile
    return schedule_for(name, shape, dtype, target, tile=tile, **args)


PARALLEL_ROWS = 256  # rows per process task; fewer rows than this are predicted in this process


def predict_rows(rows: Sequence[dict[str, Any]], target: Target, dtype: str, workers: int | None = None
                 ) -> list[dict[str, Any]]:
    """``rows`` with ``predicted_us`` from ``target``'s calibration; NaN where the GPU run failed
    (its ``error``), or ``unpredicted`` says why: its kernel has no calibration, or the rebuilt
    Schedule is not the one the GPU ran. Spread over ``workers`` processes (default: the sweep's,
    ``STREAMK_SWEEP_WORKERS`` or every CPU): an FP64 run's 2400 rows take minutes in one."""
    from ..parallel import run_ordered, workers_available

    workers = workers_available() if workers is None else workers
    if workers <= 1 or len(rows) <= PARALLEL_ROWS:
        return _predict_chunk(rows, target, dtype)
    chunks = [(list(rows[i:i + PARALLEL_ROWS]), target, dtype) for i in range(0, len(rows), PARALLEL_ROWS)]
    return [row for chunk in run_ordered(_predict_chunk, chunks, workers) for row in chunk]


def _predict_chunk(rows: Sequence[dict[str, Any]], target: Target, dtype: str) -> list[dict[str, Any]]:
    from ..gpu.decide.tiles import packed_bytes
    from .candidates import launch_requests

    out = []
    for row in rows:
        row = dict(row, predicted_us=math.nan, unpredicted="")
        if not row.get("error"):
            shape = GemmShape(int(row["m"]), int(row["n"]), int(row["k"]))
            try:
                schedule = resolve(row["variant"], shape, dtype, target)
            except StreamkError as exc:
                row["unpredicted"] = f"cannot rebuild its schedule: {exc}"
            else:
                cal = target.kernel(dtype, schedule.tile).calibration
                if fingerprint(schedule) != row["fingerprint"]:
                    row["unpredicted"] = "the rebuilt schedule differs from the one the GPU ran"
                elif cal is None:
                    row["unpredicted"] = f"{target.name} has no calibration of the {dtype} {schedule.tile} kernel"
                else:
                    packed_mb = packed_bytes(shape, dtype, schedule.tile) / 1e6  # the runs' operands are contiguous
                    row["predicted_us"] = predict_us(schedule, cal, target.sms, packed_mb=packed_mb,
                                                     requests=launch_requests(schedule, dtype, target))
        out.append(row)
    return out


def ranks(x: np.ndarray) -> np.ndarray:
    """Ranks from 1, ties sharing their average rank."""
    order = np.argsort(x, kind="stable")
    r = np.empty(len(x))
    r[order] = np.arange(1, len(x) + 1)
    _, inverse, counts = np.unique(x, return_inverse=True, return_counts=True)
    sums = np.bincount(inverse, weights=r)
    return (sums / counts)[inverse]


def spearman(x: Sequence[float], y: Sequence[float]) -> float:
    """Spearman's rank correlation (NaN with fewer than 3 points or a constant side)."""
    x, y = np.asarray(x, dtype=float), np.asarray(y, dtype=float)
    if len(x) < 3:
        return math.nan
    rx, ry = ranks(x), ranks(y)
    if rx.std() == 0 or ry.std() == 0:
        return math.nan
    return float(np.corrcoef(rx, ry)[0, 1])


def _errors(measured: np.ndarray, predicted: np.ndarray) -> dict[str, float]:
    signed = (predicted - measured) / measured
    err = np.abs(signed)
    return {"runs": int(len(err)), "spearman": spearman(predicted, measured),
            "median_rel_err": float(np.median(signed)) if len(err) else math.nan,  # < 0: under-predicted
            "median_abs_rel_err": float(np.median(err)) if len(err) else math.nan,
            "p90_abs_rel_err": float(np.percentile(err, 90)) if len(err) else math.nan}


GIST_CHARS = 100  # why runs were left out, grouped by this much of the reason


def _gist(reason: str) -> str:
    """``reason`` cut at a word boundary to about GIST_CHARS (so reasons that differ only in their
    details count together), with an ellipsis where cut."""
    if len(reason) <= GIST_CHARS:
        return reason
    return reason[:GIST_CHARS].rsplit(" ", 1)[0] + " ..."


def summary(rows: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """The fidelity numbers of rows with a measured and a predicted time."""
    good = [r for r in rows if not r.get("error") and math.isfinite(float(r["predicted_us"]))
            and float(r["measured_us"]) > 0]
    measured = np.array([float(r["measured_us"]) for r in good])
    predicted = np.array([float(r["predicted_us"]) for r in good])
    out: dict[str, Any] = {**_errors(measured, predicted), "left_out": len(rows) - len(good)}
    why: dict[str, int] = {}
    for r in rows:
        reason = r.get("error") or r.get("unpredicted")
        if reason:
            gist = _gist(reason)
            why[gist] = why.get(gist, 0) + 1
    out["left_out_why"] = why
    shapes: dict[tuple, list[int]] = {}
    for i, r in enumerate(good):
        shapes.setdefault((int(r["m"]), int(r["n"]), int(r["k"])), []).append(i)
    within, picked, cost = [], 0, []
    for idx in shapes.values():
        within.append(spearman(predicted[idx], measured[idx]))
        best = min(idx, key=lambda i: predicted[i])  # what the calibrated simulator would run
        picked += measured[best] == measured[idx].min()
        cost.append(measured[best] / measured[idx].min())
    within = [w for w in within if math.isfinite(w)]
    out.update(shapes=len(shapes), within_shape_spearman_median=float(np.median(within)) if within else math.nan,
               best_pick_share=picked / len(shapes) if shapes else math.nan,
               best_pick_cost_geomean=float(np.exp(np.mean(np.log(cost)))) if cost else math.nan)
    per = {}
    for name in dict.fromkeys(label(r["variant"]) for r in good):
        sel = np.array([label(r["variant"]) == name for r in good])
        per[name] = _errors(measured[sel], predicted[sel])
    out["per_variant"] = per
    return out


def write_csv(rows: Sequence[dict[str, Any]], path: str | Path) -> Path:
    from ..atomic import replacing

    with replacing(path) as tmp, open(tmp, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(FIELDS), extrasaction="ignore")
        w.writeheader()
        w.writerows(rows)
    return Path(path)


def read_csv(path: str | Path) -> list[dict[str, Any]]:
    """Rows of a fidelity CSV; InputError naming the file where it is not one."""
    from ..plot.csvfile import read_rows

    _, records = read_rows(path, ["m", "n", "k", "variant", "fingerprint", "measured_us"], CSV_MADE_BY)
    for line, r in enumerate(records, start=2):
        try:
            float(r["measured_us"] or "nan"), int(r["m"]), int(r["n"]), int(r["k"])
        except ValueError:
            raise InputError(f"{path} line {line}: m, n, k and measured_us must be numbers (got {r})") from None
    return records


def report(stats: dict[str, Any]) -> str:
    """The summary as a table: all runs, then per variant."""
    pct = lambda x: f"{100 * x:6.1f}%" if math.isfinite(x) else "     -"  # noqa: E731
    num = lambda x: f"{x:6.3f}" if math.isfinite(x) else "     -"  # noqa: E731
    lines = [f"{stats['runs']} runs on {stats['shapes']} shapes ({stats['left_out']} left out): Spearman "
             f"{num(stats['spearman'])}, median within a shape {num(stats['within_shape_spearman_median'])}; "
             f"|error| median {pct(stats['median_abs_rel_err'])}, p90 {pct(stats['p90_abs_rel_err'])}",
             f"the predicted best is the measured best on {pct(stats['best_pick_share'])} of shapes; taking it costs "
             f"{num(stats['best_pick_cost_geomean'])}x geomean",
             f"{'variant':<32} {'runs':>5} {'Spearman':>8} {'median':>7} {'p90':>7} {'signed':>7}"]
    for name, s in stats["per_variant"].items():
        lines.append(f"{name:<32} {s['runs']:>5} {num(s['spearman']):>8} {pct(s['median_abs_rel_err']):>7} "
                     f"{pct(s['p90_abs_rel_err']):>7} {pct(s['median_rel_err']):>7}")
    lines += [f"left out {n}: {reason}" for reason, n in sorted(stats["left_out_why"].items(), key=lambda x: -x[1])]
    return "\n".join(lines)
