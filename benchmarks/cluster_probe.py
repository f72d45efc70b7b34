"""Where the sm90 two-CTA clusters (gpu/clusters.py) gain or lose: each launch timed without
clusters (+nomc), in clusters that share B (the default) and in clusters that share nothing (the
pairing flags zeroed but for one cluster, so the launch keeps its cluster dims: the cost of the
cluster launch alone), in one process on the same inputs, each checked against the first.

    python benchmarks/cluster_probe.py                      # 8192^3, 4096^3 and corpus shapes, both tiles
    python benchmarks/cluster_probe.py --shapes 4096x4096x4096 --tiles 128x256x64

Times: CUDA-graph replays interleaved round-robin (streamk bench's method), shapes over 1 ms each
alone after a pause; TFLOP/s = 2mnk/t.
"""

from __future__ import annotations

import argparse
import math
from contextlib import contextmanager

import numpy as np
import torch

from streamk.gpu import plan as plan_module
from streamk.gpu import prepare
from streamk.gpu.bench import time_alone, time_interleaved
from streamk.gpu.request import Tuning

SHAPES = [(8192, 8192, 8192), (4096, 4096, 4096), (4096, 4096, 1024), (2924, 1624, 6464), (1048, 4544, 1720),
          (4864, 2176, 200)]
VARIANTS = {  # name -> prepare options
    "dp": {"schedule": "data-parallel", "tile_order": "grouped-8"},
    "dp%132": {"schedule": "data-parallel", "tile_order": "grouped-8", "grid": 132},
    "auto": {},
}


@contextmanager
def unshared_clusters():
    """Plans built inside keep their cluster dims, but only their first paired cluster shares B."""
    real = plan_module.multicast_pairs

    def first_only(table):
        pairs = real(table)
        first = np.flatnonzero(pairs)[:1]
        pairs[:] = 0
        pairs[first] = 1
        return pairs

    plan_module.multicast_pairs = first_only
    try:
        yield
    finally:
        plan_module.multicast_pairs = real


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--shapes", default=",".join("x".join(map(str, s)) for s in SHAPES))
    ap.add_argument("--tiles", default="128x128x64,128x256x64")
    args = ap.parse_args()
    stream = torch.cuda.Stream()
    gen = torch.Generator(device="cuda").manual_seed(1)
    rows = []
    for text in args.shapes.split(","):
        m, n, k = map(int, text.split("x"))
        A = torch.randn(m, k, generator=gen, device="cuda").half()
        B = torch.randn(k, n, generator=gen, device="cuda").half()
        for tile in args.tiles.split(","):
            fns, outs, ref = {}, {}, None
            for vname, opts in VARIANTS.items():
                for how in ("nomc", "mc", "cl"):
                    C = torch.empty(m, n, device="cuda")
                    if how == "cl":
                        with unshared_clusters():  # another Tuning key than mc's (no pack: pdl changes nothing)
                            p = prepare(A, B, C, tile=tile, **opts, _tuning=Tuning(multicast=True, pdl=True))
                    else:
                        p = prepare(A, B, C, tile=tile, **opts, _tuning=Tuning(multicast=how == "mc"))
                    p.run()
                    torch.cuda.synchronize()
                    cluster = max(st.cluster for st in p.launch.steps)
                    if how != "nomc" and cluster == 1:
                        continue  # nothing paired: the same launch as nomc
                    if ref is None:
                        ref = C.clone()
                    key = f"{vname}+{how}"
                    outs[key] = (torch.equal(C, ref) or float((C - ref).abs().max() / ref.abs().max()) < 1e-5, cluster)
                    fns[key] = (lambda p=p: p.launch.enqueue(stream.cuda_stream))
            timer = time_alone if m * n * k >= 2**36 else time_interleaved
            times = timer(fns, stream)
            flop = 2 * m * n * k
            for key, (med, _, _) in times.items():
                rows.append((text, tile, key, flop / med / 1e9, outs[key]))
                print(f"{text:>16} {tile:>10} {key:<12} {flop / med / 1e9:7.1f} TFLOP/s  cluster {outs[key][1]} "
                      f"ok {outs[key][0]}", flush=True)
    print("\nshape tile variant: mc/nomc cl/nomc (time ratios < 1: faster than no clusters)")
    by = {(s, t, k): v for s, t, k, v, _ in rows}
    for (s, t, k), v in by.items():
        if k.endswith("+nomc"):
            base = k[: -len("+nomc")]
            mc, cl = by.get((s, t, base + "+mc")), by.get((s, t, base + "+cl"))
            print(f"{s:>16} {t:>10} {base:<7} mc {v / mc if mc else math.nan:5.3f}  cl {v / cl if cl else math.nan:5.3f}")


if __name__ == "__main__":
    main()
