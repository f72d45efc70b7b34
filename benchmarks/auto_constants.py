"""auto under other values of its Target constants, scored against an oracle measured in the same run
(issue 18 item 4): the device sweep that offline re-scoring cannot replace, since a new constant
often picks a Schedule no earlier oracle run measured (LOG.md v32b).

Per shape of a seeded corpus sample (k and n rounded up to 8, as ``streamk fidelity`` samples), the
oracle's candidates (``--variants``, on ``--tile``) and auto under the shipped Target and under each
``--set`` are prepared; every distinct launch is timed once, interleaved (``bench.harness``'s method).
Prints, per selector, the share of shapes within 5% of the best measured launch, and writes a CSV.
``--dry-run`` (no GPU) prints how many shapes each set changes against the shipped auto.

    PYTHONPATH=. python3 benchmarks/auto_constants.py --seed 53 --count 200 \\
        --set split_extra_us=2.25 --set split_busy_share=0.6 --set persistent_upto=24 \\
        --set split_extra_us=2.25,split_busy_share=0.6,persistent_upto=24 --out auto_constants.csv
"""

from __future__ import annotations

import argparse
import csv
import math
from dataclasses import replace

import numpy as np

from streamk.calibrate.fidelity import fingerprint, pin
from streamk.cli.fidelity_cmd import sample
from streamk.gpu.decide.schedule import schedule_for
from streamk.schedule import Schedule
from streamk.shapes import GemmShape, TileShape
from streamk.target import Target, preset

WITHIN = 1.05
# the oracle of the v28-v29 runs (LOG.md): 13 candidates, auto among them (here: the "auto" selector)
ORACLE = ("data-parallel", "data-parallel%132", "data-parallel/grouped-8", "fixed-split", "stream-k", "dp-one-tile-sk",
          "two-tile-sk-dp", "cutlass2-sk", "cutlass3-sk", "stream-k!turnstile+back", "stream-k!separate-reduce",
          "stream-k!atomic")


def with_constants(target: Target, dtype: str, tile: TileShape, values: dict[str, float]) -> Target:
    """``target`` with ``tile``'s TargetTile fields replaced by ``values``."""
    tiles = tuple(replace(t, **values) if (t.dtype, t.tile) == (dtype, tile) else t for t in target.tiles)
    return replace(target, tiles=tiles)


def parse_set(text: str) -> dict[str, float]:
    out = {}
    for item in text.split(","):
        name, _, value = item.partition("=")
        out[name.strip()] = int(value) if name.strip() == "persistent_upto" else float(value)
    return out


def autos(shape: GemmShape, dtype: str, tile: TileShape, targets: dict[str, Target]) -> dict[str, Schedule]:
    return {name: schedule_for("auto", shape, dtype, t, tile=tile) for name, t in targets.items()}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--seed", type=int, default=53)
    ap.add_argument("--count", type=int, default=200)
    ap.add_argument("--tile", type=TileShape.parse, default=TileShape(128, 128, 64))
    ap.add_argument("--dtype", default="float16")
    ap.add_argument("--target", default="h100", help="the preset whose constants are varied")
    ap.add_argument("--set", action="append", default=[], metavar="FIELD=V[,FIELD=V]",
                    help="TargetTile fields for one more auto (repeatable)")
    ap.add_argument("--variants", default=";".join(ORACLE), help="the oracle's candidates, on --tile")
    ap.add_argument("--out", default="auto_constants.csv")
    ap.add_argument("--dry-run", action="store_true", help="no GPU: how many shapes each set changes")
    args = ap.parse_args()
    base = preset(args.target)
    targets = {"auto": base} | {f"auto[{s}]": with_constants(base, args.dtype, args.tile, parse_set(s))
                                for s in args.set}
    shapes = [GemmShape(*s) for s in sample(args.count, 0, args.seed)]
    if args.dry_run:
        changed = {name: 0 for name in targets}
        for shape in shapes:
            picks = autos(shape, args.dtype, args.tile, targets)
            for name, s in picks.items():
                changed[name] += (fingerprint(s), s.tile_order) != (fingerprint(picks["auto"]), picks["auto"].tile_order)
        for name, n in changed.items():
            print(f"{name:60s} changes {n} of {len(shapes)} shapes")
        return
    measure(args, shapes, targets)


def measure(args, shapes: list[GemmShape], targets: dict[str, Target]) -> None:
    import torch

    from streamk.gpu import prepare
    from streamk.bench.harness import time_interleaved
    from streamk.gpu.runtime.device import current
    from streamk.bench.variants import launch_key, tile_for, variant

    dev, stream = current(), torch.cuda.Stream()
    texts = pin(args.variants.split(";"), args.tile)
    rows, scores = [], {name: [] for name in [*targets, *texts]}
    for i, shape in enumerate(shapes):
        A = torch.randn(shape.m, shape.k, device="cuda").half()
        B = torch.randn(shape.k, shape.n, device="cuda").half()
        C = torch.empty(shape.m, shape.n, device="cuda")
        prepared = {t: prepare(A, B, C, **tile_for(variant(t, lambda: dev.sms), shape, args.dtype, dev.target))
                    for t in texts}
        prepared |= {name: prepare(A, B, C, schedule=s, fixup=s.fixup)
                     for name, s in autos(shape, args.dtype, args.tile, targets).items()}
        first, fns = {}, {}
        for name, p in prepared.items():
            key = launch_key(p)
            first.setdefault(key, name)
            fns.setdefault(first[key], lambda launch=p.launch: launch.enqueue(stream.cuda_stream))
        times = time_interleaved(fns, stream)
        us = {name: times[first[launch_key(p)]][0] * 1e3 for name, p in prepared.items()}
        best = min(us.values())
        for name, t in us.items():
            scores[name].append(t / best)
            rows.append({"m": shape.m, "n": shape.n, "k": shape.k, "selector": name, "us": t,
                         "same_as": first[launch_key(prepared[name])], "best_us": best})
        print(f"{i + 1}/{len(shapes)} {shape}", flush=True)
    with open(args.out, "w", newline="") as f:
        w = csv.DictWriter(f, list(rows[0]))
        w.writeheader()
        w.writerows(rows)
    for name, cost in scores.items():
        c = np.array(cost)
        print(f"{name:60s} within 5% {np.mean(c <= WITHIN):.3f}  cost geomean {math.exp(np.mean(np.log(c))):.3f}"
              f"  worst {c.max():.2f}")


if __name__ == "__main__":
    main()
