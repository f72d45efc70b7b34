"""Run one GEMM a few times, for a profiler to pick a launch (e.g. ncu -k regex:streamk -s 2 -c 1).

    PYTHONPATH=. ncu ... python3 benchmarks/ncu_one.py 4096x4096x4096 [SCHEDULE [NARROW]]

NARROW is prepare()'s narrow mode (auto, always, never).
"""

import sys

import torch

from streamk.gpu.api import prepare
from streamk.shapes import parse_triple

m, n, k = parse_triple(sys.argv[1], "shape")
A = torch.randn(m, k, device="cuda").half()
B = torch.randn(k, n, device="cuda").half()
C = torch.empty(m, n, device="cuda")
p = prepare(A, B, C, schedule=sys.argv[2] if len(sys.argv) > 2 else "data-parallel",
            narrow=sys.argv[3] if len(sys.argv) > 3 else "auto")
for _ in range(3):
    p.launch.enqueue(torch.cuda.current_stream().cuda_stream)
torch.cuda.synchronize()
print(p.schedule.grid, p.launch.names)
