"""On an sm_90 GPU: the sm90 kernels read column-major operands in place (a column-major A M-major,
a column-major B, torch's W.t(), K-major; catalogue.LAYOUTS). Every layout, every sm90 tile and
dtypes, every fixup policy, edge tiles in m, n and k, leading dimensions padded with NaNs (a read
outside the view makes C NaN), bitwise equal over relaunches where the policy is deterministic,
in clusters sharing B, and torch's Linear (x @ W.t()) run by auto with no pack and no transpose."""

from __future__ import annotations

import math

import pytest

from gpu_support import GPU, error_ratio, nan_padded_view, relaunched
from streamk.gpu.request import Tuning
from streamk.gpu.catalogue import SM90_TILES
from streamk.gpu.decide.launches import MULTICAST_TILES
from streamk.schedule import FIXUP_POLICIES

pytestmark = GPU

# every sm90 TMA + wgmma tile (catalogue.SM90_TILES)
TILES = tuple(f"{t.bm}x{t.bn}x{t.bk}" for t in SM90_TILES)
DTYPES = ("float16", "bfloat16")
LAYOUTS = {"CR": "acm", "RC": "bcm", "CC": "acm_bcm"}  # A, B: row-major R or column-major C
# edge tiles in every dimension (with their leading dimensions rounded up to 16 bytes, rows and
# columns that end mid-chunk are read in place: TMA stops at the matrix's edge), fewer rows or
# columns than one box, a single MAC iteration, several waves
SHAPES = [(131, 257, 67), (7, 13, 17), (200, 130, 96), (8, 8, 64), (512, 1000, 1024), (1000, 999, 1001)]
DECOMPS = [("data-parallel", {}), ("stream-k", {}), ("fixed-split", {"splits": 3}), ("dp-one-tile-sk", {}),
           ("auto", {})]


def _skip_unless_sm90():
    from streamk.gpu.runtime.device import current

    if current().arch != "sm_90a":
        pytest.skip(f"the column-major layouts are the sm_90a kernels' (this GPU is {current().arch})")


def _operand(rows: int, cols: int, column_major: bool, dtype: str, gen, pad: int = 24):
    """A rows x cols view inside a NaN-filled buffer, row- or column-major, its leading dimension
    rounded up to 16 bytes and padded by ``pad`` elements, at a 16-byte-aligned offset."""
    if column_major:
        return nan_padded_view(cols, rows, -(-rows // 8) * 8 + pad, 8, dtype, gen).t()
    return nan_padded_view(rows, cols, -(-cols // 8) * 8 + pad, 8, dtype, gen)


def _main_kernel(prepared) -> str:
    return next(name for name in prepared.launch.names if name.startswith("streamk_sm90"))


@pytest.mark.parametrize("layout", list(LAYOUTS))
@pytest.mark.parametrize("tile", TILES)
@pytest.mark.parametrize("dtype", DTYPES)
def test_column_major_operands_are_read_in_place_within_the_bound(dtype, tile, layout):
    import torch

    from streamk.gpu import prepare

    _skip_unless_sm90()
    gen = torch.Generator(device="cuda").manual_seed(11)
    failures, ran = [], 0
    for s, (m, n, k) in enumerate(SHAPES):
        A = _operand(m, k, layout[0] == "C", dtype, gen)
        B = _operand(k, n, layout[1] == "C", dtype, gen)
        for d, (decomp, options) in enumerate(DECOMPS):
            policy = FIXUP_POLICIES[(s + d) % len(FIXUP_POLICIES)]
            alpha, beta = (1.5, 0.5) if policy == "atomic" else (1.0, 0.0)
            C0 = torch.randn(m, n, generator=gen, device="cuda")
            opts = dict(options)
            if "splits" in opts:
                opts["splits"] = min(3, -(-k // 64))
            outs = []
            for _ in range(2):
                C = C0.clone() if beta else torch.full((m, n), math.nan, device="cuda")
                p = prepare(A, B, C, alpha=alpha, beta=beta, schedule=decomp, fixup=policy, tile=tile, **opts)
                p.run()
                outs.append(C)
            torch.cuda.synchronize()
            ran += 1
            entry = _main_kernel(p)
            ratio = error_ratio(outs[0], A, B, alpha, beta, C0)
            same = policy == "atomic" or torch.equal(outs[0], outs[1])
            packs = any("pack" in name for name in p.launch.names)
            if ratio > 1 or not same or not entry.endswith("_" + LAYOUTS[layout]) or packs:
                failures.append((m, n, k, decomp, policy, ratio, same, p.launch.names))
    assert ran == len(SHAPES) * len(DECOMPS)
    assert not failures, failures[:5]


@pytest.mark.parametrize("tile", [f"{t.bm}x{t.bn}x{t.bk}" for t in MULTICAST_TILES])
@pytest.mark.parametrize("layout", list(LAYOUTS))
def test_column_major_layouts_in_clusters_match_unclustered_launches_bitwise(layout, tile):
    import torch

    from streamk.gpu import prepare

    _skip_unless_sm90()
    gen = torch.Generator(device="cuda").manual_seed(5)
    m, n, k = 1024, 1104, 512
    A = _operand(m, k, layout[0] == "C", "float16", gen)
    B = _operand(k, n, layout[1] == "C", "float16", gen)
    outs, clusters = [], []
    for tuning in (Tuning(multicast=False), Tuning()):
        C = torch.full((m, n), math.nan, device="cuda")
        p = prepare(A, B, C, tile=tile, schedule="data-parallel", tile_order="grouped-8", _tuning=tuning)
        p.run()
        outs.append(C)
        clusters.append(max(st.cluster for st in p.launch.steps))
    torch.cuda.synchronize()
    assert clusters == [1, 2]
    assert error_ratio(outs[1], A, B) <= 1
    assert torch.equal(outs[0], outs[1])


@pytest.mark.parametrize("tile", ["64x128x64", "64x256x64"])
@pytest.mark.parametrize("dtype", DTYPES)
def test_torch_linear_on_the_64_row_tiles_reads_w_in_place(dtype, tile):
    """x @ W.t() at 16-512 tokens, the GEMMs the 64-row tiles are for, asked for by tile: W.t() read
    in place as a column-major B, every decomposition; on 64x128x64 C written by TMA on every unit
    but a CTA's last, on 64x256x64 by the shared epilogue in column halves (its fourth stage's room)."""
    import torch

    from streamk.gpu import prepare

    _skip_unless_sm90()
    gen = torch.Generator(device="cuda").manual_seed(4)
    for rows, out_features, in_features in ((16, 4096, 4096), (64, 6144, 4096), (200, 1000, 2048), (512, 4096, 1024)):
        x = torch.randn(rows, in_features, generator=gen, device="cuda").to(getattr(torch, dtype))
        W = torch.randn(out_features, in_features, generator=gen, device="cuda").to(getattr(torch, dtype))
        for decomp in ("data-parallel", "stream-k", "auto"):
            C = torch.full((rows, out_features), math.nan, device="cuda")
            p = prepare(x, W.t(), C, tile=tile, schedule=decomp)
            assert not any("pack" in name for name in p.launch.names), p.launch.names
            assert _main_kernel(p).endswith(f"_t{tile.rsplit('x', 1)[0]}_bcm")
            assert p._plan.c_storable == (tile == "64x128x64" and p.plan.policy != "atomic")
            first, last = relaunched(p, C, 5)
            assert error_ratio(first, x, W.t(), 1.0, 0.0) <= 1, (rows, out_features, in_features, decomp)
            assert torch.equal(first, last) or p.plan.policy == "atomic"


@pytest.mark.parametrize("dtype", DTYPES)
def test_torch_linear_layout_runs_with_no_pack_on_sm90(dtype):
    """x @ W.t() with W row-major (out x in), as torch.nn.Linear calls it, at prefill batch sizes:
    auto reads W.t() as a column-major B in place and writes C row-major (no transpose), also in a
    CUDA graph and over relaunches."""
    import torch

    from streamk.gpu import gemm, prepare

    _skip_unless_sm90()
    gen = torch.Generator(device="cuda").manual_seed(3)
    # 128 rows: below auto's sm90 rungs, where its 64x64 tiles would pack x^T (decide.orient.in_place_tile)
    for rows, out_features, in_features in ((128, 4096, 4096), (256, 4096, 4096), (1000, 4096, 4096),
                                            (1024, 4096, 2048)):
        x = torch.randn(rows, in_features, generator=gen, device="cuda").to(getattr(torch, dtype))
        W = torch.randn(out_features, in_features, generator=gen, device="cuda").to(getattr(torch, dtype))
        C = torch.full((rows, out_features), math.nan, device="cuda")
        p = prepare(x, W.t(), C)
        assert p.schedule.tile.bk == 64, p.schedule.tile  # auto's sm90 rungs (these shapes take them)
        assert not p.transposed and not any("pack" in name for name in p.launch.names), p.launch.names
        assert _main_kernel(p).endswith("_bcm")
        p.run()
        torch.cuda.synchronize()
        first = C.clone()
        assert error_ratio(first, x, W.t(), 1.0, 0.0) <= 1
        graph = torch.cuda.CUDAGraph()
        stream = torch.cuda.Stream()
        with torch.cuda.stream(stream):
            p.run()  # warm-up on the capturing stream
            with torch.cuda.graph(graph, stream=stream):
                p.run()
        graph.replay()
        graph.replay()
        torch.cuda.synchronize()
        if p.schedule.fixup != "atomic":
            assert torch.equal(C, first)
        eager = gemm(x, W.t())
        assert error_ratio(eager, x, W.t(), 1.0, 0.0) <= 1


@pytest.mark.parametrize("dtype", DTYPES)
def test_torch_linear_of_few_w_rows_over_many_tokens_runs_transposed_in_place(dtype):
    """A MoE router's x @ W.t() (W of 9-64 rows, thousands of tokens): on the H200 auto runs C^T = W x^T
    on 64x128x64 reading W and x^T in place (decide.orient.tall_transposed_tile), C written down its
    columns into a NaN-filled C (a missed or stray element shows), also with beta, over relaunches."""
    import torch

    from streamk.gpu import gemm, prepare
    from streamk.gpu.runtime.device import current

    _skip_unless_sm90()
    gen = torch.Generator(device="cuda").manual_seed(5)
    h200 = "H200" in current().name
    for rows, out_features, in_features in ((4096, 60, 2048), (9000, 9, 640), (20000, 48, 2560)):
        x = torch.randn(rows, in_features, generator=gen, device="cuda").to(getattr(torch, dtype))
        W = torch.randn(out_features, in_features, generator=gen, device="cuda").to(getattr(torch, dtype))
        C = torch.full((rows, out_features), math.nan, device="cuda")
        p = prepare(x, W.t(), C)
        assert not any("pack" in name for name in p.launch.names), p.launch.names
        if h200:
            assert p.transposed and p.schedule.tile.bm == 64 and p.schedule.tile.bn == 128, (p.transposed, p.schedule.tile)
        first, last = relaunched(p, C, 3)
        assert error_ratio(first, x, W.t(), 1.0, 0.0) <= 1, (rows, out_features, in_features)
        assert torch.equal(first, last) or p.plan.policy == "atomic"
        C0 = torch.randn(rows, out_features, generator=gen, device="cuda")
        out = gemm(x, W.t(), C0.clone(), alpha=0.5, beta=2.0)
        assert error_ratio(out, x, W.t(), 0.5, 2.0, C0) <= 1, (rows, out_features, in_features)
