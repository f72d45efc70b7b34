"""On a GPU: C in the inputs' 16-bit dtype (a C given so, or ``out_dtype``). The kernels accumulate in
FP32 as for an FP32 C and round once as they write C (kernels/common/c_elem.cuh), so at beta 0 a
16-bit C is bitwise the FP32 result of the same launch rounded to nearest even, on every tile,
decomposition and fixup policy, through the shared epilogue's row, column and element stores and the
separate-reduce pass; with beta, within the 16-bit bound of the float64 reference."""

from __future__ import annotations

import math

import numpy as np
import pytest

from gpu_support import GPU, error_ratio, graph_replayed, inputs

pytestmark = GPU

HALF = ("float16", "bfloat16")
# (schedule, fixup, options): whole tiles, and split ones under every policy that writes C itself
RUNS = [("data-parallel", None, {}), ("stream-k", "turnstile", {"grid": 5}), ("stream-k", "owner-waits", {"grid": 7}),
        ("stream-k", "separate-reduce", {"grid": 5}), ("fixed-split", "last-arrival", {"splits": 2})]


def _tiles(dtype: str) -> list[str]:
    from streamk.gpu.catalogue import tile_specs
    from streamk.gpu.runtime.device import current

    arch = current().arch
    return [f"{t.bm}x{t.bn}x{t.bk}" for t, spec in tile_specs(dtype).items() if arch in spec.archs]


@pytest.mark.parametrize("dtype", HALF)
def test_a_16_bit_c_is_the_fp32_result_rounded_on_every_tile_and_policy(dtype):
    import torch

    from streamk.gpu import gemm

    gen = torch.Generator(device="cuda").manual_seed(11)
    half = getattr(torch, dtype)
    for tile in _tiles(dtype):
        for m, n, k in ((257, 131, 200), (130, 264, 520)):
            A, B = inputs(m, n, k, dtype, gen)
            for schedule, fixup, options in RUNS:
                wide = gemm(A, B, schedule=schedule, fixup=fixup, tile=tile, **options)
                C = torch.full((m, n), math.nan, device="cuda", dtype=half)
                out = gemm(A, B, C, alpha=1.0, schedule=schedule, fixup=fixup, tile=tile, **options)
                assert out is C and torch.equal(C, wide.to(half)), (tile, m, n, k, schedule, fixup)
                C0 = torch.randn(m, n, generator=gen, device="cuda").to(half)
                C.copy_(C0)
                gemm(A, B, C, alpha=0.5, beta=-2.0, schedule=schedule, fixup=fixup, tile=tile, **options)
                assert error_ratio(C, A, B, 0.5, -2.0, C0) <= 1, (tile, m, n, k, schedule, fixup)


@pytest.mark.parametrize("dtype", HALF)
def test_auto_out_dtype_allocates_the_inputs_dtype_in_every_operand_layout(dtype):
    """auto (its own tile, orientation and launch, TMA maps included) with ``out_dtype``: every layout
    of A and B, and C given column-major or with padded rows of 2-, 4- and 16-byte alignment."""
    import torch

    from streamk.gpu import gemm

    gen = torch.Generator(device="cuda").manual_seed(12)
    half = getattr(torch, dtype)
    for m, n, k in ((1000, 999, 1001), (64, 4096, 4096), (3000, 24, 512), (8, 2048, 1024), (2048, 2048, 2048)):
        for layout in ("RR", "RC", "CR"):
            A, B = inputs(m, n, k, dtype, gen, layout)
            wide = gemm(A, B)
            for out in (dtype, half):
                C = gemm(A, B, out_dtype=out)
                assert C.dtype == half and torch.equal(C, wide.to(half)), (m, n, k, layout)
            for pad in (0, 1, 2, 8):
                store = torch.full((m, n + pad), math.nan, device="cuda", dtype=half)
                C = store[:, :n]
                gemm(A, B, C)
                assert torch.equal(C, wide.to(half)), (m, n, k, layout, pad)
            # a column-major C may run another way round (decide.orient): against an FP32 C stored so
            wide_col = torch.full((n, m), math.nan, device="cuda").t()
            gemm(A, B, wide_col)
            col = torch.full((n, m + 3), math.nan, device="cuda", dtype=half)[:, :m].t()
            gemm(A, B, col)
            assert torch.equal(col, wide_col.to(half)), (m, n, k, layout, "column-major C")


def test_16_bit_c_in_graphs_numpy_and_torch_compile():
    import torch

    from streamk.gpu import gemm

    gen = torch.Generator(device="cuda").manual_seed(13)
    A, B = inputs(300, 500, 700, "float16", gen)
    wide = gemm(A, B)
    replayed = graph_replayed(A, B, out_dtype=torch.float16)
    assert replayed.dtype == torch.float16 and torch.equal(replayed, wide.half())
    a, b = A.cpu().numpy(), B.cpu().numpy()
    host = gemm(a, b, np.zeros((300, 500), np.float16))
    assert host.dtype == np.float16 and np.array_equal(host, wide.half().cpu().numpy())
    assert gemm(a, b, out_dtype="float16").dtype == np.float16

    def f(x, y):
        return gemm(x, y, out_dtype=torch.float16) * 2

    compiled = torch.compile(f, fullgraph=True)
    out = compiled(A, B)
    assert out.dtype == torch.float16 and torch.equal(out, wide.half() * 2)


def test_16_bit_c_refusals_name_the_problem():
    import torch

    from streamk import ScheduleError
    from streamk.gpu import gemm

    A = torch.randn(256, 256, device="cuda").half()
    with pytest.raises(ScheduleError, match="the atomic fixup adds partial tiles into C, which needs a float32 C"):
        gemm(A, A, out_dtype="float16", schedule="stream-k", fixup="atomic", grid=3)
    with pytest.raises(ScheduleError, match="C must be float32 or float16 for float16 inputs"):
        gemm(A, A, torch.empty(256, 256, device="cuda", dtype=torch.bfloat16))
    with pytest.raises(ScheduleError, match="out_dtype must be one of"):
        gemm(A, A, out_dtype="int8")
    with pytest.raises(ScheduleError, match="C must be float64 for float64 inputs"):
        gemm(A.double(), A.double(), out_dtype=torch.float16)
