"""The kernel catalogue: every entry name, compile unit and KernelSpec comes from its variants (no GPU)."""

import ctypes
import re

import pytest

from streamk.gpu import catalogue as reg
from streamk.gpu.build import UNITS, compile_unit_of
from streamk.gpu.catalogue import SMALL_TILE, SPECS, WIDE_TILE, tile_specs
from streamk.gpu.catalogue.source import unit_source, units
from streamk.shapes import TileShape


def test_every_spec_entry_is_a_registry_variant_of_its_dtype_and_tile():
    specs = [spec for dtype in SPECS for spec in tile_specs(dtype).values()]
    for spec in specs:
        for width, name in ((16, spec.main), *spec.narrow):
            v = reg.BY_NAME[name]
            assert (v.role, v.tile, v.load_bytes) == ("main", spec.tile, width)
        for role in ("reduce", "prescale"):
            v = reg.BY_NAME[getattr(spec, role)]
            assert (v.role, v.tile, v.dtype) == (role, spec.tile, spec.out_dtype)
        assert reg.BY_NAME[spec.pack].role == "pack"
    assert {reg.BY_NAME[n].role for s in specs for n in (s.main, s.reduce, s.prescale, s.pack)} == {
        "main", "reduce", "prescale", "pack"}


def test_each_unit_source_defines_exactly_its_entries_once():
    for unit, names in UNITS.items():
        source = unit_source(unit)
        defined = re.findall(r'extern "C" __global__ void(?: __launch_bounds__\([^)]*\))? (\w+)\(', source)
        assert defined == list(names)
        assert all(compile_unit_of(n) == unit for n in names)
    assert compile_unit_of("streamk_sm80_f16_w2") is None  # shifted copies on the decode tiles only


def test_names_follow_the_rule_and_keep_their_meaning():
    assert SPECS["float16"].main == "streamk_sm80_f16" and SPECS["float64"].narrow == ((8, "streamk_sm80_f64_w8"),)
    assert tile_specs("bfloat16")[SMALL_TILE].entry(4) == "streamk_sm80_bf16_t64_w4"
    assert tile_specs("float16")[WIDE_TILE].reduce == "streamk_reduce_f32_t128x256"
    f64 = tile_specs("float64")  # the paper's FP64 tile first (auto runs it), then the larger ones
    assert list(f64) == [TileShape(64, 64, 16), TileShape(128, 64, 16), TileShape(128, 128, 16)]
    assert f64[TileShape(64, 64, 16)] == SPECS["float64"]
    assert f64[TileShape(128, 128, 16)].entry(8) == "streamk_sm80_f64_t128x128_w8"
    assert f64[TileShape(128, 64, 16)].reduce == "streamk_reduce_f64_t128x64"
    assert tile_specs("float16")[SMALL_TILE].entry(2) == "streamk_sm80_f16_t64_w2"  # shifted copies: 64x64 and 32x64 only
    assert {t for t, s in tile_specs("float16").items() if 2 in dict(s.narrow)} == set(reg.SHIFTED_TILES)
    assert all(w in (8, 4, 2) for s in tile_specs("float16").values() for w, _ in s.narrow)


def test_the_fp64_tiles_instantiate_one_template_the_paper_tile_as_before():
    paper = reg.BY_NAME["streamk_sm80_f64"]
    assert (paper.stages, paper.blocks_per_sm) == (4, 2)
    assert paper.cxx_type == "streamk::sm80::Double<16, streamk::sm80::F64Tile<64, 64, 4>>"
    wide = reg.BY_NAME["streamk_sm80_f64_t128x128_w8"]
    assert (wide.stages, wide.blocks_per_sm, wide.unit) == (2, 1, "sm80_f64_128x128_w8")
    assert wide.cxx_type == "streamk::sm80::Double<8, streamk::sm80::F64Tile<128, 128, 2>>"
    tall = reg.BY_NAME["streamk_sm80_f64_t128x64"]
    assert tall.cxx_type == "streamk::sm80::Double<16, streamk::sm80::F64Tile<128, 64, 3>>"
    assert "__launch_bounds__(streamk_sm80_f64_t128x64_t::THREADS, 1)" in unit_source("sm80_f64_128x64_w16")


def test_variants_check_themselves():
    with pytest.raises(ValueError, match="role must be one of"):
        reg.KernelVariant("mainx", "sm80_half", "float16", TileShape(128, 128, 32))
    with pytest.raises(ValueError, match="load_bytes must be 16, 8, 4 or 2"):
        reg.KernelVariant("main", "sm80_half", "float16", TileShape(128, 128, 32), load_bytes=1)
    with pytest.raises(ValueError, match="only main kernels have narrow copies"):
        reg.KernelVariant("reduce", "sm80_half", "float32", TileShape(128, 128, 32), load_bytes=8)


def test_the_sm90_family_is_generated_like_the_others_and_built_for_sm90a_only():
    from streamk.gpu.build import units_for
    from streamk.gpu.runtime.launch import TmaParams
    from streamk.gpu.catalogue import spec_for_tile

    spec = spec_for_tile("bfloat16", "128x128x64")
    assert (spec.main, spec.reduce, spec.prescale) == ("streamk_sm90_bf16", "streamk_reduce_f32_sm90",
                                                       "streamk_prescale_f32_sm90")
    assert spec.tma and spec.archs == ("sm_90a",) and spec.narrow == ()
    assert spec_for_tile("float16", "128x128").main == "streamk_sm80_f16"  # two sides: the first of the tile
    assert "sm90_tma_128x128_w16" in units_for("sm_90a") and "sm90_tma_128x128_w16" not in units_for("sm_80")
    source = unit_source("sm90_tma_128x128_w16")
    assert "__launch_bounds__(streamk_sm90_f16_t::BLOCK_THREADS, 1) streamk_sm90_f16(const __grid_constant__" in source
    assert "__launch_bounds__(streamk_reduce_f32_sm90_t::THREADS) streamk_reduce_f32_sm90(const streamk::GemmParams" in source
    from streamk.gpu.build import compile_source

    with pytest.raises(ValueError, match="sm90_tma_128x128_w16 is not built for sm_80 .*sm_90a"):
        compile_source("sm90_tma_128x128_w16", "sm_80")
    # kernels/sm90/tma_wgmma.cuh TmaParams: the GemmParams, then three 128-byte maps on 64-byte boundaries
    assert (TmaParams.a.offset, TmaParams.b.offset, TmaParams.c.offset, ctypes.sizeof(TmaParams)) == (256, 384, 512, 640)


def test_the_wide_sm90_tile_is_a_second_tile_of_the_family_with_four_stages_and_c_in_tma_boxes():
    from streamk.gpu.build import units_for
    from streamk.gpu.catalogue import TMA_STORE_TILES, spec_for_tile

    spec = spec_for_tile("float16", "128x256x64")
    assert spec.tile == TileShape(128, 256, 64) and spec.tma and spec.archs == ("sm_90a",) and spec.narrow == ()
    assert (spec.main, spec.reduce, spec.prescale) == ("streamk_sm90_f16_t128x256", "streamk_reduce_f32_t128x256_sm90",
                                                       "streamk_prescale_f32_t128x256_sm90")
    assert spec_for_tile("bfloat16", "128x256x64").main == "streamk_sm90_bf16_t128x256"
    assert spec_for_tile("float16", "128x256").main == "streamk_sm80_f16_t128x256"  # two sides: the first, sm80's
    main = reg.BY_NAME["streamk_sm90_bf16_t128x256"]
    assert (main.stages, main.blocks_per_sm, main.unit) == (4, 1, "sm90_tma_128x256_w16")
    assert main.cxx_type == "streamk::sm90::TmaWgmma<true, 256, 4, false, false, 1, 128>"
    assert spec.tile in TMA_STORE_TILES  # C leaves in 32-column TMA boxes (kernels/sm90/config.cuh)
    # 128x128x64 runs ping-pong consumers at five stages (kernels/sm90/config.cuh)
    assert reg.BY_NAME["streamk_sm90_f16"].cxx_type == "streamk::sm90::TmaWgmma<false, 128, 5, false, false, 1, 128>"
    assert "sm90_tma_128x256_w16" in units_for("sm_90a") and "sm90_tma_128x256_w16" not in units_for("sm_80")
    source = unit_source("sm90_tma_128x256_w16")
    assert "__launch_bounds__(streamk_sm90_f16_t128x256_t::BLOCK_THREADS, 1) streamk_sm90_f16_t128x256(" in source


def test_the_64_row_sm90_tiles_are_the_family_on_one_consumer_warp_group():
    """64x128x64 (7 stages) and 64x256x64 (4 stages), one CTA an SM each: the same template with BM
    64, 256 threads (a producer and one consumer warp group), every operand layout, their own passes.
    64x256x64 stages C in column halves to fit its fourth stage (kernels/sm90/config.cuh), so it
    writes C through the shared epilogue, never a TMA map."""
    from streamk.gpu.catalogue import SM90_M64_TILE, SM90_M64_WIDE_TILE, SM90_TILES, TMA_STORE_TILES, spec_for_tile

    assert {SM90_M64_TILE, SM90_M64_WIDE_TILE} <= set(SM90_TILES)
    assert SM90_M64_TILE in TMA_STORE_TILES and SM90_M64_WIDE_TILE not in TMA_STORE_TILES
    spec = spec_for_tile("float16", "64x128x64")
    assert spec.tile == SM90_M64_TILE and spec.tma and spec.archs == ("sm_90a",) and spec.narrow == ()
    assert (spec.main, spec.reduce, spec.prescale) == ("streamk_sm90_f16_t64x128", "streamk_reduce_f32_t64x128_sm90",
                                                       "streamk_prescale_f32_t64x128_sm90")
    assert spec_for_tile("float16", "64x128").main == "streamk_sm80_f16_t64x128"  # two sides: the first, sm80's
    assert [layout for layout, _ in spec.layouts] == ["acm", "bcm", "acm_bcm"]
    narrow, wide = reg.BY_NAME["streamk_sm90_f16_t64x128"], reg.BY_NAME["streamk_sm90_bf16_t64x256_acm_bcm"]
    assert (narrow.stages, narrow.blocks_per_sm, narrow.unit) == (7, 1, "sm90_tma_64x128_w16")
    assert narrow.cxx_type == "streamk::sm90::TmaWgmma<false, 128, 7, false, false, 1, 64>"
    assert (wide.stages, wide.blocks_per_sm, wide.unit) == (4, 1, "sm90_tma_64x256_w16_acm_bcm")
    assert wide.cxx_type == "streamk::sm90::TmaWgmma<true, 256, 4, true, true, 1, 64>"
    source = unit_source("sm90_tma_64x128_w16")
    assert "__launch_bounds__(streamk_sm90_f16_t64x128_t::BLOCK_THREADS, 1) streamk_sm90_f16_t64x128(" in source
    assert "static_assert(streamk_sm90_f16_t64x128_t::BM == 64 && streamk_sm90_f16_t64x128_t::BN == 128" in source


def test_the_sm90_kernels_read_column_major_operands_each_layout_its_own_unit():
    from streamk.gpu.catalogue import spec_for_tile

    spec = spec_for_tile("bfloat16", "128x256x64")
    assert spec.layouts == (("acm", "streamk_sm90_bf16_t128x256_acm"), ("bcm", "streamk_sm90_bf16_t128x256_bcm"),
                            ("acm_bcm", "streamk_sm90_bf16_t128x256_acm_bcm"))
    assert spec.entry(16, "bcm") == "streamk_sm90_bf16_t128x256_bcm" and spec.entry(16) == spec.main
    assert spec.reads_column_major("A") and spec.reads_column_major("B")
    assert not spec_for_tile("float16", "128x128x32").reads_column_major("B")  # sm80: packed
    both = reg.BY_NAME["streamk_sm90_f16_acm_bcm"]
    assert both.cxx_type == "streamk::sm90::TmaWgmma<false, 128, 5, true, true, 1, 128>"
    assert reg.BY_NAME["streamk_sm90_f16_bcm"].cxx_type == "streamk::sm90::TmaWgmma<false, 128, 5, false, true, 1, 128>"
    # a GEMM compiles only what it launches: a layout's unit holds its main kernels, the passes
    # stay in the row-major unit
    assert [v.name for v in units()["sm90_tma_128x128_w16_bcm"]] == ["streamk_sm90_f16_bcm", "streamk_sm90_bf16_bcm"]
    with pytest.raises(ValueError, match="layout 'bcm' is not one of sm80_half"):
        reg.KernelVariant("main", "sm80_half", "float16", TileShape(128, 128, 32), layout="bcm")
