"""Run one GEMM a few times, for a profiler to pick a launch (e.g. ncu -k regex:streamk -s 2 -c 1).

    PYTHONPATH=. ncu ... python3 benchmarks/ncu_one.py 4096x4096x4096 [SCHEDULE [NARROW [DTYPE [TILE]]]]

NARROW is prepare()'s narrow mode (auto, always, never); DTYPE float16 (default), bfloat16, float64;
TILE prepare()'s tile (64, 128x64, ...; default: the schedule's choice).
"""

import sys

import torch

from streamk.gpu import prepare
from streamk.gpu.request import Tuning
from streamk.shapes import parse_triple

m, n, k = parse_triple(sys.argv[1], "shape")
dtype = getattr(torch, sys.argv[4] if len(sys.argv) > 4 else "float16")
A = torch.randn(m, k, device="cuda").to(dtype)
B = torch.randn(k, n, device="cuda").to(dtype)
C = torch.empty(m, n, device="cuda", dtype=torch.float64 if dtype == torch.float64 else torch.float32)
p = prepare(A, B, C, schedule=sys.argv[2] if len(sys.argv) > 2 else "data-parallel",
            _tuning=Tuning(sys.argv[3] if len(sys.argv) > 3 else "auto"),
            tile=(int(sys.argv[5]) if sys.argv[5].isdigit() else sys.argv[5]) if len(sys.argv) > 5 else None)
for _ in range(3):
    p.launch.enqueue(torch.cuda.current_stream().cuda_stream)
torch.cuda.synchronize()
print(p.schedule.grid, p.launch.names)
