"""Every candidate of a few shapes, measured beside the calibrated simulator's prediction and cuBLAS.

    PYTHONPATH=. python3 benchmarks/candidates_probe.py --shapes 168x3712x2088,408x4144x720 [--extra "..."]
        [--dtype bfloat16] [--linear] [--only] [--transposed "..."] [--csv OUT.csv]

For each shape (FP16 or BF16 in, FP32 out, 16-byte aligned rows; B row-major, or with --linear
torch's Linear layout x @ W.t(), W stored n x k; CUDA-graph replays interleaved per shape,
the bench's method): cuBLAS at its faster output dtype, auto, and every candidate ``streamk
simulate --target`` lists (calibrate.candidates) plus ``--extra`` variants, each with the model's
microseconds and the measured ones, each launch checked against float64 first (``--only``: auto
and ``--extra`` alone; ``--transposed``: more variants run as C^T = B^T A^T on the operands'
transposed views, named ``T:variant``). Shows where the model and the kernels part: a candidate the
model ranks badly but that runs fast, or one whose kernel runs far slower than its prediction.
"""

from __future__ import annotations

import argparse
import sys

import torch

from streamk.bench.harness import launch_error, time_interleaved, write_rows
from streamk.bench.variants import variant
from streamk.calibrate.candidates import candidates, predicted
from streamk.gpu import prepare
from streamk.gpu.decide.operands import leading_dim
from streamk.gpu.runtime.device import current
from streamk.shapes import GemmShape
from streamk.target import preset


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--shapes", required=True, help="MxNxK,...")
    ap.add_argument("--extra", default="", help="more `streamk bench` variants, ';'-separated")
    ap.add_argument("--target", default="h200", help="the preset whose calibration predicts")
    ap.add_argument("--dtype", default="float16", choices=("float16", "bfloat16"), help="the inputs")
    ap.add_argument("--linear", action="store_true", help="B = W.t() with W stored n x k (x @ W.t())")
    ap.add_argument("--only", action="store_true", help="time auto and --extra only, not every candidate")
    ap.add_argument("--transposed", default="", help="variants run on the transposed problem, ';'-separated")
    ap.add_argument("--csv", help="write every row here")
    args = ap.parse_args()
    dev = current()
    target = preset(args.target)
    stream = torch.cuda.Stream()
    rows = []
    print(f"device {dev.name} ({dev.arch}, {dev.sms} SMs); us per call, median (CUDA graphs)")
    for text in args.shapes.split(","):
        m, n, k = (int(v) for v in text.split("x"))
        A = torch.randn(m, k, device="cuda").to(getattr(torch, args.dtype))
        B = (torch.randn(n, k, device="cuda").t() if args.linear else torch.randn(k, n, device="cuda")).to(A.dtype)
        C = torch.empty(m, n, device="cuda", dtype=torch.float32)
        ref = A.double() @ B.double()
        auto = prepare(A, B, C)
        cands = candidates(GemmShape(m, n, k), args.dtype, target, auto.schedule)
        names = ["auto"] + ([] if args.only else [c.variant for c in cands if c.variant != "auto"])
        names += [v for v in args.extra.split(";") if v and v not in names]
        fns = {"cublas32": lambda: torch.mm(A, B, out_dtype=torch.float32), "cublas16": lambda: torch.mm(A, B)}
        keep = {}
        # (label, how to prepare it): the direct variants, then those run as C^T = B^T A^T (C written by columns)
        runs = [(name, lambda name=name: auto if name == "auto" else prepare(A, B, C, **variant(name, lambda: dev.sms)))
                for name in names]
        runs += [("T:" + name, lambda name=name: prepare(B.t(), A.t(), C.t(), **variant(name, lambda: dev.sms)))
                 for name in args.transposed.split(";") if name]
        for label, make in runs:
            try:
                p = make()
            except Exception as exc:  # a variant this shape refuses: shown, not timed
                print(f"  {label}: {type(exc).__name__}: {exc}")
                continue
            err = launch_error(p, C, ref)
            if err > 1e-3:  # a wrong answer is reported, not timed
                print(f"  {label}: relative error {err:.2e}")
                continue
            keep[label] = p
            fns[label] = (lambda p=p: p.launch.enqueue(stream.cuda_stream))
        times = time_interleaved(fns, stream)
        cub = min(times["cublas32"][0], times["cublas16"][0]) * 1e3
        print(f"\n{m}x{n}x{k}: cuBLAS {cub:.1f} us (FP32 out {times['cublas32'][0] * 1e3:.1f})")
        print(f"  {'variant':38} {'tile':>10} {'grid':>5} {'cl':>2} {'pred':>7} {'meas':>7} {'meas/pred':>9} {'cub/meas':>8}")
        for name, p in sorted(keep.items(), key=lambda kv: times[kv[0]][0]):
            s = p.schedule
            d = p._plan.decision
            ldb = leading_dim(d.b, "B", d.layout, d.widths[1], d.spec)
            pred = predicted(s, args.dtype, target, d.packed, ldb * d.spec.itemsize)
            us = times[name][0] * 1e3
            tile = f"{s.tile.bm}x{s.tile.bn}x{s.tile.bk}"
            cluster = max(st.cluster for st in p.launch.steps)  # the CTAs a cluster the launch bound
            print(f"  {name:38} {tile:>10} {s.grid:5d} {cluster:2d} {pred or float('nan'):7.1f} {us:7.1f} "
                  f"{us / pred if pred else float('nan'):9.2f} {cub / us:8.2f}")
            rows.append({"shape": f"{m}x{n}x{k}", "dtype": args.dtype, "linear": args.linear, "variant": name,
                         "tile": tile, "grid": s.grid, "tile_order": s.tile_order, "cluster": str(d.cluster),
                         "launched_cluster": cluster,
                         "predicted_us": pred, "measured_us": us, "cublas_us": cub})
    if args.csv:
        write_rows(args.csv, rows)
    return 0


if __name__ == "__main__":
    sys.exit(main())
