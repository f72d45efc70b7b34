"""TMA tensor maps for the sm90 mainloop (kernels/sm90/tma_wgmma.cuh): built on the host with
``cuTensorMapEncodeTiled`` and copied into the kernel's parameter block (launch.TmaParams).

A row-major ``rows x cols`` operand with row stride ``ld`` (elements) is the 2-D tensor (cols,
rows), innermost first; a box is ``BOX_INNER`` elements (128 bytes: the 128-byte swizzle's width)
by ``box_rows`` rows. A row-major A is read in (k, m) boxes of 64 x BM, a row-major B in (n, k)
boxes of 64 x BK (on 128x128x64: 64 x 128 and 64 x 64; on 64x128x64 64 x 64 both; a stage takes
BN/64 B boxes). A column-major operand is its transpose stored row-major: A in (m, k) boxes of
64 x BK (BM/64 a stage: one on the 64-row tiles), B in (k, n) boxes of 64 x 64 (catalogue.LAYOUTS). TMA
needs a 16-byte-aligned base and row stride (the host packs other operands first); elements past
the tensor's edge arrive as zeros.
"""

from __future__ import annotations

import ctypes

from ...errors import CudaError
from ...shapes import GemmShape, TileShape
from ..catalogue import TMA_STORE_TILES, column_major
from .launch import TmaParams

BOX_INNER = 64          # kernels/sm90/config.cuh BOX_INNER (elements of a 128-byte box row)
MAP_BYTES = 128         # sizeof(CUtensorMap)
_DTYPES = {"float16": "CU_TENSOR_MAP_DATA_TYPE_FLOAT16", "bfloat16": "CU_TENSOR_MAP_DATA_TYPE_BFLOAT16",
           "float32": "CU_TENSOR_MAP_DATA_TYPE_FLOAT32"}
_ITEMSIZE = {"float16": 2, "bfloat16": 2, "float32": 4}
SWIZZLE_BYTES = 128  # a box row: the 128-byte swizzle's width (BOX_INNER 16-bit or 32 FP32 elements)


def encode(dst: int, dtype: str, ptr: int, rows: int, cols: int, ld: int, box_rows: int) -> None:
    """Write the tensor map of a row-major ``rows x cols`` ``dtype`` matrix at ``ptr`` (row stride
    ``ld`` elements; boxes of 128 bytes x ``box_rows``) into the 128 bytes at address ``dst``."""
    from cuda.bindings import driver

    item = _ITEMSIZE[dtype]
    if ptr % 16 or (ld * item) % 16:
        raise ValueError(f"TMA operands need 16-byte-aligned base and rows (got address {ptr:#x}, row stride {ld})")
    E, u64, u32 = driver, driver.cuuint64_t, driver.cuuint32_t  # cuda-bindings 13.3 takes no plain ints here
    err, tmap = driver.cuTensorMapEncodeTiled(
        getattr(E.CUtensorMapDataType, _DTYPES[dtype]), 2, ptr, [u64(cols), u64(rows)], [u64(ld * item)],
        [u32(SWIZZLE_BYTES // item), u32(box_rows)], [u32(1), u32(1)],
        E.CUtensorMapInterleave.CU_TENSOR_MAP_INTERLEAVE_NONE, E.CUtensorMapSwizzle.CU_TENSOR_MAP_SWIZZLE_128B,
        E.CUtensorMapL2promotion.CU_TENSOR_MAP_L2_PROMOTION_L2_256B,
        E.CUtensorMapFloatOOBfill.CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE)
    if int(err):
        raise CudaError(f"cuTensorMapEncodeTiled({dtype}, {rows}x{cols}, ld {ld}, box {SWIZZLE_BYTES // item}x{box_rows}) "
                        f"failed with {err.name}")
    ctypes.memmove(dst, int(tmap.getPtr()), MAP_BYTES)


def maps_of(dtype: str, shape: GemmShape, lda: int, ldb: int, tile: TileShape, layout: str = "") -> tuple:
    """What the maps of one GEMM signature on ``tile`` describe: the dtype, then (rows, cols, ld,
    box rows) of A and of B as stored: A m x k (boxes of BM rows) or, column-major ("acm" in
    ``layout``), k x m (boxes of BK rows); B k x n (boxes of BK rows) or, column-major ("bcm"),
    n x k (boxes of 64 rows). ``lda`` / ``ldb``: each one's leading dimension (elements)."""
    if tile.bk != BOX_INNER:
        raise ValueError(f"the sm90 tiles are {BOX_INNER} deep: one 128-byte swizzled row (got {tile})")
    map_a = (shape.k, shape.m, lda, tile.bk) if column_major(layout, "A") else (shape.m, shape.k, lda, tile.bm)
    map_b = (shape.n, shape.k, ldb, BOX_INNER) if column_major(layout, "B") else (shape.k, shape.n, ldb, tile.bk)
    return dtype, map_a, map_b


def fill(params: TmaParams, maps: tuple, a: int, b: int) -> None:
    """A's and B's maps (``maps_of``) for the operands at ``a`` and ``b``, written into ``params``."""
    dtype, map_a, map_b = maps
    for offset, ptr, (rows, cols, ld, box_rows) in ((TmaParams.a.offset, a, map_a), (TmaParams.b.offset, b, map_b)):
        encode(ctypes.addressof(params) + offset, dtype, ptr, rows, cols, ld, box_rows)


def c_storable(tile: TileShape, c_rs: int, c_cs: int, c_dtype: str, policy: str) -> bool:
    """Whether the sm90 kernel of ``tile`` may write C through a TMA map (kernels/sm90/tma_wgmma.cuh
    write_tile_tma, write_tile_tma_boxes) for every launch whose C base is 16-byte aligned and whose
    beta is 0: a tile of catalogue.TMA_STORE_TILES, an FP32, FP16 or BF16 C of unit column stride and
    16-byte rows, under a policy that never adds to C atomically."""
    return (tile in TMA_STORE_TILES and c_dtype in _ITEMSIZE and c_cs == 1 and (c_rs * _ITEMSIZE[c_dtype]) % 16 == 0
            and policy != "atomic")


def fill_c(params: TmaParams, c: int, m: int, n: int, c_rs: int, bm: int, dtype: str = "float32") -> None:
    """C's map (``dtype``, ``m x n``, row stride ``c_rs``; boxes of 128 bytes, 32 FP32 or 64 16-bit
    columns, x ``bm`` rows) for the C at ``c``, written into ``params``."""
    encode(ctypes.addressof(params) + TmaParams.c.offset, dtype, c, m, n, c_rs, bm)
