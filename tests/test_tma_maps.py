"""The sm90 kernel's TMA maps as the host builds them (streamk/gpu/runtime/tma.py), with the driver call
replaced: what cuTensorMapEncodeTiled is asked for and where its 128 bytes land (no GPU needed)."""

import ctypes

import pytest

driver = pytest.importorskip("cuda.bindings.driver", reason="cuda-bindings is not installed")

from streamk.gpu.runtime import tma  # noqa: E402
from streamk.gpu.runtime.launch import TmaParams  # noqa: E402
from streamk.shapes import GemmShape, TileShape  # noqa: E402


class _Map:
    def __init__(self, fill: int) -> None:
        self.bytes = (ctypes.c_ubyte * 128)(*([fill] * 128))

    def getPtr(self) -> int:
        return ctypes.addressof(self.bytes)


def test_maps_land_at_their_offsets_with_the_sizes_the_kernel_reads(monkeypatch):
    calls = []

    def encode(dtype, rank, ptr, dims, strides, box, element_strides, *modes):
        # cuda-bindings 13.3 (the GPU machines') takes cuuint64_t / cuuint32_t here, not ints
        assert all(isinstance(x, driver.cuuint64_t) for x in (*dims, *strides))
        assert all(isinstance(x, driver.cuuint32_t) for x in (*box, *element_strides))
        calls.append((dtype, rank, ptr, [int(x) for x in dims], [int(x) for x in strides], [int(x) for x in box],
                      modes[1]))
        return driver.CUresult.CUDA_SUCCESS, _Map(len(calls))

    monkeypatch.setattr(driver, "cuTensorMapEncodeTiled", encode)
    params = TmaParams()
    maps = tma.maps_of("bfloat16", GemmShape(300, 77, 130), lda=136, ldb=128, tile=TileShape(128, 128, 64))
    assert maps == tma.maps_of("bfloat16", GemmShape(300, 77, 130), 136, 128, TileShape(128, 256, 64))  # same boxes
    tma.fill(params, maps, 4096, 8192)
    (ta, ra, pa, da, sa, ba, swa), (tb, rb, pb, db, sb, bb, swb) = calls
    assert ta == tb == driver.CUtensorMapDataType.CU_TENSOR_MAP_DATA_TYPE_BFLOAT16 and ra == rb == 2
    assert (pa, da, sa, ba) == (4096, [130, 300], [272], [64, 128])  # A: (k, m), row stride bytes, box k64 x m128
    assert (pb, db, sb, bb) == (8192, [77, 130], [256], [64, 64])    # B: (n, k), box n64 x k64
    assert swa == swb == driver.CUtensorMapSwizzle.CU_TENSOR_MAP_SWIZZLE_128B
    assert bytes(params.a) == bytes([1] * 128) and bytes(params.b) == bytes([2] * 128)
    assert bytes(params.gemm)[:8] == bytes(8)  # the GemmParams before them untouched


def test_unaligned_operands_are_refused_before_the_driver():
    with pytest.raises(ValueError, match="16-byte-aligned base and rows"):
        tma.encode(0, "float16", 4096 + 2, 10, 10, 16, 64)
    with pytest.raises(ValueError, match="16-byte-aligned base and rows"):
        tma.encode(0, "float16", 4096, 10, 10, 12, 64)
    with pytest.raises(ValueError, match="sm90 tiles are 64 deep"):
        tma.maps_of("float16", GemmShape(300, 77, 130), 136, 128, TileShape(128, 128, 32))


def test_column_major_operands_are_mapped_as_their_stored_transposes():
    shape, tile = GemmShape(300, 77, 130), TileShape(128, 256, 64)
    dtype, map_a, map_b = tma.maps_of("float16", shape, 304, 136, tile, "acm_bcm")
    assert map_a == (130, 300, 304, 64)  # A stored as k x m (ld 304): boxes of 64 m x 64 k
    assert map_b == (77, 130, 136, 64)   # B stored as n x k (ld 136): boxes of 64 k x 64 n
    assert tma.maps_of("float16", shape, 304, 128, tile, "acm")[2] == (130, 77, 128, 64)  # B row-major
    assert tma.maps_of("float16", shape, 136, 136, tile, "bcm")[1] == (300, 130, 136, 128)  # A row-major


def test_the_64_row_tiles_read_a_in_boxes_of_64_rows_and_c_in_64_row_boxes(monkeypatch):
    """64x128x64 and 64x256x64 (one consumer warp group): a row-major A in one 64 k x 64 m box a
    stage, a column-major A in one 64 m x 64 k box (kernels/sm90/config.cuh A_MN_BOXES), B as on the
    128-row tiles, C stored through TMA in 32-column boxes of 64 rows on 64x128 (64x256 stages C in
    column halves: no TMA store)."""
    shape = GemmShape(300, 77, 130)
    for tile in (TileShape(64, 128, 64), TileShape(64, 256, 64)):
        assert tma.maps_of("float16", shape, 136, 80, tile)[1:] == ((300, 130, 136, 64), (130, 77, 80, 64))
        assert tma.maps_of("float16", shape, 304, 136, tile, "acm_bcm")[1:] == ((130, 300, 304, 64), (77, 130, 136, 64))
        assert tma.c_storable(tile, 80, 1, "float32", "owner-waits") == (tile.bn == 128)
    calls = []

    def encode(dtype, rank, ptr, dims, strides, box, element_strides, *modes):
        calls.append([int(x) for x in box])
        return driver.CUresult.CUDA_SUCCESS, _Map(1)

    monkeypatch.setattr(driver, "cuTensorMapEncodeTiled", encode)
    tma.fill_c(TmaParams(), 1 << 20, 300, 77, 80, 64)
    tma.fill_c(TmaParams(), 1 << 20, 300, 77, 80, 128, "bfloat16")  # a 16-bit C: 64 columns a box
    assert calls == [[32, 64], [64, 128]]


def test_c_is_stored_through_tma_only_where_the_kernel_and_the_layout_allow():
    wide, square = TileShape(128, 256, 64), TileShape(128, 128, 64)
    assert tma.c_storable(square, 1000, 1, "float32", "owner-waits")
    assert tma.c_storable(TileShape(128, 192, 64), 4, 1, "float32", "separate-reduce")
    assert tma.c_storable(wide, 1000, 1, "float32", "owner-waits")  # in 32-column boxes (LOG.md v137)
    assert not tma.c_storable(TileShape(64, 256, 64), 1000, 1, "float32", "owner-waits")  # staged in halves
    assert not tma.c_storable(square, 1001, 1, "float32", "owner-waits")  # rows not 16-byte multiples
    assert not tma.c_storable(square, 1, 1000, "float32", "owner-waits")  # column-major C
    assert not tma.c_storable(square, 1000, 1, "float32", "atomic")  # C added to, not written
    assert tma.c_storable(square, 1000, 1, "float16", "owner-waits") and tma.c_storable(wide, 8, 1, "bfloat16", "turnstile")
    assert not tma.c_storable(square, 1004, 1, "float16", "owner-waits")  # 2008-byte rows
    assert not tma.c_storable(square, 1000, 1, "float64", "owner-waits")


def test_c_map_is_fp32_in_32_column_boxes_of_the_tile_rows(monkeypatch):
    calls = []

    def encode(dtype, rank, ptr, dims, strides, box, element_strides, *modes):
        calls.append((dtype, ptr, [int(x) for x in dims], [int(x) for x in strides], [int(x) for x in box]))
        return driver.CUresult.CUDA_SUCCESS, _Map(3)

    monkeypatch.setattr(driver, "cuTensorMapEncodeTiled", encode)
    params = TmaParams()
    tma.fill_c(params, 1 << 20, 300, 77, 80, 128)
    ((dtype, ptr, dims, strides, box),) = calls
    assert dtype == driver.CUtensorMapDataType.CU_TENSOR_MAP_DATA_TYPE_FLOAT32
    assert (ptr, dims, strides, box) == (1 << 20, [77, 300], [320], [32, 128])  # (n, m), 4-byte rows, 32 x BM
    assert bytes(params.c) == bytes([3] * 128) and bytes(params.a) == bytes(128)
    with pytest.raises(ValueError, match="16-byte-aligned base and rows"):
        tma.fill_c(params, 1 << 20, 300, 77, 78, 128)  # 312-byte rows
