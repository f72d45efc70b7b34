"""What the pack pass adds to a GEMM's time, against the calibrated simulator (issue 18 item 1).

The calibrated model has no pack term: its fidelity runs round k and n up to multiples of 8 so that
nothing is packed. A ``streamk bench`` CSV of the corpus times auto with every overhead inside,
packs included, and records the pack pass alone (``pack_ms``). For each shape whose auto Schedule
rebuilds today as it ran (tile and grid) on a calibrated kernel, this predicts the main kernel
(``predict_us``), takes the MB of A and B the GPU's own rule packs for contiguous operands
(``select.contiguous_widths``), fits ``total = main + pack + MB x pack_us_per_mb`` by relative least
squares on every other packed shape and scores it on the rest (LOG.md v35d).

    python benchmarks/pack_term.py benchmarks/data/bench_h100_f16_v32.csv --target h100
"""

from __future__ import annotations

import argparse
import csv
from collections import Counter

import numpy as np

from streamk.calibrate.predict import predict_us
from streamk.gpu.select import contiguous_widths, schedule_for
from streamk.shapes import ITEMSIZE, GemmShape
from streamk.target import preset


def rows_of(path: str, target_name: str, dtype: str) -> list[tuple[str, float, float, float, float]]:
    """(tile, predicted main us, measured total us, pack pass us, packed MB) per rebuilt shape."""
    target = preset(target_name)
    out = []
    for r in csv.DictReader(open(path)):
        if r.get("dtype", dtype) != dtype or not r.get("auto"):
            continue
        shape = GemmShape(int(r["m"]), int(r["n"]), int(r["k"]))
        schedule = schedule_for("auto", shape, dtype, target)
        if str(schedule.tile) != r["auto_tile"] or schedule.grid != int(r["auto_grid"]):
            continue  # auto decides otherwise today: not the launch that was timed
        cal = target.kernel(dtype, schedule.tile).calibration
        if cal is None:
            continue
        wa, wb = contiguous_widths(shape, dtype, schedule.tile)
        packed = (shape.m * shape.k if wa == 0 else 0) + (shape.k * shape.n if wb == 0 else 0)
        out.append((str(schedule.tile), predict_us(schedule, cal, target.sms), float(r["auto"]) * 1e3,
                    float(r["pack_ms"] or 0) * 1e3, packed * ITEMSIZE[dtype] / 1e6))
    return out


def _score(name: str, predicted: np.ndarray, measured: np.ndarray) -> str:
    e = predicted / measured - 1
    return (f"{name:<34} {len(e):4d} shapes: median |error| {np.median(np.abs(e)):6.1%}, p90 "
            f"{np.percentile(np.abs(e), 90):6.1%}, signed median {np.median(e):+6.1%}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("csv", help="a streamk bench CSV with an auto column and pack_ms")
    ap.add_argument("--target", default="h100", help="the preset whose calibration predicts (default h100)")
    ap.add_argument("--dtype", default="float16")
    args = ap.parse_args()
    rows = rows_of(args.csv, args.target, args.dtype)
    tiles = np.array([r[0] for r in rows])
    main_us, total, pack_us, mb = (np.array([r[i] for r in rows]) for i in range(1, 5))
    packed = mb > 0
    counts = ", ".join(f"{n} on {t}" for t, n in Counter(str(t) for t in tiles[packed]).most_common())
    print(f"{len(rows)} shapes rebuilt on calibrated kernels; packed: {counts}")
    print(_score("unpacked, the model as shipped", main_us[~packed], total[~packed]))
    print(_score("packed, the model as shipped", main_us[packed], total[packed]))
    idx = np.flatnonzero(packed)
    fit, held = idx[::2], idx[1::2]
    w = 1.0 / total[fit]
    design = np.stack([np.ones(len(fit)), mb[fit]], axis=1) * w[:, None]
    (fixed, per_mb), *_ = np.linalg.lstsq(design, (total[fit] - main_us[fit]) * w, rcond=None)
    alone = np.linalg.lstsq(np.stack([np.ones(packed.sum()), mb[packed]], axis=1), pack_us[packed], rcond=None)[0]
    print(f"pack term fitted on {len(fit)} packed shapes: {fixed:.2f} us + {per_mb:.3f} us/MB "
          f"(the pack pass alone, timed: {alone[0]:.2f} us + {alone[1]:.3f} us/MB)")
    print(_score("packed, + the term: fit half", main_us[fit] + fixed + per_mb * mb[fit], total[fit]))
    print(_score("packed, + the term: held-out half", main_us[held] + fixed + per_mb * mb[held], total[held]))
    for tile in sorted(set(tiles[held])):
        sel = held[tiles[held] == tile]
        print(_score(f"  held out on {tile}", main_us[sel] + fixed + per_mb * mb[sel], total[sel]))


if __name__ == "__main__":
    main()
