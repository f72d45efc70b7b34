"""Fewer tiles than SMs on the sm90 kernels: which grid? auto's appendix grid, data-parallel, or
every tile split s ways (fixed-split: the CTAs holding a tile's j-th split all start at the same k
offset, so they step through the same slab of A and B together, as a DP wave does, where the
appendix grid's even shares start each CTA at its own offset).

For the corpus shapes (each --seed) whose auto tile is one of --tiles with fewer tiles than SMs,
times in one process, on the same inputs, interleaved as `streamk bench` times them (CUDA-graph
replays, median of 50): auto, DP of the same tile (grouped-8), basic Stream-K on every SM, and
fixed-split s ways for each s in 2 .. SMs // tiles with at least MIN_ITERS iterations per
CTA; each result checked against torch.mm. Writes one CSV row per (shape, variant); prints, per
shape, each variant's time over DP's, then the geomean of each rule's pick against DP.

    python benchmarks/few_tiles.py --seeds 20260121,7 --out few_tiles.csv
"""

from __future__ import annotations

import argparse
import csv
import math
import sys

import torch

from streamk.gpu import prepare
from streamk.gpu.bench import corpus, time_interleaved
from streamk.gpu.device import current
from streamk.gpu.decide.tiles import choose_tile
from streamk.shapes import GemmShape, TileShape

MIN_ITERS = 4  # iterations per CTA below which a split is not tried
ORDER = "grouped-8"


def candidates(tiles: int, ipt: int, sms: int) -> dict[str, dict]:
    """prepare() arguments of every variant for a shape of ``tiles`` tiles and ``ipt`` iterations."""
    out = {"auto": {"schedule": "auto"}, "dp": {"schedule": "data-parallel", "tile_order": ORDER},
           "sk": {"schedule": "stream-k", "tile_order": ORDER}}
    for s in range(2, sms // tiles + 1):
        if ipt // s >= MIN_ITERS:
            out[f"split{s}"] = {"schedule": "fixed-split", "splits": s, "tile_order": ORDER}
    return out


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--seeds", default="20260121,7")
    p.add_argument("--count", type=int, default=400)
    p.add_argument("--tiles", default="128x128x64,128x256x64")
    p.add_argument("--out", default="few_tiles.csv")
    args = p.parse_args()
    dev = current()
    wanted = {TileShape.parse(t) for t in args.tiles.split(",")}
    stream = torch.cuda.Stream()
    rows = []
    for seed in (int(s) for s in args.seeds.split(",")):
        for m, n, k in corpus(args.count, seed):
            shape = GemmShape(m, n, k)
            tile = choose_tile(shape, "float16", dev.target)
            tiles = -(-m // tile.bm) * -(-n // tile.bn)
            if tile not in wanted or tiles >= dev.sms:
                continue
            ipt = -(-k // tile.bk)
            A = torch.randn(m, k, device="cuda").half()
            B = torch.randn(k, n, device="cuda").half()
            ref = torch.mm(A, B, out_dtype=torch.float32).double()
            out = torch.full((m, n), float("nan"), device="cuda")
            prepared = {name: prepare(A, B, out, tile=tile, **kw)
                        for name, kw in candidates(tiles, ipt, dev.sms).items()}
            times = time_interleaved({name: (lambda l=p.launch: l.enqueue(stream.cuda_stream))
                                      for name, p in prepared.items()}, stream)
            for name, p in prepared.items():
                out.fill_(float("nan"))
                p.launch.enqueue(stream.cuda_stream)
                stream.synchronize()
                err = float((out.double() - ref).norm() / ref.norm())
                if not err < 1e-2:
                    print(f"BAD {m}x{n}x{k} {name}: relative error {err:.3g}", file=sys.stderr)
                rows.append({"seed": seed, "m": m, "n": n, "k": k, "tile": str(tile), "tiles": tiles, "ipt": ipt,
                             "variant": name, "grid": p.schedule.grid, "us": times[name][0] * 1e3,
                             "p20_us": times[name][1] * 1e3, "p80_us": times[name][2] * 1e3, "relerr": err})
            dp = times["dp"][0]
            print(f"{m:5d}x{n:5d}x{k:5d} {tile} t={tiles:3d} ipt={ipt:3d} dp {dp * 1e3:6.1f} us  " +
                  " ".join(f"{name}:{dp / t[0]:.2f}" for name, t in times.items() if name != "dp"), flush=True)
    with open(args.out, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(rows[0]))
        w.writeheader()
        w.writerows(rows)
    summarize(rows)
    return 0


def summarize(rows: list[dict]) -> None:
    by_shape: dict[tuple, dict[str, float]] = {}
    for r in rows:
        by_shape.setdefault((r["seed"], r["m"], r["n"], r["k"]), {})[r["variant"]] = r["us"]
    picks = {"auto": lambda v: v["auto"], "best split": lambda v: min(t for n, t in v.items() if n.startswith("split"))
             if any(n.startswith("split") for n in v) else v["dp"], "oracle": lambda v: min(v.values())}
    print(f"{len(by_shape)} shapes; geomean of DP's time over each pick's (> 1: faster than DP), min")
    for name, pick in picks.items():
        r = [v["dp"] / pick(v) for v in by_shape.values()]
        print(f"  {name:12s} {math.exp(sum(map(math.log, r)) / len(r)):.3f}  min {min(r):.3f}")


if __name__ == "__main__":
    sys.exit(main())
