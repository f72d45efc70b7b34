"""auto's one wave of 64x128x64 tiles (gpu/decide/launches.one_wave_m64, LOG.md v76), on the CPU: the
H200 takes it where its 128x128x64 launch would run at most 2/3 as many CTAs as the 64-row tiles
number and those fit one wave, or m is 129-192; not where either fails, where that kernel would pack
the operands, nor on a Target without it. Where m is 129-192 and the 64x128 tiles take more than a
wave, one wave of 64x192x64 tiles (one_wave_m64_192, LOG.md v81); where m is 65-128, either wherever
its tiles fit a wave (LOG.md v82), but not where the 128x128x64 launch splits deep tiles over more CTAs
(split_wider, LOG.md v85)."""

from __future__ import annotations

import pytest

from streamk.gpu.catalogue import SM90_M64_192_TILE, SM90_M64_TILE, SM90_TILE
from streamk.gpu.decide.launches import M64_DEEP_ITERS, M64_WAVE_MAX_SHARE, one_wave_m64, one_wave_m64_192, split_wider
from streamk.gpu.decide.schedule import schedule_for
from streamk.gpu.decide.tiles import packed_bytes
from streamk.shapes import GemmShape, Problem
from streamk.target import preset

H200 = preset("h200")


@pytest.mark.parametrize("mnk", [(630, 1512, 2160), (1398, 432, 3296), (131, 5376, 3360), (129, 2728, 4344)])
@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_auto_runs_one_wave_of_64_row_tiles_where_its_128_row_launch_leaves_sms_idle(mnk, dtype):
    shape = GemmShape(*mnk)
    s = schedule_for("auto", shape, dtype, H200)
    assert s.tile == SM90_M64_TILE and Problem(shape, SM90_M64_TILE).tiles <= H200.sms
    assert s == schedule_for("auto", shape, dtype, H200, tile=SM90_M64_TILE)  # auto's own launch on that tile
    square = schedule_for("auto", shape, dtype, H200, tile=SM90_TILE)
    assert one_wave_m64(shape, H200.sms, square)


@pytest.mark.parametrize("mnk", [(1315, 488, 7280),   # auto's launch already runs as many CTAs (88 for 84 tiles)
                                 (2069, 1424, 2800)])  # 33 x 12 = 396 tiles of 64x128: three waves
def test_auto_keeps_128_row_tiles_where_the_64_row_wave_adds_no_ctas_or_does_not_fit(mnk):
    shape = GemmShape(*mnk)
    square = schedule_for("auto", shape, "float16", H200, tile=SM90_TILE)
    m64_tiles = Problem(shape, SM90_M64_TILE).tiles
    assert m64_tiles > H200.sms or square.grid > M64_WAVE_MAX_SHARE * m64_tiles
    assert not one_wave_m64(shape, H200.sms, square)
    assert schedule_for("auto", shape, "float16", H200).tile != SM90_M64_TILE


def test_not_where_the_64_row_kernel_would_pack_its_operands():
    """k = 2161: A's rows are not 16-byte aligned, so the TMA kernels pack it; the rule was measured on
    aligned rows only."""
    shape = GemmShape(630, 1512, 2161)
    assert packed_bytes(shape, "float16", SM90_M64_TILE) > 0
    assert one_wave_m64(shape, H200.sms, schedule_for("auto", shape, "float16", H200, tile=SM90_TILE))
    assert schedule_for("auto", shape, "float16", H200).tile != SM90_M64_TILE


def test_only_a_target_that_measured_it_takes_it():
    shape = GemmShape(630, 1512, 2160)
    assert not preset("h100").one_wave_m64 and H200.one_wave_m64
    assert schedule_for("auto", shape, "float16", preset("h100")).tile != SM90_M64_TILE


@pytest.mark.parametrize("mnk", [(140, 6256, 1288), (187, 7248, 1144), (192, 8448, 576)])
@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_m_of_129_to_192_past_a_wave_of_64x128_tiles_runs_one_wave_of_64x192_tiles(mnk, dtype):
    shape = GemmShape(*mnk)
    assert Problem(shape, SM90_M64_TILE).tiles > H200.sms >= Problem(shape, SM90_M64_192_TILE).tiles
    s = schedule_for("auto", shape, dtype, H200)
    assert s.tile == SM90_M64_192_TILE
    assert s == schedule_for("auto", shape, dtype, H200, tile=SM90_M64_192_TILE)  # auto's own launch on that tile
    assert one_wave_m64_192(shape, H200.sms, schedule_for("auto", shape, dtype, H200, tile=SM90_TILE))


@pytest.mark.parametrize("mnk", [(140, 8456, 1288),    # 3 x 45 tiles of 64x192: past a wave
                                 (171, 2952, 504),     # the 64x128 tiles fit a wave: that rule's
                                 (5395, 192, 328),     # tall m: 128-row tiles pad little
                                 (257, 6256, 1288),    # m past 192: five 64-row tiles pad as much
                                 (174, 6544, 472)])    # 8 MAC iterations a tile: the epilogue weighs more
def test_64x192_only_for_m_of_129_to_192_with_a_wave_of_its_tiles(mnk):
    shape = GemmShape(*mnk)
    assert not one_wave_m64_192(shape, H200.sms, schedule_for("auto", shape, "float16", H200, tile=SM90_TILE))
    assert schedule_for("auto", shape, "float16", H200).tile != SM90_M64_192_TILE
    assert schedule_for("auto", shape, "float16", preset("h100")).tile != SM90_M64_192_TILE


@pytest.mark.parametrize("mnk, tile", [((128, 4096, 4096), SM90_M64_TILE),       # 2 x 32 tiles of 64x128
                                       ((103, 8320, 11008), SM90_M64_TILE),      # 2 x 65: 130, one wave
                                       ((128, 11008, 4096), SM90_M64_192_TILE),  # 172 of 64x128, 116 of 64x192
                                       ((77, 11264, 10496), SM90_M64_192_TILE)])
@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_m_of_65_to_128_runs_one_wave_of_64_row_tiles_however_many_ctas_auto_would_run(mnk, tile, dtype):
    shape = GemmShape(*mnk)
    square = schedule_for("auto", shape, dtype, H200, tile=SM90_TILE)
    m64_tiles = Problem(shape, SM90_M64_TILE).tiles
    if tile == SM90_M64_TILE:  # not v76's few-CTA case
        assert square.grid > M64_WAVE_MAX_SHARE * m64_tiles
    else:  # past a wave of 64x128 tiles: no padding to save at m <= 128, only the CTAs
        assert m64_tiles > H200.sms and shape.m <= SM90_TILE.bm
    s = schedule_for("auto", shape, dtype, H200)
    assert s.tile == tile and s == schedule_for("auto", shape, dtype, H200, tile=tile)
    assert schedule_for("auto", shape, dtype, preset("h100")).tile not in (SM90_M64_TILE, SM90_M64_192_TILE)


def test_m_of_65_to_128_past_a_wave_of_both_keeps_128_row_tiles():
    shape = GemmShape(128, 14336, 4096)  # 2 x 112 tiles of 64x128, 2 x 75 of 64x192
    square = schedule_for("auto", shape, "float16", H200, tile=SM90_TILE)
    assert not one_wave_m64(shape, H200.sms, square) and not one_wave_m64_192(shape, H200.sms, square)
    assert schedule_for("auto", shape, "float16", H200).tile == SM90_TILE


@pytest.mark.parametrize("mnk", [(125, 4608, 15616), (91, 4480, 13312), (77, 3328, 10752)])
@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_m_of_65_to_128_keeps_the_128_row_launch_where_it_splits_deep_tiles_over_more_ctas(mnk, dtype):
    shape = GemmShape(*mnk)
    square = schedule_for("auto", shape, dtype, H200, tile=SM90_TILE)
    narrow = schedule_for("auto", shape, dtype, H200, tile=SM90_M64_TILE)
    assert one_wave_m64(shape, H200.sms, square)  # the rule alone would take the 64-row wave
    assert square.grid > narrow.grid and narrow.problem.iters_per_tile >= M64_DEEP_ITERS
    assert split_wider(square, narrow)
    assert schedule_for("auto", shape, dtype, H200).tile == SM90_TILE


@pytest.mark.parametrize("mnk", [(98, 6016, 7680),     # as many CTAs on both tiles
                                 (126, 3328, 8960)])   # more CTAs on 128x128 tiles, but 140 MAC iterations deep
def test_m_of_65_to_128_takes_the_64_row_wave_where_the_split_adds_no_ctas_or_the_tiles_are_shallower(mnk):
    shape = GemmShape(*mnk)
    square = schedule_for("auto", shape, "float16", H200, tile=SM90_TILE)
    assert not split_wider(square, schedule_for("auto", shape, "float16", H200, tile=SM90_M64_TILE))
    assert schedule_for("auto", shape, "float16", H200).tile == SM90_M64_TILE


@pytest.mark.parametrize("mnk", [(3599, 160, 3392), (4131, 192, 2328), (2933, 160, 2192), (4130, 176, 1136)])
@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_tall_gemms_of_129_192_columns_take_one_192_wide_column_where_bs_rows_are_whole_sectors(mnk, dtype):
    """Where one_wave_m64 would take 64x128x64 tiles but n is 129-192, one 64x192 column of tiles pads
    none of the second 128-wide column's 64-127 columns (launches.one_column_192, LOG.md v108)."""
    from streamk.gpu.decide.launches import one_column_192

    shape = GemmShape(*mnk)
    square = schedule_for("auto", shape, dtype, H200, tile=SM90_TILE)
    assert one_wave_m64(shape, H200.sms, square) and one_column_192(shape, H200.sms, square, shape.n * 2)
    s = schedule_for("auto", shape, dtype, H200)
    assert s.tile == SM90_M64_192_TILE
    assert s == schedule_for("auto", shape, dtype, H200, tile=SM90_M64_192_TILE)


@pytest.mark.parametrize("mnk", [(4133, 168, 1168), (3046, 168, 2192), (4197, 152, 336)])
def test_but_not_where_bs_rows_straddle_sectors(mnk):
    """n = 152 or 168: B's rows are 16 bytes off a 32-byte sector every other row, where the 64x128x64
    launch's B-sharing pairs ran 1.03-1.18x faster than one 192-wide column (LOG.md v108)."""
    shape = GemmShape(*mnk)
    assert schedule_for("auto", shape, "float16", H200).tile == SM90_M64_TILE
