"""The calibrated model of this tree against launches `benchmarks/candidates_probe.py` measured: each
row's launch rebuilt (its variant on its shape and dtype, contiguous operands) and predicted again,
beside the prediction the CSV holds (the model when it ran). Per shape, every pair of its launches:
the predicted ratio against the measured one (correlation, sign agreement; the 2x2-cluster pairs of
one schedule apart), and each model's pick against the measured best.

    python benchmarks/model_on_probes.py A.csv[.gz] B.csv ... [--target h200]

Rows whose rebuilt launch differs from the measured one (tile or grid, and tile order and clusters
where the CSV has them) are left out and counted: run it from a checkout of the commit that measured
them to see a model change on old rows (LOG.md v159).
"""

from __future__ import annotations

import argparse
import csv
import math
from collections import defaultdict

import numpy as np

from streamk.bench.variants import variant
from streamk.calibrate.candidates import predicted
from streamk.gpu.decide import decide
from streamk.gpu.decide.launches import QUAD_CLUSTER
from streamk.gpu.decide.operands import Operand
from streamk.gpu.request import DEFAULT_TUNING, request
from streamk.plot.csvfile import open_text
from streamk.target import preset

PICK_WITHIN = 1.05  # a pick counts as right within 5% of the measured best
SAME = 0.03  # measured ratios closer than this to 1 agree with any prediction


def rebuild(shape: str, dtype: str, name: str, linear: bool, target):
    """The Decision a probe's ``prepare`` made for variant ``name``: contiguous row-major operands, or
    with ``linear`` a column-major B (W.t(), W stored n x k)."""
    m, n, k = (int(v) for v in shape.split("x"))
    kw = variant(name, lambda: target.sms)
    schedule, tile, tuning = kw.pop("schedule"), kw.pop("tile", None), kw.pop("_tuning", DEFAULT_TUNING)
    a = Operand(None, "torch", 0, (m, k), (k, 1), dtype)
    b = Operand(None, "torch", 0, (k, n), (1, k) if linear else (n, 1), dtype)
    return decide(a, b, None, target, request(schedule, None, tile, options=kw, tuning=tuning))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("csvs", nargs="+", help="candidates_probe.py --csv files (rounds of one run: name_1, name_2)")
    ap.add_argument("--target", default="h200")
    args = ap.parse_args()
    target = preset(args.target)
    groups: dict[tuple, dict[str, list]] = defaultdict(lambda: defaultdict(list))
    left = 0
    for path in args.csvs:
        run = path.split("/")[-1].split(".")[0].rstrip("0123456789").rstrip("_")  # rounds of one run share it
        with open_text(path) as f:
            for r in csv.DictReader(f):
                linear = r.get("linear") == "True"
                d = rebuild(r["shape"], r["dtype"], r["variant"], linear, target)
                s = d.schedule
                if f"{s.tile.bm}x{s.tile.bn}x{s.tile.bk}" != r["tile"] or s.grid != int(r["grid"]) or \
                        r.get("tile_order", s.tile_order) != s.tile_order or \
                        r.get("cluster", str(d.cluster)) != str(d.cluster):
                    left += 1
                    continue
                k = int(r["shape"].split("x")[2])
                now = predicted(s, r["dtype"], target, None, k * d.spec.itemsize if linear else None)
                groups[(run, r["dtype"], r["shape"])][r["variant"]].append(
                    (float(r["measured_us"]), float(r["predicted_us"] or "nan"), now, d.cluster == QUAD_CLUSTER,
                     r["tile"], s.grid))
    models = ("then", "now")
    pairs, picks = [], {m: [] for m in models}
    for launches in groups.values():
        agg = {v: (np.mean([x[0] for x in xs]), *xs[0][1:]) for v, xs in launches.items()}
        if len(agg) < 2 or any(not math.isfinite(a[1]) or a[2] is None for a in agg.values()):
            continue
        best = min(a[0] for a in agg.values())
        for i, m in enumerate(models):
            picks[m].append(min(agg.values(), key=lambda a: a[1 + i])[0] / best)
        names = list(agg)
        for i, x in enumerate(names):
            for y in names[i + 1:]:
                a, b = agg[x], agg[y]
                one_schedule_2x2 = a[3] != b[3] and a[4:] == b[4:]  # the same tile and grid, clustered or not
                pairs.append((math.log(a[0] / b[0]), math.log(a[1] / b[1]), math.log(a[2] / b[2]), one_schedule_2x2))
    if not pairs:
        print(f"no shape has two launches to compare ({left} rows left out: rebuilt launch differs)")
        return 1
    print(f"{len(picks['now'])} shapes with 2+ launches, {len(pairs)} launch pairs ({left} rows left out: rebuilt "
          f"launch differs)")
    for i, m in enumerate(models):
        for label, sel in (("all pairs", pairs), ("2x2 or not", [p for p in pairs if p[3]])):
            if len(sel) < 2:
                continue
            meas, pred = np.array([p[0] for p in sel]), np.array([p[1 + i] for p in sel])
            agree = np.mean((np.abs(meas) < SAME) | (np.sign(meas) == np.sign(pred)))
            print(f"  model {m:4s} {label:10s} ({len(sel):4d}): corr {np.corrcoef(meas, pred)[0, 1]:.3f}, "
                  f"sign agrees {agree:.3f}")
        p = np.array(picks[m])
        print(f"  model {m:4s} pick within {PICK_WITHIN:.2f}x of the measured best: {np.mean(p <= PICK_WITHIN):.3f}, "
              f"worst {p.max():.2f}x")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
