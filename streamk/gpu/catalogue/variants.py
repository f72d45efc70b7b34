"""The kernels streamk ships, as data: one frozen ``KernelVariant`` per ``extern "C"`` entry point,
and the tiles they run, each named once.

Every entry point's name, the CUDA source that instantiates its templates (``source.unit_source``),
the compile unit it lives in (``build.compile_unit_of``) and the ``KernelSpec`` tables the host picks
kernels from (``specs.SPECS``, ``specs.spec_for_tile``) are derived from ``VARIANTS``; no entry name is
written anywhere else. A compile unit is one mainloop on one tile with one copy width (with the
tile's reduce and prescale passes in the 16-byte unit), so a GEMM compiles only what it launches.

Names: ``streamk_<arch prefix>_<dtype>[_<tile tag>][_<layout>][_w<copy bytes>]`` for a main kernel
(no tag on the mainloop's paper tile, no layout for row-major A and B, no width suffix for 16-byte
copies), ``streamk_<reduce|prescale>_
<accumulator dtype>[_<tile tag>]`` for its passes, ``streamk_pack_b<bits>`` for the pack pass.
"""

from __future__ import annotations

from dataclasses import dataclass

from ...shapes import ITEMSIZE, TileShape

ROLES = ("main", "reduce", "prescale", "pack", "test")
SHORT = {"float16": "f16", "bfloat16": "bf16", "float32": "f32", "float64": "f64"}


@dataclass(frozen=True, slots=True)
class Mainloop:
    """A mainloop family: its header, the C++ type of one instantiation (``cxx`` with the fields
    ``bf16``, ``load_bytes``, ``bm``, ``bn``, ``stages``, ``a_mn``, ``b_k``, ``blocks``), the input dtypes it
    reads, its accumulator (and C) dtype and the paper's tile, which its entry names leave untagged."""

    name: str
    prefix: str
    header: str
    cxx: str
    dtypes: tuple[str, ...]
    acc_dtype: str
    paper_tile: TileShape
    archs: tuple[str, ...] = ("sm_80", "sm_90a")  # what NVRTC compiles it for (and devices run it on)
    # the main entry's body, parameter type and block size (a member of the instantiated type)
    body: str = "streamk::main_kernel<{t}>(p);"
    params: str = "const streamk::GemmParams"
    block: str = "THREADS"
    pass_suffix: str = ""  # tells its reduce / prescale entries from another family's on the same tile
    tma: bool = False  # reads A and B through TMA maps in its parameter block (launch.TmaParams)
    # reads operands of unit column stride in place at any row stride and 2-byte alignment (no
    # copy widths; operands.copy_widths)
    any_rows: bool = False
    # "A" or "B": the operand its kernels read an element at a time, in place at any strides
    # (OperandParams a_cs / b_cs)
    elementwise: str = ""
    # the operand layouts it has main kernels for (LAYOUTS): "" reads row-major A and B only
    layouts: tuple[str, ...] = ("",)


# Operand layouts a main kernel reads in place, by name suffix: "" row-major A and B; "acm" a
# column-major A, "bcm" a column-major B (torch's W.t()), "acm_bcm" both. The sm90 kernels have all
# four (wgmma reads 16-bit A M-major and B K-major from shared memory as TMA writes them).
LAYOUTS = ("", "acm", "bcm", "acm_bcm")


def layout_of_operands(a_column_major: bool, b_column_major: bool) -> str:
    """The LAYOUTS name of a kernel reading A and B so."""
    return "_".join(tag for tag, cm in (("acm", a_column_major), ("bcm", b_column_major)) if cm)


def column_major(layout: str, operand: str) -> bool:
    """Whether a kernel of ``layout`` (LAYOUTS) reads ``operand`` ("A" or "B") column-major."""
    return f"{operand.lower()}cm" in layout.split("_")


# The tiles, each named once. The FP16/BF16 mma.sync tiles: the paper's, the small square, the
# rectangles, the tiny 32-row ones and the wide one; the FP64 paper tile; the sm90 TMA + wgmma tiles;
# the dot tiles of GEMMs of at most 8 columns (kernels/sm80/dot.cuh) or at most 8 rows (its transposed
# mainloop). What auto does with each: streamk/gpu/decide/tiles.py.
PAPER_HALF_TILE = TileShape(128, 128, 32)
SMALL_TILE = TileShape(64, 64, 32)
RECT_TILES = (TileShape(128, 64, 32), TileShape(64, 128, 32))
TINY_TILES = (TileShape(32, 64, 32), TileShape(32, 32, 32))
WIDE_TILE = TileShape(128, 256, 32)
F64_TILE = TileShape(64, 64, 16)
# The larger FP64 tiles (sm80/f64_config.cuh): fewer operand bytes from L2 and shared memory per flop
F64_LARGE_TILES = (TileShape(128, 64, 16), TileShape(128, 128, 16))
SM90_TILE = TileShape(128, 128, 64)
SM90_WIDE_TILE = TileShape(128, 256, 64)
SM90_NARROW_TILE = TileShape(128, 64, 64)
SM90_192_TILE = TileShape(128, 192, 64)
# 64 rows, one consumer warp group (sm90/tma_wgmma.cuh), one CTA an SM
SM90_M64_TILE = TileShape(64, 128, 64)
SM90_M64_WIDE_TILE = TileShape(64, 256, 64)
# a narrow side of 129-192 in one column of tiles (cuBLAS runs 64-row tiles cut to such sides: LOG.md v80)
SM90_M64_192_TILE = TileShape(64, 192, 64)
SM90_TILES = (SM90_TILE, SM90_WIDE_TILE, SM90_NARROW_TILE, SM90_192_TILE, SM90_M64_TILE, SM90_M64_WIDE_TILE,
              SM90_M64_192_TILE)
# The sm90 tiles whose kernels can write C through a TMA map (sm90/tma_wgmma.cuh: the whole FP32 tile
# fits the epilogue's staging, or it leaves in 32-column boxes, as on 128x128, 128x192 and 128x256). 64x256
# stages it in halves to fit a fourth stage of its ring (sm90/config.cuh; LOG.md v64).
TMA_STORE_TILES = (SM90_TILE, SM90_WIDE_TILE, SM90_NARROW_TILE, SM90_192_TILE, SM90_M64_TILE, SM90_M64_192_TILE)
DOT_TILE = TileShape(64, 8, 128)
DOT_T_TILE = TileShape(8, 128, 64)
# The large-GEMM tiles (square, wide) of each kernel family: the sm80 mma.sync kernels' and the sm90
# TMA + wgmma ones' (a Target's ``large_rungs`` names the family auto takes them from).
LARGE_RUNGS = {"sm80": (PAPER_HALF_TILE, WIDE_TILE), "sm90": (SM90_TILE, SM90_WIDE_TILE)}

MAINLOOPS = {m.name: m for m in (
    Mainloop("sm80_half", "sm80", "sm80/half.cuh",
             "streamk::sm80::Half<{bf16}, {load_bytes}, streamk::sm80::Tile<{bm}, {bn}, {stages}>>",
             ("float16", "bfloat16"), "float32", PAPER_HALF_TILE),
    Mainloop("sm80_f64", "sm80", "sm80/f64.cuh",
             "streamk::sm80::Double<{load_bytes}, streamk::sm80::F64Tile<{bm}, {bn}, {stages}>>",
             ("float64",), "float64", F64_TILE),
    # at most 8 columns (GEMV-like decode GEMMs): A read in place at any row alignment; at most 8
    # rows: the same on the transposed problem, B read in place
    Mainloop("sm80_dot", "dot", "sm80/dot.cuh", "streamk::sm80::Dot<{bf16}, false>", ("float16", "bfloat16"),
             "float32", DOT_TILE, pass_suffix="_dot", any_rows=True, elementwise="B"),
    Mainloop("sm80_dot_t", "dot_t", "sm80/dot.cuh", "streamk::sm80::Dot<{bf16}, true>", ("float16", "bfloat16"),
             "float32", DOT_T_TILE, pass_suffix="_dot_t", any_rows=True, elementwise="A"),
    Mainloop("ws_test", "ws_test", "testing/warp_specialized.cuh", "streamk::testing::WsKernel",
             ("float32",), "float32", TileShape(32, 32, 8)),
    # TMA + wgmma, a producer warp group and one consumer one per 64 tile rows; the TMA maps ride in the
    # __grid_constant__ parameter block (streamk/gpu/runtime/tma.py builds them)
    Mainloop("sm90_tma", "sm90", "sm90/tma_wgmma.cuh",
             "streamk::sm90::TmaWgmma<{bf16}, {bn}, {stages}, {a_mn}, {b_k}, {blocks}, {bm}>",
             ("float16", "bfloat16"), "float32", SM90_TILE, archs=("sm_90a",),
             body="streamk::sm90::tma_wgmma_kernel<{t}>(p);", params="const __grid_constant__ streamk::sm90::TmaParams",
             block="BLOCK_THREADS", pass_suffix="_sm90", tma=True, layouts=LAYOUTS),
)}


@dataclass(frozen=True, slots=True)
class KernelVariant:
    """One entry point: ``role`` (main kernel, reduce pass, prescale pass, pack pass, or a test
    kernel), its mainloop family, ``dtype`` (inputs of a main kernel, the accumulators a pass
    sums or scales, the elements a pack pass copies), the CTA tile, the global->shared copy width
    in bytes, the pipeline stages, ``blocks_per_sm`` for ``__launch_bounds__`` (0: not given),
    ``tag``, the tile's part of the name, and ``layout``, the operand layout a main kernel reads
    (LAYOUTS)."""

    role: str
    mainloop: str
    dtype: str
    tile: TileShape | None = None
    load_bytes: int = 16
    stages: int = 0
    blocks_per_sm: int = 0
    tag: str = ""
    layout: str = ""

    def __post_init__(self) -> None:
        if self.role not in ROLES:
            raise ValueError(f"role must be one of {', '.join(ROLES)} (got {self.role!r})")
        if self.mainloop not in MAINLOOPS:
            raise ValueError(f"mainloop must be one of {', '.join(MAINLOOPS)} (got {self.mainloop!r})")
        if self.load_bytes not in (16, 8, 4, 2):
            raise ValueError(f"load_bytes must be 16, 8, 4 or 2 (got {self.load_bytes})")
        if self.load_bytes != 16 and self.role != "main":
            raise ValueError(f"only main kernels have narrow copies (got a {self.role} with {self.load_bytes})")
        if (self.tile is None) != (self.role == "pack"):
            raise ValueError(f"a {self.role} kernel {'has no' if self.role == 'pack' else 'needs a'} tile")
        if self.layout and (self.role != "main" or self.layout not in MAINLOOPS[self.mainloop].layouts):
            raise ValueError(f"layout {self.layout!r} is not one of {self.mainloop}'s main kernels' "
                             f"{MAINLOOPS[self.mainloop].layouts}")

    @property
    def name(self) -> str:
        family = MAINLOOPS[self.mainloop]
        tag = f"_{self.tag}" if self.tag else ""
        if self.role == "pack":
            return f"streamk_pack_b{8 * ITEMSIZE[self.dtype]}"
        if self.role in ("reduce", "prescale"):
            return f"streamk_{self.role}_{SHORT[self.dtype]}{tag}{family.pass_suffix}"
        width = "" if self.load_bytes == 16 else f"_w{self.load_bytes}"
        layout = f"_{self.layout}" if self.layout else ""
        return f"streamk_{family.prefix}_{SHORT[self.dtype]}{tag}{layout}{width}"

    @property
    def unit(self) -> str:
        """The compile unit (one NVRTC program, one cached cubin, one module) it belongs to."""
        if self.tile is None:
            return self.role
        layout = f"_{self.layout}" if self.layout else ""
        return f"{self.mainloop}_{self.tile.bm}x{self.tile.bn}_w{self.load_bytes}{layout}"

    @property
    def cxx_type(self) -> str:
        """The C++ type the entry point instantiates: the mainloop (a pass reads its fragment
        layout: a half mainloop's passes take its FP16 instantiation) or the packed element."""
        if self.tile is None:
            return {2: "unsigned short", 8: "unsigned long long"}[ITEMSIZE[self.dtype]]
        return MAINLOOPS[self.mainloop].cxx.format(
            bf16=str(self.dtype == "bfloat16").lower(), load_bytes=self.load_bytes,
            bm=self.tile.bm, bn=self.tile.bn, stages=self.stages, a_mn=str(column_major(self.layout, "A")).lower(),
            b_k=str(column_major(self.layout, "B")).lower(), blocks=self.blocks_per_sm or 1)



def _tile_tag(mainloop: str, tile: TileShape) -> str:
    """No tag on the paper's tile, ``t64`` on the square 64x64, ``t<bm>x<bn>`` on the others."""
    if tile == MAINLOOPS[mainloop].paper_tile:
        return ""
    return f"t{tile.bm}" if tile.bm == tile.bn == 64 else f"t{tile.bm}x{tile.bn}"


def _family(mainloop: str, tile: TileShape, widths: tuple[int, ...], stages: int,
            blocks_per_sm: int) -> tuple[KernelVariant, ...]:
    """A tile's main kernels for every input dtype, copy width and operand layout (each layout its
    own compile unit), then its reduce and prescale passes (whose launch bounds give the block only)."""
    family, tag = MAINLOOPS[mainloop], _tile_tag(mainloop, tile)
    main = tuple(KernelVariant("main", mainloop, dtype, tile, width, stages, blocks_per_sm, tag, layout)
                 for width in widths for layout in family.layouts for dtype in family.dtypes)
    passes = tuple(KernelVariant(role, mainloop, family.acc_dtype, tile, 16, stages, 0, tag)
                   for role in ("reduce", "prescale"))
    return main + passes


HALF_STAGES = 3  # sm80/half_config.cuh STAGES
# The FP64 tiles (sm80/f64_config.cuh), the paper's first, with their pipeline stages and the CTAs per
# SM their __launch_bounds__ ask for: 64x64 4 stages of k 16 (75,776 B), 2 CTAs; 128x64 (8 warps of
# 32x32) 3 stages of k 32 (162,816 B) and 128x128 (8 warps of 32x64) 2 of k 32 (141,312 B, room for
# the epilogue's 139,264-byte C tile), one CTA each (up to 255 registers a thread).
F64_STAGES = 4   # the paper's FP64 tile's
F64_TILES = ((F64_TILE, F64_STAGES, 2), (F64_LARGE_TILES[0], 3, 1), (F64_LARGE_TILES[1], 2, 1))
# The sm90 TMA + wgmma tiles' stages and CTAs an SM (sm90/config.cuh: as many 64-deep stages as fit
# beside the epilogue's staging; 128x64 at two CTAs an SM, the others one: 64x128 runs 7 stages alone
# on its SM, 1.05x auto's time at 3 stages two an SM on its shapes, LOG.md v75).
SM90_STAGES = {SM90_TILE: (5, 1), SM90_WIDE_TILE: (4, 1), SM90_NARROW_TILE: (3, 2), SM90_192_TILE: (4, 1),
               SM90_M64_TILE: (7, 1), SM90_M64_WIDE_TILE: (4, 1), SM90_M64_192_TILE: (5, 1)}
HALF_WIDTHS = (16, 8, 4)
# The tiles of at most 8 columns or rows (sm80/dot.cuh): one width (they read any row alignment
# themselves), launch bounds for 4 CTAs per SM (56,576 and 54,528 B of shared memory; no spills on
# sm_90a; on sm_80 the 8x128 tile spills 56 B, where an A100 fits only 2 such CTAs per SM anyway).
DOT_STAGES = 3  # sm80/dot.cuh STAGES
DOT_BLOCKS_PER_SM = 4
# Shifted 16-byte copies of rows only 2-byte aligned (sm80/pipeline.cuh SHIFTED), on the tiles auto
# takes for decode-like GEMMs (decide/tiles.py: there the operand a pack would copy is the large one).
SHIFTED_TILES = (SMALL_TILE, TINY_TILES[0], *RECT_TILES)
# The FP16/BF16 tiles, the paper's first (then the order tile_specs lists them), with the CTAs per
# SM their __launch_bounds__ ask for: 3 on 64x64 gives 152 registers and no spills (4: 128 and
# 100 B of spills outside the mainloop, auto 3.3% slower where it takes 64x64, LOG.md v13); none on
# 128x128, whose 2 CTAs per SM fit anyway (asking for 2 reschedules its SASS, untimed).
HALF_TILES = ((PAPER_HALF_TILE, 0), (SMALL_TILE, 3), (RECT_TILES[0], 2), (RECT_TILES[1], 2), (TINY_TILES[0], 4),
              (TINY_TILES[1], 4), (WIDE_TILE, 1))

VARIANTS: tuple[KernelVariant, ...] = (
    *(v for tile, blocks in HALF_TILES for v in _family(
        "sm80_half", tile, HALF_WIDTHS + ((2,) if tile in SHIFTED_TILES else ()), HALF_STAGES, blocks)),
    *(v for tile, stages, blocks in F64_TILES for v in _family("sm80_f64", tile, (16, 8), stages, blocks)),
    KernelVariant("pack", "sm80_half", "float16"),
    KernelVariant("pack", "sm80_f64", "float64"),
    KernelVariant("test", "ws_test", "float32", TileShape(32, 32, 8)),
    *(v for tile, (stages, blocks) in SM90_STAGES.items() for v in _family("sm90_tma", tile, (16,), stages, blocks)),
    *_family("sm80_dot", DOT_TILE, (16,), DOT_STAGES, DOT_BLOCKS_PER_SM),
    *_family("sm80_dot_t", DOT_T_TILE, (16,), DOT_STAGES, DOT_BLOCKS_PER_SM),
)
BY_NAME = {v.name: v for v in VARIANTS}
assert len(BY_NAME) == len(VARIANTS), "entry names are unique"
