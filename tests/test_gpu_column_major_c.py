"""On a GPU: a column-major C leaves the epilogue column by column (kernels/common/epilogue.cuh
ColumnStage, store_cols) on every tile, through partial tiles and column strides 16-, 8- and
4-byte aligned: at beta 0 bitwise the row-major C's result (the same schedule, the same values,
only stored another way), with beta within the float64 bound; auto's transposed problem too."""

from __future__ import annotations

import math

import pytest

from gpu_support import DTYPES, GPU, error_ratio, inputs, out_dtype

pytestmark = GPU

# (m, n, k, C's column stride past m): FP32 columns 16-byte aligned, then with a one-row tail
# past the last whole vector, 8-byte aligned, 4-byte aligned (FP64: 16- or 8-byte aligned)
CASES = [(256, 136, 160, 0), (257, 131, 70, 3), (258, 300, 200, 0), (131, 140, 320, 0)]


def _tiles(dtype: str) -> list[str]:
    from streamk.gpu.catalogue import tile_specs

    return [f"{t.bm}x{t.bn}x{t.bk}" for t in tile_specs(dtype)]


def _column_major(m: int, n: int, pad: int, dtype: str):
    """An m x n C stored by columns, each ``pad`` elements longer than m, NaN everywhere first."""
    import torch

    store = torch.full((n, m + pad), math.nan, device="cuda", dtype=out_dtype(dtype))
    return store[:, :m].t()


@pytest.mark.parametrize("dtype", DTYPES)
def test_a_column_major_c_is_the_row_major_result_on_every_tile(dtype):
    import torch

    from streamk.gpu import gemm
    from streamk.gpu.catalogue import spec_for_tile
    from streamk.gpu.runtime.device import current

    arch = current().arch
    gen = torch.Generator(device="cuda").manual_seed(5)
    for tile in _tiles(dtype):
        if arch not in spec_for_tile(dtype, tile).archs:
            continue
        for m, n, k, pad in CASES:
            A, B = inputs(m, n, k, dtype, gen)
            for decomp, options in (("data-parallel", {}), ("stream-k", {"grid": 5})):
                row = gemm(A, B, schedule=decomp, tile=tile, **options)
                col = _column_major(m, n, pad, dtype)
                gemm(A, B, col, schedule=decomp, tile=tile, **options)
                assert torch.equal(col, row), (tile, m, n, k, pad, decomp)
                C0 = torch.randn(m, n, generator=gen, device="cuda").to(out_dtype(dtype))
                col.copy_(C0)
                gemm(A, B, col, alpha=0.5, beta=-2.0, schedule=decomp, tile=tile, **options)
                assert error_ratio(col, A, B, 0.5, -2.0, C0) <= 1, (tile, m, n, k, pad, decomp)


@pytest.mark.parametrize("tile", ["128x128x64", "64x256x64"])
def test_the_transposed_problem_on_sm90_writes_c_by_columns(tile):
    """C^T = B^T A^T on the operands' views (as auto runs a decode-like x @ W.t()): A^T and B^T read
    in place column-major, the kernels' C the caller's C read down its columns."""
    import torch

    from streamk.gpu import gemm, prepare
    from streamk.gpu.catalogue import spec_for_tile
    from streamk.gpu.runtime.device import current

    if current().arch not in spec_for_tile("float16", tile).archs:
        pytest.skip(f"the {tile} kernels are built for {spec_for_tile('float16', tile).archs}")
    gen = torch.Generator(device="cuda").manual_seed(6)
    for m, n, k in ((8, 4096, 1024), (1000, 136, 2000), (135, 2056, 777)):
        A, B = inputs(m, n, k, "float16", gen)
        C = torch.full((m, n), math.nan, device="cuda")
        p = prepare(B.t(), A.t(), C.t(), tile=tile)
        p.run()
        assert error_ratio(C, A, B) <= 1, (m, n, k, tile)
        assert torch.equal(C, gemm(B.t(), A.t(), schedule=p.schedule).t()), (m, n, k, tile)
