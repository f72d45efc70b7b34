"""Ours and cuBLAS with C in FP32 and in the inputs' dtype, side by side, on aligned shapes.

    PYTHONPATH=. python3 benchmarks/out_dtype_probe.py --shapes 512x4096x512,... [--dtype bfloat16]
        [--linear] [--csv OUT.csv]
    PYTHONPATH=. python3 benchmarks/out_dtype_probe.py --corpus 60 --seed 4750 [--max-k 2048]

Per shape (B row-major, or with --linear torch's x @ W.t()): auto's launch (``prepare``, the
launch ``gemm()`` enqueues) writing an FP32 C and a 16-bit C, and torch.mm with FP32 out and 16-bit
out, each checked against float64 first, timed with CUDA-graph replays interleaved per shape (the
bench's method). Prints each shape's microseconds and the geomeans of ours / cuBLAS for like
outputs and for each side's faster output.
"""

from __future__ import annotations

import argparse
import math

import torch

from streamk.bench.harness import corpus, launch_error, time_interleaved, write_rows
from streamk.gpu import prepare


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--shapes", default="", help="MxNxK,...")
    ap.add_argument("--corpus", type=int, default=0, help="this many aligned corpus shapes (with --seed)")
    ap.add_argument("--seed", type=int, default=4750)
    ap.add_argument("--max-k", type=int, default=0, help="only corpus shapes of at most this k")
    ap.add_argument("--dtype", default="float16", choices=("float16", "bfloat16"))
    ap.add_argument("--linear", action="store_true", help="B = W.t() with W stored n x k")
    ap.add_argument("--csv", help="write every row here")
    args = ap.parse_args()
    shapes = [tuple(int(v) for v in s.split("x")) for s in args.shapes.split(",") if s]
    if args.corpus:
        shapes += [s for s in corpus(args.corpus, args.seed, "aligned") if not args.max_k or s[2] <= args.max_k]
    half = getattr(torch, args.dtype)
    stream = torch.cuda.Stream()
    rows = []
    print(f"{'shape':>18} {'ours32':>8} {'ours16':>8} {'cub32':>8} {'cub16':>8}  (us, median of graph replays)")
    for m, n, k in shapes:
        A = torch.randn(m, k, device="cuda").to(half)
        B = (torch.randn(n, k, device="cuda").t() if args.linear else torch.randn(k, n, device="cuda")).to(half)
        ref = A.double() @ B.double()
        C32 = torch.empty(m, n, device="cuda", dtype=torch.float32)
        C16 = torch.empty(m, n, device="cuda", dtype=half)
        ours32, ours16 = prepare(A, B, C32), prepare(A, B, C16)
        for p, out in ((ours32, C32), (ours16, C16)):
            err = launch_error(p, out, ref)
            if err > 1e-2:
                raise SystemExit(f"{m}x{n}x{k}: relative error {err:.2e} ({out.dtype})")
        fns = {"ours32": lambda: ours32.launch.enqueue(stream.cuda_stream),
               "ours16": lambda: ours16.launch.enqueue(stream.cuda_stream),
               "cub32": lambda: torch.mm(A, B, out_dtype=torch.float32), "cub16": lambda: torch.mm(A, B)}
        times = {name: t[0] * 1e3 for name, t in time_interleaved(fns, stream).items()}
        rows.append({"m": m, "n": n, "k": k, "dtype": args.dtype, "linear": args.linear,
                     "tile": str(ours32.schedule.tile), **{f"{name}_us": v for name, v in times.items()}})
        print(f"{m:>6}x{n}x{k:<6} " + " ".join(f"{times[x]:8.1f}" for x in ("ours32", "ours16", "cub32", "cub16")))

    def geo(f) -> float:
        return math.exp(sum(math.log(f(r)) for r in rows) / len(rows))

    print(f"\n{len(rows)} shapes, geomean cuBLAS time / ours (above 1: ours faster):")
    print(f"  FP32 out {geo(lambda r: r['cub32_us'] / r['ours32_us']):.3f}   "
          f"16-bit out {geo(lambda r: r['cub16_us'] / r['ours16_us']):.3f}   "
          f"each side's faster {geo(lambda r: min(r['cub32_us'], r['cub16_us']) / min(r['ours32_us'], r['ours16_us'])):.3f}"
          f"   ours FP32 -> 16-bit {geo(lambda r: r['ours32_us'] / r['ours16_us']):.3f}")
    if args.csv:
        write_rows(args.csv, rows)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
