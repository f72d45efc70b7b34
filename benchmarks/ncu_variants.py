"""Run one GEMM's launches for a profiler: each `streamk bench` variant three times (checked against
float64), then cuBLAS (FP32 out) three times, so one ncu run sees ours beside cuBLAS (LOG.md v121).

    PYTHONPATH=. ncu --clock-control none -k regex:"streamk_sm90|nvjet" \\
        --metrics lts__t_sectors_srcunit_tex_op_read.sum,gpu__time_duration.sum \\
        python3 benchmarks/ncu_variants.py 2609x2360x792 "auto;auto+nomc"

FP16 inputs, row-major A and B, FP32 C. ``benchmarks/ncu_one.py`` runs a single launch of ours.
"""

import sys

import torch

from streamk.bench.variants import variant
from streamk.gpu import prepare
from streamk.gpu.runtime.device import current
from streamk.shapes import parse_triple

m, n, k = parse_triple(sys.argv[1], "shape")
A = torch.randn(m, k, device="cuda").half()
B = torch.randn(k, n, device="cuda").half()
C = torch.empty(m, n, device="cuda", dtype=torch.float32)
ref = A.double() @ B.double()
stream = torch.cuda.current_stream().cuda_stream
for text in (sys.argv[2] if len(sys.argv) > 2 else "auto").split(";"):
    p = prepare(A, B, C, **variant(text, lambda: current().sms))
    for _ in range(3):
        p.launch.enqueue(stream)
    torch.cuda.synchronize()
    err = float((C.double() - ref).norm() / ref.norm())
    clusters = [step.cluster for step in p.launch.steps]
    print(f"{text}: grid {p.schedule.grid} tile {p.schedule.tile} {p.launch.names} clusters {clusters} "
          f"relative error {err:.1e}", flush=True)
for _ in range(3):
    torch.mm(A, B, out_dtype=torch.float32)
torch.cuda.synchronize()
