"""What an operand layout costs: the same variants with A, B or C column-major, and the
transposed problem (C^T = B^T A^T on the operands' views), beside all row-major.

    PYTHONPATH=. python3 benchmarks/layout_probe.py --shapes 135x6880x7752,3471x160x2064 \
        --variants "auto#128x128x64;auto#128x192x64" [--csv OUT.csv]

FP16 in, FP32 out, CUDA-graph replays interleaved per shape (the bench's method); every launch
is checked against a float64 product before it is timed.
"""

from __future__ import annotations

import argparse
import sys

import torch

from streamk.bench.harness import launch_error, time_interleaved, write_rows
from streamk.bench.variants import variant
from streamk.gpu import prepare
from streamk.gpu.runtime.device import current

LAYOUTS = ("row", "A col", "B col", "C col", "transposed")


def col_major(x: torch.Tensor) -> torch.Tensor:
    """The same matrix stored column by column."""
    return x.t().contiguous().t()


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--shapes", required=True, help="MxNxK,...")
    ap.add_argument("--variants", default="auto", help="`streamk bench` variants, ';'-separated")
    ap.add_argument("--csv", help="write every row here")
    args = ap.parse_args()
    dev = current()
    stream = torch.cuda.Stream()
    rows = []
    print(f"device {dev.name} ({dev.arch}, {dev.sms} SMs); us per call, median (CUDA graphs)")
    for text in args.shapes.split(","):
        m, n, k = (int(v) for v in text.split("x"))
        A = torch.randn(m, k, device="cuda").half()
        B = torch.randn(k, n, device="cuda").half()
        ref = A.double() @ B.double()
        operands = {
            "row": (A, B, torch.empty(m, n, device="cuda")),
            "A col": (col_major(A), B, torch.empty(m, n, device="cuda")),
            "B col": (A, col_major(B), torch.empty(m, n, device="cuda")),
            "C col": (A, B, col_major(torch.empty(m, n, device="cuda"))),
        }
        C_t = torch.empty(m, n, device="cuda")
        operands["transposed"] = (B.t(), A.t(), C_t.t())
        fns, keep = {"cublas32": lambda: torch.mm(A, B, out_dtype=torch.float32)}, {}
        for name in (v for v in args.variants.split(";") if v):
            for layout in LAYOUTS:
                a, b, c = operands[layout]
                try:
                    p = prepare(a, b, c, **variant(name, lambda: dev.sms))
                except Exception as exc:
                    print(f"  {name} [{layout}]: {type(exc).__name__}: {exc}")
                    continue
                err = launch_error(p, C_t if layout == "transposed" else c, ref)
                if err > 1e-3:
                    print(f"  {name} [{layout}]: relative error {err:.2e}, not timed")
                    continue
                keep[(name, layout)] = p
                fns[(name, layout)] = (lambda p=p: p.launch.enqueue(stream.cuda_stream))
        times = time_interleaved(fns, stream)
        cub = times["cublas32"][0] * 1e3
        print(f"\n{m}x{n}x{k}: cuBLAS (FP32 out) {cub:.1f} us")
        print(f"  {'variant':26} " + " ".join(f"{lay:>16}" for lay in LAYOUTS))
        for name in (v for v in args.variants.split(";") if v):
            cells = []
            for layout in LAYOUTS:
                p = keep.get((name, layout))
                if p is None:
                    cells.append(f"{'-':>16}")
                    continue
                us = times[(name, layout)][0] * 1e3
                s = p.schedule
                cells.append(f"{us:6.1f} {s.tile.bm}x{s.tile.bn}/{s.grid:<4d}"[:16].rjust(16))
                rows.append({"shape": text, "variant": name, "layout": layout, "tile": f"{s.tile.bm}x{s.tile.bn}",
                             "grid": s.grid, "measured_us": us, "cublas_us": cub})
            print(f"  {name:26} " + " ".join(cells))
    if args.csv:
        write_rows(args.csv, rows)
    return 0


if __name__ == "__main__":
    sys.exit(main())
