"""First look at the sm90 TMA + wgmma kernels (128x128x64, 128x256x64) on a GPU: checked against a
float64 reference, then timed against our sm80 auto and cuBLAS (torch) in the same process.

    python benchmarks/sm90_first.py --check        # small and edge shapes, both dtypes, every policy
    python benchmarks/sm90_first.py --time         # 8192^3 and a few corpus shapes, table last
    python benchmarks/sm90_first.py --check --time --tiles 128x256x64   # those tiles only (default: both)
    python benchmarks/sm90_first.py --time --shapes 4096x4096x1024,2048x2048x2048   # these FP16 shapes

Times: each variant's launch sequence (ours: pack + main kernel + passes, what a call enqueues)
as `streamk bench` times it: CUDA-graph replays interleaved round-robin, median of 50 (8192^3: each
alone after a pause); TFLOP/s = 2mnk/t. cuBLAS: torch.mm(A, B, out_dtype=float32) on the raw shape
and zero-padded to multiples of 8.
"""

from __future__ import annotations

import argparse
import math
import sys

import torch

sys.path.insert(0, "tests")
from gpu_support import error_ratio  # noqa: E402


from streamk.gpu import prepare  # noqa: E402
from streamk.gpu.bench import cublas, time_alone, time_interleaved  # noqa: E402
from streamk.schedule import FIXUP_POLICIES  # noqa: E402

TILES = ("128x128x64", "128x256x64")
# 8192^3, 4096^3, then shapes of the seeded 400-shape corpus (GPU-NOTES): rows 3 and 0 (small
# k) and the first two of over 2e10 flop/2 (rows 5 and 12)
SHAPES = [(8192, 8192, 8192), (4096, 4096, 4096), (1048, 4544, 1715), (4860, 2171, 199), (2924, 1622, 6463),
          (1324, 3869, 7318)]


ORDER = "grouped-8"  # Triton's GROUP_M rasterization (streamk.schedule.TILE_ORDERS)


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


def time_all(tiles: tuple[str, ...], shapes: list[tuple[int, int, int]] | None = None) -> None:
    gen = torch.Generator(device="cuda").manual_seed(4)
    rows = []
    for dtype in (torch.float16, torch.bfloat16) if shapes is None else (torch.float16,):
        for m, n, k in shapes or (SHAPES if dtype == torch.float16 else SHAPES[:2]):  # bf16: the two cubes
            A = torch.randn(m, k, generator=gen, device="cuda").to(dtype)
            B = torch.randn(k, n, generator=gen, device="cuda").to(dtype)
            flop = 2.0 * m * n * k
            row = {"shape": f"{m}x{n}x{k}", "dtype": str(dtype).removeprefix("torch.")}
            sms = torch.cuda.get_device_properties(0).multi_processor_count
            ours = {}
            for tile in tiles:  # auto on an sm90 tile runs the Target's grouped-8 order (streamk/target.py)
                tag = tile.split("x")[1]  # 128 or 256: the tile's width
                ours.update({f"dp{tag}_g8": dict(schedule="data-parallel", tile=tile, tile_order=ORDER),
                             f"pers{tag}_g8": dict(schedule="data-parallel", grid=sms, tile=tile, tile_order=ORDER),
                             f"sk{tag}_g8": dict(schedule="stream-k", tile=tile, tile_order=ORDER),
                             f"auto{tag}_g8": dict(tile=tile)})
            ours["sm80_auto"] = {}
            fns = {}
            for name, kw in ours.items():
                C = torch.full((m, n), math.nan, device="cuda")
                p = prepare(A, B, C, **kw)
                p.run()
                torch.cuda.synchronize()
                r = error_ratio(C, A, B) if m * n * k <= 4096 ** 3 else float("nan")
                if m * n * k > 4096 ** 3:  # float64 reference on a row block only (time)
                    r = error_ratio(C[:256], A[:256], B)
                row[name + "_err"] = r
                row[name + "_steps"] = "+".join(p.launch.names)
                fns[name] = (lambda launch: lambda: launch.enqueue(torch.cuda.current_stream().cuda_stream))(p.launch)
            Ap, Bp = _pad8(A), _pad8(B)
            fns["cublas_raw"] = cublas(A, B, torch.float32)
            fns["cublas_pad"] = cublas(Ap, Bp, torch.float32)
            # interleaved graph replays (streamk.gpu.bench), or each alone after a pause where one call
            # is long enough to meet the 700 W cap (LOG.md v15)
            stream = torch.cuda.Stream()  # graphs are captured on a side stream
            times = time_alone(fns, stream) if m * n * k >= 8192 ** 3 else time_interleaved(fns, stream)
            for name, (med, _, _) in times.items():
                row[name] = flop / med / 1e9
            rows.append(row)
            print(row, flush=True)
    print("\nTFLOP/s (median of 50 interleaved graph replays; ours include pack passes; g8: grouped-8 tile order; 128 / 256: the "
          "sm90 tile's width; pers: whole tiles on a persistent grid; sk: basic Stream-K on every SM)")
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
    ap.add_argument("--shapes", help="comma-separated MxNxK to time in FP16 (default: the cubes and four corpus "
                    "shapes, the cubes in BF16 too)")
    args = ap.parse_args()
    tiles = tuple(args.tiles.split(","))
    rc = check(tiles) if args.check else 0
    if args.time:
        time_all(tiles, [tuple(int(v) for v in s.split("x")) for s in args.shapes.split(",")] if args.shapes else None)
    sys.exit(rc)
