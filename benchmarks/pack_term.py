"""The calibrated model's pack terms checked on corpus runs (issue 18 item 1; LOG.md v35e, v36).

``streamk calibrate`` fits the pack pass's terms, ``pack`` (once per launch that packs) and
``pack_us_per_mb`` (per MB of A and B it copies), on its dp-packed probes. This script fits the same
two terms independently on a ``streamk bench`` CSV of the corpus, which times auto with every
overhead inside, packs included, and scores the shipped ones there. For each shape whose auto Schedule rebuilds today as it ran (tile and grid) on a calibrated kernel,
the main kernel's time is the calibrated simulator's (``predict_us`` without a pack) and the MB are
what the GPU's own rule packs for contiguous operands (``decide.tiles.packed_bytes``); ``total = main +
pack + MB x pack_us_per_mb`` is fitted by relative least squares, first on every other packed shape
(scored on the rest), then on all of them.

    python benchmarks/pack_term.py benchmarks/data/bench_h100_f16_v32.csv.gz --target h100
"""

from __future__ import annotations

import argparse
import csv
from collections import Counter

import numpy as np

from streamk.calibrate.predict import predict_us
from streamk.gpu.decide.schedule import schedule_for
from streamk.gpu.decide.tiles import packed_bytes
from streamk.plot.csvfile import open_text
from streamk.shapes import GemmShape
from streamk.target import preset


def rows_of(path: str, target_name: str, dtype: str) -> list[tuple[str, float, float, float, float]]:
    """(tile, main kernel us as predicted, the pack as shipped predicts it, measured total us, packed MB)."""
    target = preset(target_name)
    out = []
    for r in csv.DictReader(open_text(path)):
        if r.get("dtype", dtype) != dtype or not r.get("auto"):
            continue
        shape = GemmShape(int(r["m"]), int(r["n"]), int(r["k"]))
        schedule = schedule_for("auto", shape, dtype, target)
        if str(schedule.tile) != r["auto_tile"] or schedule.grid != int(r["auto_grid"]):
            continue  # auto decides otherwise today: not the launch that was timed
        cal = target.kernel(dtype, schedule.tile).calibration
        if cal is None:
            continue
        mb = packed_bytes(shape, dtype, schedule.tile) / 1e6
        main = predict_us(schedule, cal, target.sms)
        out.append((str(schedule.tile), main, predict_us(schedule, cal, target.sms, packed_mb=mb),
                    float(r["auto"]) * 1e3, mb))
    return out


def fit_pack(main: np.ndarray, total: np.ndarray, mb: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(pack, pack_us_per_mb) and their standard errors, relative least squares."""
    w = 1.0 / total
    design = np.stack([np.ones(len(mb)), mb], axis=1) * w[:, None]
    y = (total - main) * w
    coef, *_ = np.linalg.lstsq(design, y, rcond=None)
    resid = y - design @ coef
    sigma2 = float(resid @ resid) / max(1, len(y) - 2)
    return coef, np.sqrt(np.diag(np.linalg.inv(design.T @ design)) * sigma2)


def _score(name: str, predicted: np.ndarray, measured: np.ndarray) -> str:
    e = predicted / measured - 1
    return (f"{name:<36} {len(e):4d} shapes: median |error| {np.median(np.abs(e)):6.1%}, p90 "
            f"{np.percentile(np.abs(e), 90):6.1%}, signed median {np.median(e):+6.1%}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("csv", help="a streamk bench CSV with auto, auto_tile, auto_grid columns")
    ap.add_argument("--target", default="h100", help="the preset whose calibration predicts (default h100)")
    ap.add_argument("--dtype", default="float16")
    args = ap.parse_args()
    rows = rows_of(args.csv, args.target, args.dtype)
    tiles = np.array([r[0] for r in rows])
    main_us, shipped, total, mb = (np.array([r[i] for r in rows]) for i in range(1, 5))
    packed = mb > 0
    counts = ", ".join(f"{n} on {t}" for t, n in Counter(str(t) for t in tiles[packed]).most_common())
    print(f"{len(rows)} shapes rebuilt on calibrated kernels; packed: {counts}")
    print(_score("unpacked", main_us[~packed], total[~packed]))
    print(_score("packed, without a pack term", main_us[packed], total[packed]))
    print(_score("packed, the calibration as shipped", shipped[packed], total[packed]))
    idx = np.flatnonzero(packed)
    half, held = idx[::2], idx[1::2]
    (p, q), _ = fit_pack(main_us[half], total[half], mb[half])
    print(f"fitted on {len(half)} packed shapes: {p:.2f} us + {q:.3f} us/MB")
    print(_score("  the other half (held out)", main_us[held] + p + q * mb[held], total[held]))
    for tile in sorted(set(tiles[held])):
        sel = held[tiles[held] == tile]
        print(_score(f"    on {tile}", main_us[sel] + p + q * mb[sel], total[sel]))
    (p, q), (sp, sq) = fit_pack(main_us[idx], total[idx], mb[idx])
    print(f"fitted on all {len(idx)}: pack {p:.3f} +- {sp:.3f} us, pack_us_per_mb {q:.4f} +- {sq:.4f}")


if __name__ == "__main__":
    main()
