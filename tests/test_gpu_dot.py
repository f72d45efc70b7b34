"""On a GPU: the tiles of at most 8 columns and of at most 8 rows (kernels/sm80/dot.cuh) read the
streamed operand in place at every row shift and stride, next to NaNs they must never let into C,
with the other of any row stride, under every decomposition and fixup policy, on edge shapes; auto
takes them for such GEMMs."""

from __future__ import annotations

import math

import pytest

from gpu_support import GPU, error_ratio, inputs, nan_padded_view, relaunched
from streamk.schedule import FIXUP_POLICIES
from streamk.shapes import GemmShape
from streamk.gpu.catalogue import DOT_T_TILE, DOT_TILE

pytestmark = GPU

TILES = [DOT_TILE, DOT_T_TILE]


def oriented(tile, m, n, k):
    """(m, n, k) for the 64x8 tile; the same GEMM transposed (n, m, k) for the 8x128 one."""
    return (m, n, k) if tile == DOT_TILE else (n, m, k)
DECOMPS = [("data-parallel", {}), ("stream-k", {}), ("fixed-split", {"splits": 3}), ("two-tile-sk-dp", {}),
           ("dp-one-tile-sk", {})]


@pytest.mark.parametrize("tile", TILES, ids=str)
@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_rows_at_every_offset_and_stride_under_every_policy(dtype, tile):
    import torch

    from streamk.gpu import prepare

    gen = torch.Generator(device="cuda").manual_seed(30)
    failures, ran = [], 0
    cases = [(3, 1, 300), (131, 8, 1001), (64, 5, 129), (200, 2, 77), (1, 3, 9), (70, 7, 640), (129, 4, 1),
             (257, 6, 200)]
    for s, case in enumerate(cases):
        m, n, k = oriented(tile, *case)
        for j in range(8):  # row strides of every residue mod 8, bases at every element offset mod 8
            lda, ldb = k + (j + s) % 8, n + (3 * j + 1) % 8
            A = nan_padded_view(m, k, lda, (j * 5 + s) % 8, dtype, gen)
            B = nan_padded_view(k, n, ldb, (j * 3 + 6) % 8, dtype, gen)
            decomp, options = DECOMPS[(j + s) % len(DECOMPS)]
            policy = FIXUP_POLICIES[(j + 2 * s) % len(FIXUP_POLICIES)]
            alpha, beta = (1.5, 0.5) if j % 2 else (1.0, 0.0)
            C0 = torch.randn(m, n, generator=gen, device="cuda")
            C = C0.clone() if beta else torch.full((m, n), math.nan, device="cuda")
            opts = dict(options)
            if "splits" in opts:
                opts["splits"] = min(3, -(-k // tile.bk))
            p = prepare(A, B, C, alpha=alpha, beta=beta, schedule=decomp, fixup=policy, tile=str(tile), **opts)
            p.run()
            torch.cuda.synchronize()
            ran += 1
            ratio = error_ratio(C, A, B, alpha, beta, C0)
            if not ratio <= 1 or any("pack" in name for name in p.launch.names):
                failures.append((m, n, k, lda, ldb, decomp, policy, ratio, p.launch.names))
    assert ran == 8 * len(cases)
    assert not failures, failures[:5]


@pytest.mark.parametrize("tile", TILES, ids=str)
@pytest.mark.parametrize("few", [1, 2, 3, 4, 5, 8, 9, 17])
def test_every_column_or_row_count_and_several_tiles(few, tile):
    """Past 8 columns (rows) a GEMM runs several tiles along them."""
    import torch

    from streamk.gpu import gemm

    gen = torch.Generator(device="cuda").manual_seed(few)
    for many, k in ((1000, 4099), (65, 128), (7, 3)):
        m, n, k = oriented(tile, many, few, k)
        A, B = inputs(m, n, k, "float16", gen)
        C = gemm(A, B, schedule="stream-k", tile=str(tile))
        torch.cuda.synchronize()
        assert error_ratio(C, A, B) <= 1, (m, n, k)


@pytest.mark.parametrize("tile", TILES, ids=str)
def test_a_column_major_streamed_operand_is_packed_the_small_one_read_in_place(tile):
    """The streamed operand (A on the 64x8 tile, B on the 8x128 one) is packed when column-major;
    the small one is read in place at any strides (x^T of torch's Linear, a view every other row and
    column inside NaNs); C strided."""
    import torch

    from streamk.gpu import prepare

    gen = torch.Generator(device="cuda").manual_seed(3)
    m, n, k = oriented(tile, 300, 6, 515)
    streamed = 0 if tile == DOT_TILE else 1  # its letter's place in the layout
    for layout in ("CR", "RC", "CC", "strided"):
        if layout == "strided":  # the small operand: every 2nd row and 3rd column of a NaN buffer
            A, B = inputs(m, n, k, "bfloat16", gen)
            rows, cols = (k, n) if tile == DOT_TILE else (m, k)
            buf = torch.full((2 * rows, 3 * cols), math.nan, device="cuda", dtype=torch.bfloat16)
            small = buf[::2, ::3]
            small.copy_(torch.randn(rows, cols, generator=gen, device="cuda"))
            A, B = (A, small) if tile == DOT_TILE else (small, B)
        else:
            A, B = inputs(m, n, k, "bfloat16", gen, layout)
        C = torch.full((n, m), math.nan, device="cuda").t()  # column-major C
        p = prepare(A, B, C, tile=str(tile))
        p.run()
        torch.cuda.synchronize()
        assert error_ratio(C, A, B) <= 1, layout
        packed = layout != "strided" and layout[streamed] == "C"
        assert any("pack" in name for name in p.launch.names) == packed, (layout, p.launch.names)


def test_auto_takes_the_dot_tiles_for_deep_or_large_gemms_of_at_most_8_columns_or_rows_and_relaunches_bitwise():
    import torch

    from streamk.gpu import prepare

    gen = torch.Generator(device="cuda").manual_seed(5)
    # at most 8 columns and more than 3 of its iterations (k > 384) or 4 MB of A: 64x8; at most 8
    # rows and 12 MB of B: 8x128
    for m, n, k, tile in ((2024, 1, 1606, DOT_TILE), (16385, 3, 256, DOT_TILE), (147, 3, 1201, DOT_TILE),
                          (1, 8, 16384, DOT_TILE), (1070, 2, 342, None), (5000, 9, 300, None),
                          (2049, 9, 1024, None), (3, 13327, 1368, DOT_T_TILE), (1, 4097, 1537, DOT_T_TILE),
                          (8, 4096, 1408, None)):
        A, B = inputs(m, n, k, "float16", gen)
        C = torch.empty(m, n, device="cuda")
        p = prepare(A, B, C, schedule="auto")
        assert p.schedule.tile == tile if tile else p.schedule.tile not in TILES, (m, n, k, p.schedule.tile)
        first, again = relaunched(p, C, 3)
        assert error_ratio(first, A, B) <= 1, (m, n, k)
        assert torch.equal(first, again), (m, n, k)


def test_a_column_major_streamed_operand_runs_the_transposed_gemm_in_place():
    """A decode-like GEMM whose large operand is column-major (torch's Linear: x @ W.t()) runs as
    C^T = B^T A^T, reading that operand in place (on a dot tile for a GEMV the small one too, else
    packing it); C given (any beta) or allocated, relaunched bitwise."""
    import torch

    from streamk.gpu import gemm, prepare

    gen = torch.Generator(device="cuda").manual_seed(11)
    # (m, n, k, the column-major operand, W's element offset in rows of k + 3 (None: W contiguous),
    # the transposed problem's tile: a dot tile, None for auto's pick among the others, or "rows"
    # where it packs W as well, as rows; a contiguous W of 2048 rows or more runs direct on the H200:
    # decide.orient.small_w_linear)
    for m, n, k, wt, offset, tile in ((1, 4097, 2049, "B", 1, DOT_TILE), (3, 1000, 5000, "B", 1, DOT_TILE),
                                      (6001, 5, 1203, "A", 0, DOT_T_TILE), (24, 1500, 1024, "B", None, None),
                                      (64, 4096, 4096, "B", 1, None), (700, 40, 900, "A", 0, None),
                                      (8, 3000, 300, "B", 1, "rows")):
        A, B = inputs(m, n, k, "float16", gen)
        if wt == "B" and offset is None:
            B = torch.randn(n, k, generator=gen, device="cuda").half().t()
        elif wt == "B":  # W.t() of an n x k W at `offset` inside rows of k + 3
            B = torch.randn(n, k + 3, generator=gen, device="cuda").half()[:, offset:k + offset].t()
        else:
            A = torch.randn(k, m, generator=gen, device="cuda").half().t()
        C0 = torch.randn(m, n, generator=gen, device="cuda")
        C = C0.clone()
        p = prepare(A, B, C, alpha=0.5, beta=2.0)
        if tile == "rows":  # W's rows 2-byte aligned and too shallow for the dot tile: packed either
            # way, so as rows, which costs half of transposing them
            assert p.transposed and p._plan.packs_a, (m, n, k, p.launch.names)
        else:
            assert p.transposed and p.schedule.shape == GemmShape(n, m, k), (m, n, k, p.schedule.shape)
            assert tile is None or p.schedule.tile == tile, (m, n, k, p.schedule.tile)
            # the large operand (A' = B^T, or B' = A^T) is read in place; on a dot tile the small one too
            assert not (p._plan.packs_a if wt == "B" else p._plan.packs_b), (m, n, k, p.launch.names)
            assert tile not in TILES or not any("pack" in name for name in p.launch.names), (m, n, k, p.launch.names)
        p.run()
        torch.cuda.synchronize()
        assert error_ratio(C, A, B, 0.5, 2.0, C0) <= 1, (m, n, k)
        first, again = relaunched(prepare(A, B, C), C, 2)
        assert torch.equal(first, again), (m, n, k)
        out = gemm(A, B)  # C allocated
        torch.cuda.synchronize()
        assert out.shape == (m, n) and error_ratio(out, A, B) <= 1, (m, n, k)
