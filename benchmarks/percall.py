"""Host time of an eager ``streamk.gpu.gemm`` call against ``torch.matmul``, as a user calls them.

Per shape: the wall time of the first call of a new shape (every kernel module compiled and
loaded beforehand), and the median per-call wall time of N back-to-back calls (device
work included, so large shapes show device time; the host cost shows on small ones), each
followed by one synchronization for the whole loop. FP16 inputs; torch.matmul returns FP16,
gemm FP32 (torch.mm(out_dtype=float32) is shown too where this torch has it).

    PYTHONPATH=. python3 benchmarks/percall.py [--calls 2000]
"""

from __future__ import annotations

import argparse
import statistics
import time

import torch

from streamk.gpu import cache_info, gemm
from streamk.gpu.runtime.device import current
from streamk.gpu.catalogue.source import units

SHAPES = [(64, 64, 64), (128, 128, 128), (256, 256, 256), (1000, 999, 1001), (1024, 1024, 1024),
          (4096, 4096, 4096)]


def per_call(fn, calls: int, rounds: int = 5) -> float:
    """Median over rounds of (wall time of ``calls`` calls + one sync) / calls, in microseconds."""
    fn()
    torch.cuda.synchronize()
    out = []
    for _ in range(rounds):
        start = time.perf_counter()
        for _ in range(calls):
            fn()
        torch.cuda.synchronize()
        out.append((time.perf_counter() - start) / calls * 1e6)
    return statistics.median(out)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--calls", type=int, default=2000, help="calls per round for the small shapes")
    ap.add_argument("--profile", action="store_true", help="also profile 20 first calls of new shapes (cProfile)")
    args = ap.parse_args()
    warm = torch.randn(300, 256, device="cuda").half(), torch.randn(256, 128, device="cuda").half()
    for tile in (None, 64, 128, "128x256", "32x32", "32x64", "128x64", "64x128"):
        gemm(*warm, tile=tile)  # compile and load every module the timed shapes use, outside the timings
    gemm(warm[0].t().contiguous().t(), warm[1])  # the pack pass
    dev = current()
    for variants in units(dev.arch).values():  # every module loaded: first calls time planning, not loading
        for v in variants:
            if v.role != "test":
                dev.function(v.name)
    torch.cuda.synchronize()
    try:
        torch.mm(*warm, out_dtype=torch.float32)
        mm_out = True
    except TypeError:
        mm_out = False
    print(f"{'shape':>16} {'first us':>9} {'gemm us':>9} {'matmul us':>10} {'mm->f32 us':>11} {'ratio':>6}")
    for m, n, k in SHAPES:
        A, B = torch.randn(m, k, device="cuda").half(), torch.randn(k, n, device="cuda").half()
        torch.cuda.synchronize()
        start = time.perf_counter()
        gemm(A, B)
        first = (time.perf_counter() - start) * 1e6
        calls = args.calls if m * n * k <= 2**27 else 50
        ours = per_call(lambda: gemm(A, B), calls)
        theirs = per_call(lambda: torch.matmul(A, B), calls)
        f32 = per_call(lambda: torch.mm(A, B, out_dtype=torch.float32), calls) if mm_out else float("nan")
        print(f"{f'{m}x{n}x{k}':>16} {first:>9.1f} {ours:>9.2f} {theirs:>10.2f} {f32:>11.2f} {ours / theirs:>6.2f}")
    firsts = []
    for i in range(40):  # new shapes of every size class: the first call's host time, lanes already grown
        m, n, k = 200 + 37 * i, 300 + 53 * i, 256 + 61 * i
        A, B = torch.randn(m, k, device="cuda").half(), torch.randn(k, n, device="cuda").half()
        torch.cuda.synchronize()
        start = time.perf_counter()
        gemm(A, B)
        firsts.append((time.perf_counter() - start) * 1e6)
        torch.cuda.synchronize()
    q = statistics.quantiles(firsts[10:], n=10)
    print(f"first call of a new shape (30 shapes 570x830x866 .. 1643x2367x2635, after 10 more): median "
          f"{statistics.median(firsts[10:]):.0f} us, p10 {q[0]:.0f}, p90 {q[-1]:.0f}")
    print(cache_info())
    if args.profile:
        import cProfile
        import pstats

        new = [(torch.randn(m, k, device="cuda").half(), torch.randn(k, n, device="cuda").half())
               for m, n, k in ((300 + 7 * i, 200 + 5 * i, 500 + 11 * i) for i in range(20))]
        torch.cuda.synchronize()
        prof = cProfile.Profile()
        prof.enable()
        for A, B in new:
            gemm(A, B)
        prof.disable()
        pstats.Stats(prof).sort_stats("tottime").print_stats(25)


if __name__ == "__main__":
    main()
