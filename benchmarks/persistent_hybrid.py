"""Persistent DP + one-tile Stream-K on the sm90 tiles: is it what large GEMMs want?

Each of p = SMs CTAs runs its data-parallel tiles c, c + p, ... (the full waves, on persistent CTAs)
and then an even share of the leftover tiles' MAC iterations (Stream-K), built as a user Schedule
(Schedule.from_ctas) in the Target's grouped-8 tile order; timed against auto, persistent DP and
cuBLAS in one process (each alone after a pause where the GEMM is large, else interleaved graph
replays), every result checked against the first.

    python benchmarks/persistent_hybrid.py
    python benchmarks/persistent_hybrid.py --shapes 8192x8192x8192 --dtype bfloat16
"""

from __future__ import annotations

import argparse

import numpy as np
import torch

from streamk.gpu import prepare
from streamk.gpu.bench import cublas, time_alone, time_interleaved
from streamk.schedule import Schedule
from streamk.shapes import GemmShape, TileShape

SHAPES = [(8192, 8192, 8192), (7081, 4136, 3608), (5040, 5488, 2480), (4200, 5240, 5528), (2720, 4992, 7344)]
ORDER = "grouped-8"


def persistent_hybrid(shape: GemmShape, tile: TileShape, sms: int, policy: str) -> Schedule:
    """CTA c: whole tiles c, c + sms, ... of the full waves, then its even share (within one
    iteration) of the leftover tiles' iterations, walked backwards (under turnstile every wait
    then points at a lower CTA whose awaited unit is its first Stream-K unit: no chain)."""
    tiles = -(-shape.m // tile.bm) * -(-shape.n // tile.bn)
    ipt = -(-shape.k // tile.bk)
    waves, left = divmod(tiles, sms)
    dp = waves * sms
    ctas = [[(t, 0, ipt) for t in range(c, dp, sms)] for c in range(sms)]
    total = left * ipt
    starts = [dp * ipt + (total * c) // sms for c in range(sms + 1)]
    for c in range(sms):
        it, share = starts[c], []
        while it < starts[c + 1]:
            t, k = divmod(it, ipt)
            end = min(starts[c + 1], (t + 1) * ipt)
            share.append((t, k, end - t * ipt))
            it = end
        ctas[c] += share[::-1]  # walked backwards: the head a peer waits for first (auto's sk_backward)
    return Schedule.from_ctas("persistent-hybrid", shape, tile, [c for c in ctas if c], tile_order=ORDER, fixup=policy)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--shapes", default=",".join("x".join(map(str, s)) for s in SHAPES))
    ap.add_argument("--tiles", default="128x256x64,128x128x64")
    ap.add_argument("--dtype", default="float16")
    args = ap.parse_args()
    stream = torch.cuda.Stream()
    gen = torch.Generator(device="cuda").manual_seed(2)
    sms = torch.cuda.get_device_properties(0).multi_processor_count
    dtype = getattr(torch, args.dtype)
    table = []
    for text in args.shapes.split(","):
        m, n, k = map(int, text.split("x"))
        A = torch.randn(m, k, generator=gen, device="cuda").to(dtype)
        B = torch.randn(k, n, generator=gen, device="cuda").to(dtype)
        fns = {"cublas": cublas(A, B, torch.float32)}
        ref = fns["cublas"]()
        worst = {}
        for tile in args.tiles.split(","):
            t = TileShape(*map(int, tile.split("x")))
            variants = {
                f"auto#{tile}": dict(tile=tile),
                f"dp%{sms}#{tile}": dict(schedule="data-parallel", grid=sms, tile_order=ORDER, tile=tile),
                f"phyb#{tile}": dict(schedule=persistent_hybrid(GemmShape(m, n, k), t, sms, "turnstile")),
            }
            for name, opts in variants.items():
                C = torch.empty(m, n, device="cuda")
                p = prepare(A, B, C, **opts)
                p.run()
                torch.cuda.synchronize()
                worst[name] = float((C - ref).abs().max() / ref.abs().max())
                fns[name] = (lambda p=p: p.launch.enqueue(stream.cuda_stream))
        timer = time_alone if m * n * k >= 2**36 else time_interleaved
        times = timer(fns, stream)
        flop = 2 * m * n * k
        for name, (med, _, _) in times.items():
            table.append((text, name, flop / med / 1e9, times["cublas"][0] / med, worst.get(name, 0.0)))
    print(f"\n{'shape':>16} {'variant':<22} {'TFLOP/s':>8} {'vs cuBLAS':>9} {'rel err':>8}")
    for row in table:
        print(f"{row[0]:>16} {row[1]:<22} {row[2]:8.1f} {row[3]:9.3f} {row[4]:8.1e}")


if __name__ == "__main__":
    main()
