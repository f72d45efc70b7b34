"""torch's Linear layout, x @ W.t() with W row-major (out_features x in_features), as decode,
small-batch inference and prefill call it: streamk's auto against cuBLAS (torch.mm with an FP32
output, as ours), FP16 in, FP32 out.

Per shape: a float64 check, then CUDA-graph replays interleaved with cuBLAS's (streamk.bench.harness's
method, medians). Prints a table and the geomean of cuBLAS time / ours; --csv writes the rows.

    PYTHONPATH=. python3 benchmarks/linear.py [--batches 1,2,4,8,16,32,64,512,2048] [--layers 8192:8192,...]
                                              [--fixup atomic] [--schedule stream-k] [--tile 64x128x64]
                                              [--csv out.csv]
"""

from __future__ import annotations

import argparse
import csv
import math

import torch

from streamk.gpu import prepare
from streamk.bench.harness import cublas, time_interleaved
from streamk.bench.parity import LLAMA_LAYERS

# (out_features, in_features): the Llama-2-7B / Llama-3-8B block's layers, its head and an odd one
LAYERS = [*LLAMA_LAYERS, (32000, 4096), (4097, 4095)]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--batches", default="1,2,4,8,16,32,64,512,2048", help="rows of x (comma-separated)")
    ap.add_argument("--layers", help="OUT:IN,... (out_features:in_features) instead of the Llama layers")
    ap.add_argument("--fixup", help="run auto's Schedules under this fixup policy (e.g. atomic: not deterministic)")
    ap.add_argument("--schedule", default="auto", help="the decomposition (default auto)")
    ap.add_argument("--tile", help="pin the tile, e.g. 64x128x64 (default: auto's pick and orientation)")
    ap.add_argument("--csv", help="write the rows here")
    args = ap.parse_args()
    stream = torch.cuda.Stream()
    gen = torch.Generator(device="cuda").manual_seed(0)
    rows = []
    print(f"{'m x n x k':>18} {'cuBLAS us':>9} {'ours us':>8} {'cuBLAS/ours':>11} {'relerr':>8}  transposed tile   steps")
    layers = [tuple(map(int, pair.split(":"))) for pair in args.layers.split(",")] if args.layers else LAYERS
    for m in (int(b) for b in args.batches.split(",")):
        for n, k in layers:
            x = torch.randn(m, k, generator=gen, device="cuda").half()
            W = torch.randn(n, k, generator=gen, device="cuda").half()
            out = torch.empty(m, n, device="cuda")
            p = prepare(x, W.t(), out, fixup=args.fixup, schedule=args.schedule, tile=args.tile)
            p.run()
            torch.cuda.synchronize()
            ref = x.double() @ W.double().t()
            err = float((out.double() - ref).norm() / ref.norm())
            t = time_interleaved({"cublas": cublas(x, W.t(), torch.float32),
                                  "ours": lambda: p.launch.enqueue(stream.cuda_stream)}, stream)
            row = dict(m=m, n=n, k=k, cublas_us=t["cublas"][0] * 1e3, ours_us=t["ours"][0] * 1e3, relerr=err,
                       transposed=p.transposed, tile=str(p.schedule.tile), steps="+".join(p.launch.names))
            rows.append(row)
            print(f"{m:>5}x{n:>6}x{k:>5} {row['cublas_us']:9.1f} {row['ours_us']:8.1f} "
                  f"{row['cublas_us'] / row['ours_us']:11.2f} {err:8.1e}  {str(p.transposed):10} {row['tile']:8} "
                  f"{row['steps']}", flush=True)
    ratios = [r["cublas_us"] / r["ours_us"] for r in rows]
    print(f"\n{len(rows)} shapes: cuBLAS time / ours geomean {math.exp(sum(map(math.log, ratios)) / len(ratios)):.3f} "
          f"(min {min(ratios):.2f}, max {max(ratios):.2f}); max relerr {max(r['relerr'] for r in rows):.1e}")
    if args.csv:
        with open(args.csv, "w", newline="") as f:
            w = csv.DictWriter(f, fieldnames=list(rows[0]))
            w.writeheader()
            w.writerows(rows)


if __name__ == "__main__":
    main()
