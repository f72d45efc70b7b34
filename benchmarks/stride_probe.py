"""What rows that are 16-byte but not 64-byte aligned cost the sm90 kernels, and what packing them saves.

    PYTHONPATH=. python3 benchmarks/stride_probe.py [--shapes MxNxK,...] [--variants "auto;..."]

For each shape (FP16 in, FP32 out, CUDA-graph replays interleaved per shape, the bench's method):
cuBLAS; ours on the operands as they are (B's rows n * 2 bytes, A's k * 2); ours with B starting one
element off its allocation (2-byte aligned, so the pack pass copies B into 128-byte rows first);
the same for A; and ours on n and k rounded up to multiples of 64 (every row on a 128-byte line, no
pack: what the mainloop costs where rows are aligned, for 1-3% more work).
"""

from __future__ import annotations

import argparse
import sys

import torch

from streamk.bench.harness import time_interleaved
from streamk.bench.variants import variant
from streamk.gpu import prepare
from streamk.gpu.runtime.device import current

SHAPES = ((2841, 1448, 6280), (3461, 3000, 6304), (1996, 2136, 7688), (163, 7056, 5696), (6290, 720, 1784),
          (1182, 2104, 5288), (975, 1400, 2056), (512, 1000, 1000), (2048, 2056, 2048))


def offset_copy(x: torch.Tensor) -> torch.Tensor:
    """``x`` in a buffer one element further on: same values and strides, a 2-byte aligned start."""
    buf = torch.empty(x.numel() + 1, dtype=x.dtype, device=x.device)
    view = buf[1:].view(x.shape)
    view.copy_(x)
    return view


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--shapes", help="MxNxK,... (default: a few aligned-corpus shapes)")
    ap.add_argument("--variants", default="auto", help="`streamk bench` variants, ';'-separated")
    args = ap.parse_args()
    shapes = [tuple(int(v) for v in s.split("x")) for s in args.shapes.split(",")] if args.shapes else SHAPES
    dev = current()
    stream = torch.cuda.Stream()
    print(f"device {dev.name} ({dev.arch}, {dev.sms} SMs); us per call, median (CUDA graphs)")
    for text in args.variants.split(";"):
        kw = variant(text, lambda: dev.sms)
        print(f"\n== {text}")
        print(f"{'shape':>18} {'cublas':>9} {'as is':>9} {'B packed':>9} {'A packed':>9} {'rows@128B':>9}  tile/grid as is")
        for m, n, k in shapes:
            A = torch.randn(m, k, device="cuda").half()
            B = torch.randn(k, n, device="cuda").half()
            m64, n64, k64 = m, -(-n // 64) * 64, -(-k // 64) * 64
            A64 = torch.randn(m64, k64, device="cuda").half()
            B64 = torch.randn(k64, n64, device="cuda").half()
            cases = {"cublas": lambda: torch.mm(A, B, out_dtype=torch.float32)}
            keep = []
            for name, (a, b) in {"as is": (A, B), "B packed": (A, offset_copy(B)), "A packed": (offset_copy(A), B),
                                 "rows@128B": (A64, B64)}.items():
                p = prepare(a, b, **kw)
                keep.append((a, b, p))
                cases[name] = (lambda p=p: p.launch.enqueue(stream.cuda_stream))
            times = time_interleaved(cases, stream)
            s = keep[0][2].schedule
            print(f"{f'{m}x{n}x{k}':>18} " + " ".join(f"{times[c][0] * 1e3:9.1f}" for c in cases)
                  + f"  {s.tile.bm}x{s.tile.bn}x{s.tile.bk} grid {s.grid} {'+'.join(keep[1][2].launch.names)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
