"""What the GPU tests share: the skip mark, inputs, and the float64 error bound of our numerics.

Every GPU test module sets ``pytestmark = GPU``: marked ``gpu`` (``python -m pytest -m gpu`` runs
the whole GPU suite on a device) and skipped, with the reason, where no usable GPU or no PyTorch
is present.
"""

from __future__ import annotations

import importlib.util
import math

import pytest

try:
    from streamk.gpu import available

    _OK, _WHY = available()
except ImportError as exc:  # cuda-bindings missing
    _OK, _WHY = False, f"cuda-bindings is not installed ({exc})"
if _OK and importlib.util.find_spec("torch") is None:
    _OK, _WHY = False, "PyTorch is not installed (pip install 'streamk[torch]')"

def gpu_count() -> int:
    """CUDA devices PyTorch sees (0 without PyTorch)."""
    if importlib.util.find_spec("torch") is None:
        return 0
    import torch

    return torch.cuda.device_count()


requires_gpu = pytest.mark.skipif(not _OK, reason=f"needs a CUDA GPU (sm_80+): {_WHY}")
GPU = [pytest.mark.gpu, requires_gpu]
TWO_GPUS = pytest.mark.skipif(gpu_count() < 2, reason=f"needs two CUDA devices in one process ({gpu_count()} here)")
DTYPES = ("float16", "bfloat16", "float64")


def out_dtype(dtype: str):
    import torch

    return torch.float64 if dtype == "float64" else torch.float32


def inputs(m: int, n: int, k: int, dtype: str, gen, layout: str = "RR"):
    """Random normal A (m x k) and B (k x n) on the GPU; 'C' in ``layout`` makes that one
    column-major."""
    import torch

    A = torch.randn(m, k, generator=gen, device="cuda").to(getattr(torch, dtype))
    B = torch.randn(k, n, generator=gen, device="cuda").to(getattr(torch, dtype))
    if layout[0] == "C":
        A = A.t().contiguous().t()
    if layout[1] == "C":
        B = B.t().contiguous().t()
    return A, B


def error_ratio(C, A, B, alpha: float = 1.0, beta: float = 0.0, C0=None) -> float:
    """max |C - ref| / bound over C (<= 1 passes; NaN fails), with the bound
    4 sqrt(k) eps(acc) |alpha| (|A||B|) + eps(acc) |ref| + eps(acc) |beta C0|."""
    import torch

    a, b = A.double(), B.double()
    ref = alpha * (a @ b)
    if beta != 0.0:
        ref = ref + beta * C0.double()
    eps = torch.finfo(C.dtype).eps / 2
    bound = 4 * math.sqrt(max(A.shape[1], 1)) * eps * abs(alpha) * (a.abs() @ b.abs()) + eps * ref.abs()
    if beta != 0.0:
        bound = bound + eps * abs(beta) * C0.double().abs()
    if torch.isnan(C).any():
        return math.inf
    return float(((C.double() - ref).abs() / (bound + 1e-300)).max()) if C.numel() else 0.0


def relaunched(prepared, C, launches: int):
    """C after one run of ``prepared`` (a copy), and C after ``launches`` more with no reset."""
    import torch

    prepared.run()
    torch.cuda.synchronize()
    first = C.clone()
    for _ in range(launches):
        prepared.run()
    torch.cuda.synchronize()
    return first, C


def nan_padded_view(rows: int, cols: int, ld: int, offset: int, dtype: str, gen):
    """A rows x cols view at element ``offset`` with row stride ``ld`` inside a NaN-filled buffer:
    any element a kernel reads outside the view and lets into C makes C NaN."""
    import torch

    buf = torch.full((offset + rows * ld + 16,), math.nan, device="cuda", dtype=getattr(torch, dtype))
    view = buf[offset:offset + rows * ld].view(rows, ld)[:, :cols]
    view.copy_(torch.randn(rows, cols, generator=gen, device="cuda"))
    return view


def graph_replayed(A, B, replays: int = 5, **options):
    """C of ``gemm(A, B, **options)`` captured in a CUDA graph (after a warm call that builds the
    plan on the capture stream) and replayed ``replays`` times over a NaN-filled C."""
    import torch

    from streamk.gpu import gemm

    stream = torch.cuda.Stream()
    with torch.cuda.stream(stream):
        gemm(A, B, **options)  # warm: plan built
    stream.synchronize()
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph, stream=stream):
        C = gemm(A, B, **options)
    for _ in range(replays):
        C.fill_(math.nan)
        graph.replay()
    torch.cuda.synchronize()
    return C
