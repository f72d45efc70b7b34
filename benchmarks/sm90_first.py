"""First look at the sm90 TMA + wgmma kernels (128x128x64, 128x256x64) on a GPU: checked against a
float64 reference, then timed against our sm80 auto and cuBLAS (torch) in the same process.

    python benchmarks/sm90_first.py --check        # small and edge shapes, both dtypes, every policy
    python benchmarks/sm90_first.py --time         # 8192^3 and a few corpus shapes, table last
    python benchmarks/sm90_first.py --check --time --tiles 128x256x64   # those tiles only (default: both)

Times: CUDA events around each launch sequence (ours: pack + main kernel + passes, what a call
enqueues), warm-up, median of REPS with p20/p80; TFLOP/s = 2mnk/t. cuBLAS: torch.mm(A, B,
out_dtype=float32) on the raw shape and zero-padded to multiples of 8.
"""

from __future__ import annotations

import argparse
import math
import statistics
import sys
import time

import torch

sys.path.insert(0, "tests")
from gpu_support import error_ratio  # noqa: E402

import numpy as np  # noqa: E402

from streamk.gpu import prepare  # noqa: E402
from streamk.schedule import FIXUP_POLICIES, Schedule  # noqa: E402
from streamk.shapes import GemmShape, TileShape  # noqa: E402

TILES = ("128x128x64", "128x256x64")
REPS = 50
# 8192^3, 4096^3, then shapes of the seeded 400-shape corpus (GPU-NOTES): rows 3 and 0 (small
# k) and the first two of over 2e10 flop/2 (rows 5 and 12)
SHAPES = [(8192, 8192, 8192), (4096, 4096, 4096), (1048, 4544, 1715), (4860, 2171, 199), (2924, 1622, 6463),
          (1324, 3869, 7318)]


ORDER = "grouped-8"  # Triton's GROUP_M rasterization (streamk.schedule.TILE_ORDERS)


def persistent_tiles(m: int, n: int, k: int, grid: int, tile: str, order: str = ORDER) -> Schedule:
    """Whole tiles on a persistent grid: CTA c runs tiles c, c + grid, c + 2 grid, ... (a user
    schedule: no split tile, so no fixup; the CTAs in flight work on one window of tile indices)."""
    t = TileShape(*(int(v) for v in tile.split("x")))
    tiles, iters = -(-m // t.bm) * -(-n // t.bn), -(-k // t.bk)
    grid = min(grid, tiles)
    order_ = np.concatenate([np.arange(c, tiles, grid) for c in range(grid)])
    units = np.stack([order_, np.zeros_like(order_), np.full_like(order_, iters)], axis=1)
    offsets = np.concatenate([[0], np.cumsum([len(range(c, tiles, grid)) for c in range(grid)])])
    return Schedule("persistent-tiles", GemmShape(m, n, k), t, units, offsets, tile_order=order)


def _time(fn, reps: int = REPS) -> tuple[float, float, float]:
    for _ in range(3):
        fn()
    torch.cuda.synchronize()
    ms = []
    for _ in range(reps):
        s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        s.record()
        fn()
        e.record()
        ms.append((s, e))
    torch.cuda.synchronize()
    t = sorted(s.elapsed_time(e) for s, e in ms)
    return statistics.median(t), t[len(t) // 5], t[4 * len(t) // 5]


def check(tiles: tuple[str, ...]) -> int:
    gen = torch.Generator(device="cuda").manual_seed(3)
    bad = 0
    for tile, dtype in ((t, d) for t in tiles for d in (torch.float16, torch.bfloat16)):
        for m, n, k in ((128, 128, 64), (256, 256, 512), (131, 257, 67), (1, 300, 77), (1000, 999, 1001),
                        (2048, 2048, 2048)):
            A = torch.randn(m, k, generator=gen, device="cuda").to(dtype)
            B = torch.randn(k, n, generator=gen, device="cuda").to(dtype)
            for decomp, opts in (("data-parallel", {}), ("stream-k", {}), ("fixed-split", {"splits": 2})):
                for policy in FIXUP_POLICIES:
                    C0 = torch.randn(m, n, generator=gen, device="cuda")
                    C = C0.clone()
                    try:
                        p = prepare(A, B, C, alpha=1.5, beta=0.5, schedule=decomp, fixup=policy, tile=tile, **opts)
                    except Exception as exc:  # noqa: BLE001 - print and go on
                        print(f"PLAN {tile} {dtype} {m}x{n}x{k} {decomp} {policy}: {str(exc)[:300]}")
                        bad += "compil" in str(exc)
                        continue
                    p.run()
                    torch.cuda.synchronize()
                    r = error_ratio(C, A, B, 1.5, 0.5, C0)
                    if not r <= 1:
                        bad += 1
                        print(f"BAD {tile} {dtype} {m}x{n}x{k} {decomp} {policy} err/bound {r:.3g} {p.launch.names}")
            print(f"checked {tile} {dtype} {m}x{n}x{k}", flush=True)
    print("check:", "FAILED" if bad else "ok", bad)
    return 1 if bad else 0


def _pad8(x: torch.Tensor) -> torch.Tensor:
    r, c = x.shape
    out = torch.zeros(-(-r // 8) * 8, -(-c // 8) * 8, device="cuda", dtype=x.dtype)
    out[:r, :c] = x
    return out


def time_all(tiles: tuple[str, ...]) -> None:
    gen = torch.Generator(device="cuda").manual_seed(4)
    rows = []
    for dtype in (torch.float16, torch.bfloat16):
        for m, n, k in SHAPES if dtype == torch.float16 else SHAPES[:2]:  # bf16: the two cubes
            A = torch.randn(m, k, generator=gen, device="cuda").to(dtype)
            B = torch.randn(k, n, generator=gen, device="cuda").to(dtype)
            flop = 2.0 * m * n * k
            row = {"shape": f"{m}x{n}x{k}", "dtype": str(dtype).removeprefix("torch.")}
            sms = torch.cuda.get_device_properties(0).multi_processor_count
            ours = {}
            for tile in tiles:  # auto on an sm90 tile runs the Target's grouped-8 order (streamk/target.py)
                tag = tile.split("x")[1]  # 128 or 256: the tile's width
                ours.update({f"dp{tag}_g8": dict(schedule="data-parallel", tile=tile, tile_order=ORDER),
                             f"pers{tag}_g8": dict(schedule=persistent_tiles(m, n, k, sms, tile)),
                             f"auto{tag}_g8": dict(tile=tile)})
            ours["sm80_auto"] = {}
            for name, kw in ours.items():
                C = torch.full((m, n), math.nan, device="cuda")
                p = prepare(A, B, C, **kw)
                p.run()
                torch.cuda.synchronize()
                r = error_ratio(C, A, B) if m * n * k <= 4096 ** 3 else float("nan")
                if m * n * k > 4096 ** 3:  # float64 reference on a row block only (time)
                    r = error_ratio(C[:256], A[:256], B)
                time.sleep(0.3)  # the 700 W cap: each timing from a cool start (LOG.md v15)
                med, lo, hi = _time(lambda: p.launch.enqueue(torch.cuda.current_stream().cuda_stream))
                row[name] = flop / med / 1e9
                row[name + "_err"] = r
                row[name + "_steps"] = "+".join(p.launch.names)
            Ap, Bp = _pad8(A), _pad8(B)
            for name, (a, b) in (("cublas_raw", (A, B)), ("cublas_pad", (Ap, Bp))):
                time.sleep(0.3)
                med, lo, hi = _time(lambda: torch.mm(a, b, out_dtype=torch.float32))
                row[name] = flop / med / 1e9
            rows.append(row)
            print(row, flush=True)
    print("\nTFLOP/s (median of 50; ours include pack passes; g8: grouped-8 tile order; 128 / 256: the "
          "sm90 tile's width; pers: whole tiles on a persistent grid)")
    ours = [n for n in rows[0] if not n.endswith(("_err", "_steps")) and n not in ("shape", "dtype", "cublas_raw",
                                                                                  "cublas_pad")]
    names = (*ours, "cublas_raw", "cublas_pad")
    print(f"{'shape':>16} {'dtype':>8} " + " ".join(f"{n:>12}" for n in names) + f" {'best90/cuBLASp8':>15} {'err/bound':>9}")
    for r in rows:
        err = max(r[n + "_err"] for n in ours)
        best = max(r[n] for n in ours if n != "sm80_auto")
        print(f"{r['shape']:>16} {r['dtype']:>8} " + " ".join(f"{r[n]:12.0f}" for n in names)
              + f" {best / r['cublas_pad']:15.3f} {err:9.3g}")


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--check", action="store_true")
    ap.add_argument("--time", action="store_true")
    ap.add_argument("--tiles", default=",".join(TILES), help=f"comma-separated sm90 tiles (default {','.join(TILES)})")
    args = ap.parse_args()
    tiles = tuple(args.tiles.split(","))
    rc = check(tiles) if args.check else 0
    if args.time:
        time_all(tiles)
    sys.exit(rc)
