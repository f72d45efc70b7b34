"""Which way round ``auto`` runs a GEMM (``orient``): as given or transposed (C^T = B^T A^T), or on an
sm90 tile that reads column-major operands in place, whichever copies the fewest bytes; each
orientation's tile is ``decide.tiles.choose_tile``'s, picked once.

Each rule names the LOG.md entry that measured it; benchmarks/LOG.md holds the figures.
"""

from __future__ import annotations

from typing import Callable, NamedTuple

from ...shapes import ITEMSIZE, GemmShape, TileShape
from ...target import Target
from ..catalogue import DOT_TILE, SM90_M64_TILE, SM90_M64_WIDE_TILE, spec_for_tile
from .operands import Operand, copy_widths, decode_like, layout_of
from .tiles import DOT_ROW_MAJOR_MIN_K, choose_tile, large_tiles

# What auto's orientation rule prices, in the pack's time per byte of a row-major source (LOG.md
# v32-v33c): a source the pack transposes (a column-major operand, read down its columns) ~2x that;
# a C whose rows are not contiguous (the transposed problem's view of a row-major C), written with
# 4-byte stores, about one per byte of C (v32b's fit: 0.47 of a transposing pack byte).
TRANSPOSING_PACK_RATIO = 2.0
STRIDED_C_PACK_RATIO = 1.0


class Orientation(NamedTuple):
    """auto's answer: the problem runs transposed (C^T = B^T A^T) or not, on ``tile`` (an sm90 tile
    that reads the operands in place where ``in_place``, else auto's tile of the problem the kernels
    run)."""

    transposed: bool
    tile: TileShape
    in_place: bool


def orient(a: Operand, b: Operand, c: Operand | None, target: Target) -> Orientation:
    """auto's orientation and tile for these operands (the caller named no tile and asked for
    ``auto``; ``c`` None: the row-major C auto allocates). Transposed where that copies fewer bytes,
    C's strided writes priced in: typically torch's Linear, x @ W.t() with W row-major, where the
    direct GEMM packs all of W (no sm80 kernel reads a column-major operand in place) and the
    transposed one reads W's rows in place (at any alignment on the dot tiles of a GEMV,
    kernels/sm80/dot.cuh) and packs x, writing C down its columns."""
    if c is None:
        c = Operand(None, a.kind, 0, (a.shape[0], b.shape[1]), (b.shape[1], 1), a.dtype)
    m, k, n = a.shape[0], a.shape[1], b.shape[1]
    tiles: dict[bool, TileShape] = {}

    def tile_of(flipped: bool) -> TileShape:
        if flipped not in tiles:
            ops = (b.transposed(), a.transposed()) if flipped else (a, b)
            tiles[flipped] = choose_tile(GemmShape(n, m, k) if flipped else GemmShape(m, n, k), a.dtype, target,
                                         row_major=row_major_view(*ops))
        return tiles[flipped]

    def cost(flipped: bool) -> float:
        ops = (b.transposed(), a.transposed(), c.transposed()) if flipped else (a, b, c)
        return _copy_cost(*ops, tile_of(flipped))

    tall = tall_transposed_tile(a, b, target)
    if tall is not None:
        return Orientation(True, tall, True)
    square = in_place_tile(a, b, c, target, cost)
    if square is not None:
        return Orientation(False, square, True)
    transposed = cost(True) < cost(False)
    return Orientation(transposed, tile_of(transposed), False)


def row_major_view(a: Operand, b: Operand) -> bool:
    """Whether the kernels see ``a`` and ``b`` row-major (unit column stride; a column-major
    operand of one column, x^T of a one-row x, does not count): choose_tile's ``row_major``."""
    return a.strides[1] == 1 and b.strides[1] == 1


def _copy_cost(a: Operand, b: Operand, c: Operand, tile: TileShape) -> float:
    """The bytes the pack pass copies for C = A @ B on ``tile`` (a transposed source's at
    TRANSPOSING_PACK_RATIO), plus the price of writing C where its rows are not contiguous, in
    row-major pack bytes."""
    spec = spec_for_tile(a.dtype, tile)
    widths = copy_widths(a, b, spec)
    packed = sum(op.shape[0] * op.shape[1] * (1.0 if op.rows_contiguous else TRANSPOSING_PACK_RATIO)
                 for op, width in zip((a, b), widths) if width == 0) * spec.itemsize
    m, n = a.shape[0], b.shape[1]
    return packed + (0.0 if c.rows_contiguous else STRIDED_C_PACK_RATIO * m * n * ITEMSIZE[spec.out_dtype])


def in_place_tile(a: Operand, b: Operand, c: Operand, target: Target, cost: Callable[[bool], float]) -> TileShape | None:
    """The sm90 tile that reads the operands in place as given: column-major operands (torch's
    x @ W.t()) of GEMMs below auto's sm90 rungs, where auto would copy one in either orientation
    (``cost`` of the direct problem, False, or the transposed one, True), on the square tile; of
    decode-like GEMMs only torch's Linear with few rows and a large W, on a 64-row tile
    (``linear_decode_tile``; elsewhere their small and dot tiles were measured against the pack).
    It beat auto's 64x64 tiles with x^T packed on the transposed problem (LOG.md v37)."""
    m, k, n = a.shape[0], a.shape[1], b.shape[1]
    decode = decode_like(m, n)
    tile = linear_decode_tile(m, n, k, a.dtype, target) if decode else large_tiles(target, a.dtype)[0]
    if tile is None:
        return None
    spec = spec_for_tile(a.dtype, tile)
    if not spec.tma or copy_widths(a, b, spec) != (16, 16) or not c.rows_contiguous:
        return None
    if decode:  # only torch's Linear layout was measured, also against 128x256x64 in place
        return tile if layout_of(a, b, spec) == "bcm" else None
    return tile if min(cost(False), cost(True)) > 0 else None


# torch's Linear with a W of 9-64 rows over many tokens (a MoE router's x @ W.t()) runs transposed on
# the 64x128x64 tile in place, on the H200 (``Target.tall_transposed``): C^T = W x^T puts W's rows in one
# 64-row tile (not 128 columns padded from 9-64) and streams x through the 7-stage ring, 128 of its rows
# a CTA, under auto's decomposition there; measured on a row-major x from TALL_TRANSPOSED_MIN_ROWS rows
# and TALL_TRANSPOSED_MIN_K on (in sample 1.13-2.48x auto on 14 shapes). A row-major B (whose sm80 tiles
# read A in place too) and 1-8 rows of W (the dot tiles) lost or tied held out: both keep auto's choice
# (LOG.md v97).
TALL_TRANSPOSED_MIN_ROWS = 4096  # rows of x
TALL_TRANSPOSED_MIN_K = 640


def tall_transposed_tile(a: Operand, b: Operand, target: Target) -> TileShape | None:
    """64x128x64 for x @ W.t() run transposed under the rule above where that kernel reads W and x^T
    in place, else None."""
    m, k, n = a.shape[0], a.shape[1], b.shape[1]
    tile = SM90_M64_TILE
    if not (target.tall_transposed and a.strides[1] == 1 and b.strides[0] == 1 and DOT_TILE.bn < n <= tile.bm
            and m >= TALL_TRANSPOSED_MIN_ROWS and k >= TALL_TRANSPOSED_MIN_K and tile in target.tiles_for(a.dtype)):
        return None
    return tile if copy_widths(b.transposed(), a.transposed(), spec_for_tile(a.dtype, tile)) == (16, 16) else None


# torch's Linear in decode, x @ W.t() of up to 64 rows and a W that outgrows the L2, runs on an sm90
# 64-row tile reading W in place (no pack, C row-major): 64x256x64 (one CTA an SM, more of W in
# flight) from 1 row where its tiles number a quarter of the SMs or more, so auto splits each over few
# CTAs or, from a wave of tiles, runs them data-parallel; else 64x128x64 (64x256 would sum 6-8 64 KB
# partials a tile) from 9 rows, the dot tiles keeping 8 or fewer (LOG.md v57; 1-7 rows: v69, v70).
# LINEAR_DECODE_MIN_W_BYTES: W of 48 MiB won, of 32 MiB (L2-warm in the benchmark) it was mixed (LOG.md v57).
LINEAR_DECODE_MIN_W_BYTES = 40 << 20  # bytes of W


def linear_decode_tile(m: int, n: int, k: int, dtype: str, target: Target) -> TileShape | None:
    """The sm90 64-row tile for x @ W.t() of ``m`` rows (W n x k) under the rules above and below, or None."""
    if m > SM90_M64_TILE.bm:
        return None
    if k * n * ITEMSIZE[dtype] < LINEAR_DECODE_MIN_W_BYTES:
        tile = SM90_M64_TILE if small_w_linear(m, n, k, target) else None
    else:
        wide = 4 * -(-n // SM90_M64_WIDE_TILE.bn) >= target.sms
        tile = SM90_M64_WIDE_TILE if wide else None if m <= DOT_TILE.bn else SM90_M64_TILE
    return tile if tile in target.tiles_for(dtype) else None


# ... and on the H200 (``Target.linear_small_w``) with a smaller W, on 64x128x64 where W has at least
# LINEAR_SMALL_W_MIN_TILES tiles' columns and either x has more rows than the dot tile takes or k is at
# most DOT_ROW_MAJOR_MIN_K (the dot tile's split loses there, as on row-major operands). Narrower W and
# 1-8 rows past k 1024 lost (LOG.md v93; W of 8-32 MiB, n x k: 4096x4096, 3072x3072, 2048x2048,
# 4096x1024, 1024x4096).
LINEAR_SMALL_W_MIN_TILES = 16  # 64x128x64 tiles along n (n >= 2048)


def small_w_linear(m: int, n: int, k: int, target: Target) -> bool:
    """Whether x @ W.t() of ``m`` rows with W (n x k) under LINEAR_DECODE_MIN_W_BYTES runs on 64x128x64 (rule above)."""
    return (target.linear_small_w and n >= LINEAR_SMALL_W_MIN_TILES * SM90_M64_TILE.bn
            and (m > DOT_TILE.bn or k <= DOT_ROW_MAJOR_MIN_K))
