"""Which kernels cuBLAS runs for a few shapes (torch.profiler), with their device times: the tile,
cluster and split it chose, to set beside ours.

    PYTHONPATH=. python3 benchmarks/cublas_kernels.py --shapes 168x3712x2088,408x4144x720 [--dtype float16]
"""

from __future__ import annotations

import argparse
import sys

import torch
from torch.profiler import ProfilerActivity, profile


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--shapes", required=True, help="MxNxK,...")
    ap.add_argument("--dtype", default="float16", choices=("float16", "bfloat16", "float64"))
    args = ap.parse_args()
    dt = getattr(torch, args.dtype)
    for text in args.shapes.split(","):
        m, n, k = (int(v) for v in text.split("x"))
        A = torch.randn(m, k, device="cuda", dtype=dt)
        B = torch.randn(k, n, device="cuda", dtype=dt)
        W = B.t().contiguous()  # Linear's layout: x @ W.t()
        calls = {"A@B half-out": lambda: torch.mm(A, B),
                 "A@B fp32-out": lambda: torch.mm(A, B, out_dtype=torch.float32) if dt != torch.float64 else None,
                 "x@W.t() half-out": lambda: torch.nn.functional.linear(A, W)}
        for name, fn in calls.items():
            for _ in range(5):
                fn()
            torch.cuda.synchronize()
            with profile(activities=[ProfilerActivity.CUDA]) as prof:
                for _ in range(20):
                    fn()
                torch.cuda.synchronize()
            stats = {}
            for ev in prof.events():
                if ev.device_type.name == "CUDA":
                    stats.setdefault(ev.name, []).append(ev.device_time)
            for kname, ts in stats.items():
                ts.sort()
                print(f"{text:>16} {name:18} {ts[len(ts) // 2]:7.1f} us x{len(ts):<3} {kname[:150]}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
