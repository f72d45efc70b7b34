"""The tile ``auto`` takes on a Target where the caller names none (``choose_tile``, and the rules
it rests on); which way round it runs the GEMM is ``decide.orient``'s. The tiles themselves are the
catalogue's, their residencies and constants the Target's.

Each rule names the LOG.md entry that measured it; benchmarks/LOG.md holds the figures.
"""

from __future__ import annotations

from typing import Callable

from ...shapes import ITEMSIZE, GemmShape, Problem, TileShape
from ...target import Target
from ..catalogue import (DOT_T_TILE, DOT_TILE, F64_LARGE_TILES, LARGE_RUNGS, RECT_TILES, SHIFTED_TILES,
                         SM90_192_TILE, SM90_M64_TILE, SM90_WIDE_TILE, SMALL_TILE, TINY_TILES, spec_for_tile)
from .operands import Operand, copy_widths, decode_like

# auto's tile where the caller names none (FP16/BF16; FP64: F64_WIDE_TILE below), the first rule
# that holds; each won on corpus samples:
# * at most 8 columns, and deeper than DOT_SHALLOW_ITERS of its MAC iterations or an A of
#   DOT_MIN_A_BYTES or more: the 64x8x128 tile (kernels/sm80/dot.cuh), which reads A in place at any
#   alignment; on shallower small GEMMs its split and reduce pass cost more than they gain (LOG.md v31;
#   on its 96 decode shapes of two seeds, the dot tile on every deeper shape ran 0.986x cuBLAS raw, on
#   every shape from 1 MB of A 0.981x);
# * at most 8 rows and a B of DOT_T_MIN_B_BYTES or more: the 8x128x64 tile (the same mainloop on the
#   transposed problem), which reads B in place at any alignment; below that the rules below ran them
#   faster (LOG.md v31, v31b; measured on 206 decode shapes of at most 8 rows);
# * decode-like GEMMs (operands.decode_like) whose contiguous operands would be packed by the MB
#   (operands.copy_widths): the tiles with shifted copies, which read them in place: 32x64 under the
#   rule for 32-row tiles below, else the rectangle along the long side (128x64 on a tall GEMM,
#   64x128 on a wide one: a stage brings twice the large operand's bytes for one shift pass and
#   barrier; LOG.md v21);
# * other decode-like GEMMs deeper than RECT_MAX_ITERS: 32x32, else 32x64, where its tiles number at
#   most DECODE_TINY_MOST (a quarter wave), else the rectangle along the long side where its tiles fit
#   a wave (64x64 took them before; LOG.md v28);
# * k <= RECT_MAX_ITERS MAC iterations: 32x32, else 32x64, where its tiles fit one wave (a small
#   GEMM's CTA is latency-bound and writes C at ~20 GB/s from one SM: more, smaller CTAs win; LOG.md v14);
# * 64x64 where its tiles fit one wave (LOG.md v13), or, for k <= SMALL_WAVE_MAX_ITERS, 2-3 of them per
#   SM (its kernel keeps SMALL_PER_SM CTAs per SM, so all run at once; LOG.md v14);
# * k <= RECT_MAX_ITERS and under a wave of 128x128 tiles: 128x64 or 64x128 (the fewer tiles; a
#   tie: 64x128), one per SM, or two where contiguous operands are read 16 bytes wide (8- or 4-byte
#   copies lost there; LOG.md v13);
# * 128x256 (one CTA per SM, a quarter fewer copy instructions per mma, which pays when large GEMMs
#   hold the H100 at its 700 W cap) where its tiles fill a wave and k >= WIDE_MIN_ITERS (LOG.md v15);
# * else the paper's 128x128.
# The last two rungs take the tiles of the Target's ``large_rungs`` family (large_tiles):
# 128x256x32 and 128x128x32 of the sm80 kernels, or 128x256x64 and 128x128x64 of the sm90 TMA +
# wgmma ones (the same thresholds, measured on the sm80 tiles; iterations counted 32 deep). The h100
# and h200 presets take sm90 (``sm90_rungs``): TMA needs 16-byte rows, so the sm90 path packs every
# other operand, and it keeps the sm80 tiles only where they would read rows of 8 or 4 bytes in place
# that the sm90 path would pack at more than a byte per SM90_PACK_FLOPS_PER_BYTE flops. Where the
# sm90 rungs hold they also come before the small tiles from half a wave of 128x128 tiles on, but
# not on decode-like GEMMs, where the sm90 tiles lost (LOG.md v27). Between one and two waves of
# 128x128x64 tiles the sm90 rungs take 128x256x64 at any k, a wave or less; from two waves on
# 128x128x64 stays (LOG.md v27b).
SM90_PACK_FLOPS_PER_BYTE = 300  # flops per packed byte: at this ratio the pack takes ~1.5x the math's time (LOG.md v27)
# FP64: the 128x128x16 tile (8 warps of 32x64, half the L2 bytes per flop of 64x64x16) where its
# tiles fill a wave; below a wave 64x64x16 runs faster (LOG.md v39; auto on it against auto on
# 64x64x16 at 3000x1000x2000: 1.05x). sm_90a only: its sm_80 build reloads spilled fragments in the
# mainloop, and no A100 has run it.
F64_WIDE_TILE = F64_LARGE_TILES[1]
DOT_MIN_A_BYTES = 4 << 20  # bytes of A
DOT_SHALLOW_ITERS = 3  # MAC iterations of the dot tile (128 deep)
DOT_T_MIN_B_BYTES = 12 << 20  # bytes of B
DECODE_TINY_MOST = 33  # tiles: a quarter of 132 SMs
RECT_MAX_ITERS = 64  # MAC iterations of the paper tile (32 deep)
WIDE_MIN_ITERS = 32  # MAC iterations, as RECT_MAX_ITERS
SMALL_PER_SM = 3  # CTAs an SM that the 64x64 kernel keeps
SMALL_WAVE_MAX_ITERS = 32  # MAC iterations, as RECT_MAX_ITERS


def contiguous_narrow(shape: GemmShape, dtype: str) -> Callable[[TileShape], bool]:
    """Whether a tile's kernel would read contiguous row-major operands of ``shape`` (A m x k, B
    k x n, 16-byte-aligned bases) with copies narrower than 16 bytes (operands.copy_widths). auto
    assumes such operands whatever the caller passes, so its choice is a function of (shape, dtype,
    Target)."""
    return lambda tile: any(0 < w < 16 for w in contiguous_widths(shape, dtype, tile))


def contiguous_shifted(shape: GemmShape, dtype: str, tile: TileShape) -> bool:
    """Whether ``tile``'s kernel would read contiguous operands of ``shape`` (as contiguous_narrow)
    in place with shifted copies of 2-byte-aligned rows."""
    return 2 in contiguous_widths(shape, dtype, tile)


def packed_bytes(shape: GemmShape, dtype: str, tile: TileShape) -> int:
    """Bytes of contiguous row-major A and B (as contiguous_narrow) that ``tile``'s kernel packs
    before its main kernel: what the calibrated simulator prices the pack pass by."""
    wa, wb = contiguous_widths(shape, dtype, tile)
    return ((shape.m * shape.k if wa == 0 else 0) + (shape.k * shape.n if wb == 0 else 0)) * ITEMSIZE[dtype]


def contiguous_widths(shape: GemmShape, dtype: str, tile: TileShape) -> tuple[int, int]:
    """The copy widths ``tile``'s kernel reads contiguous row-major operands of ``shape`` with."""
    a = Operand(None, "cuda", 0, (shape.m, shape.k), (shape.k, 1), dtype)
    b = Operand(None, "cuda", 0, (shape.k, shape.n), (shape.n, 1), dtype)
    return copy_widths(a, b, spec_for_tile(dtype, tile))


def choose_tile(shape: GemmShape, dtype: str, target: Target, row_major: bool = True) -> TileShape:
    """The tile ``schedule="auto"`` runs on ``target`` when the caller names none (rules above);
    ``row_major``: the kernels read a row-major A and B (False: either is column-major as given, as
    torch's Linear; the rules of Target.row_major_decode then stand aside)."""
    tiles = target.tiles_for(dtype)
    default = tiles[0]
    sms = target.sms

    def count(t: TileShape) -> int:
        return -(-shape.m // t.bm) * -(-shape.n // t.bn)

    if target.arch == "sm_90a" and F64_WIDE_TILE in tiles and count(F64_WIDE_TILE) >= sms:
        return F64_WIDE_TILE
    if SMALL_TILE not in tiles:
        return default

    def smallest_tiny(most: int) -> TileShape | None:
        """The smallest 32-row tile of at most ``most`` tiles."""
        return next((t for t in sorted((t for t in TINY_TILES if t in tiles), key=lambda t: t.bm * t.bn)
                     if count(t) <= most), None)

    own = row_major and target.row_major_decode and shape.n % 8 == 0 and shape.k % 8 == 0  # as measured (v91)
    dot_min_k = DOT_ROW_MAJOR_MIN_K if own else DOT_SHALLOW_ITERS * DOT_TILE.bk
    if shape.n <= DOT_TILE.bn and DOT_TILE in tiles and (
            shape.k > dot_min_k or shape.m * shape.k * ITEMSIZE[dtype] >= DOT_MIN_A_BYTES):
        return DOT_TILE
    if shape.m <= DOT_T_TILE.bm and DOT_T_TILE in tiles and shape.k * shape.n * ITEMSIZE[dtype] >= DOT_T_MIN_B_BYTES:
        return DOT_T_TILE
    iters = -(-shape.k // default.bk)  # MAC iterations of a tile
    short = iters <= RECT_MAX_ITERS
    along = RECT_TILES[0] if shape.m >= shape.n else RECT_TILES[1]  # 128x64 on a tall GEMM, 64x128 on a wide one
    if decode_like(shape.m, shape.n) and contiguous_shifted(shape, dtype, SMALL_TILE):
        # every tile with shifted copies reads these operands alike: only which tiles have them matters
        tiny = next((t for t in TINY_TILES if t in tiles and t in SHIFTED_TILES), None)
        if tiny is not None and short and count(tiny) <= sms:
            return tiny
        return along if along in tiles and along in SHIFTED_TILES else SMALL_TILE
    square, wide = large_tiles(target, dtype)
    sm80_square, sm80_wide = LARGE_RUNGS["sm80"]
    narrow = contiguous_narrow(shape, dtype)
    sm90 = square != sm80_square and sm90_rungs(shape, dtype, narrow(sm80_square))
    if not (sm90 and 2 * count(square) >= sms and not decode_like(shape.m, shape.n)):
        if decode_like(shape.m, shape.n) and not short:  # deep decode-like GEMMs: more, smaller CTAs
            if (tiny := smallest_tiny(DECODE_TINY_MOST)) is not None:
                return tiny
            if along in tiles and count(along) <= sms:
                return deep_wide_decode_tile(shape, dtype, along, tiles) if own else along
        if short and (tiny := smallest_tiny(sms)) is not None:
            return tall_decode_tile(shape, tiny, tiles, sms) if own else tiny
        balanced = iters <= SMALL_WAVE_MAX_ITERS and 2 * sms < count(SMALL_TILE) <= SMALL_PER_SM * sms
        if count(SMALL_TILE) <= sms or balanced:
            return small_on_sm90(shape, dtype, iters, count(SMALL_TILE), square, sms) if sm90 else SMALL_TILE
        if count(default) < sms and short:
            for tile in sorted((t for t in RECT_TILES if t in tiles), key=lambda t: (count(t), t.bm)):  # a tie: 64x128
                if count(tile) <= sms or (count(tile) <= 2 * sms and not narrow(tile)):
                    return rect_on_sm90(shape, dtype, tile, tiles)
    if square != sm80_square and not sm90:
        square, wide = sm80_square, (sm80_wide if sm80_wide in tiles else None)
    if wide is not None and iters >= WIDE_MIN_ITERS and count(wide) >= sms:
        return narrower_wide(shape, wide, tiles, sms)
    if sm90 and wide is not None and count(wide) <= sms <= count(square) < 2 * sms:
        # one wave of the wide tile, where the square one would run a partial second
        return narrower_wide(shape, wide, tiles, sms)
    return square


# On the H200 (``Target.row_major_decode``), where the kernels read a row-major A and B (the fidelity
# oracles' layout; torch's Linear, whose B is column-major, keeps the rules above), and only where those
# oracles measured (16-byte rows: every shape's n and k a multiple of 8). Fitted on one decode oracle seed
# against its 14 variants, held out on another and A B A B on the GPU (LOG.md v91):
# * the 64x8x128 dot tile for n <= 8 only deeper than DOT_ROW_MAJOR_MIN_K (or from DOT_MIN_A_BYTES of A,
#   as before): shallower, its split and reduce pass lost to one 32x32 (or 64x64) tile a CTA;
# * a tall GEMM of one column of 32x32 tiles (n <= 32 < m) whose 32x32 tiles fill more than
#   TALL_TINY_MIN_FILL of a wave takes 64x64 where its tiles fit one: half the CTAs, each streaming twice
#   the rows of A; below that fill 32x32 won. Only one column: a 64-column shape lost when held out.
DOT_ROW_MAJOR_MIN_K = 1024  # k; 768 and 640 moved fewer shapes
TALL_TINY_MIN_FILL = 0.6  # share of a wave of 32x32 tiles


def tall_decode_tile(shape: GemmShape, tiny: TileShape, tiles: tuple[TileShape, ...], sms: int) -> TileShape:
    """``tiny`` (auto's 32-row tile of a short GEMM), or SMALL_TILE on a tall decode-like GEMM of more
    than TALL_TINY_MIN_FILL of a wave of 32x32 tiles whose 64x64 tiles fit one (rule above)."""
    if (tiny == TINY_TILES[1] and shape.n <= tiny.bn < shape.m and SMALL_TILE in tiles
            and Problem(shape, tiny).tiles > TALL_TINY_MIN_FILL * sms and Problem(shape, SMALL_TILE).tiles <= sms):
        return SMALL_TILE
    return tiny


# ... and on the H200 (``Target.row_major_decode``, its oracles' layout) a deep wide one on the 64x128
# rectangle (m <= 64, one row of 64x128 tiles of at most a wave) of DEEP_WIDE_MIN_N columns or more runs
# on the sm90 64x128x64 tile under auto's decomposition there where that kernel reads the operands in
# place: the narrower shapes lost, and the bound held out on fresh seeds (LOG.md v99).
DEEP_WIDE_MIN_N = 4096  # columns


def deep_wide_decode_tile(shape: GemmShape, dtype: str, along: TileShape, tiles: tuple[TileShape, ...]) -> TileShape:
    """``along``, or the sm90 64x128x64 tile for the sm80 64x128 rectangle under the rule above."""
    if along == RECT_TILES[1] and shape.n >= DEEP_WIDE_MIN_N:
        return rect_on_sm90(shape, dtype, along, tiles)
    return along


# The 64x128 rectangle runs on the sm90 64x128x64 tile (wgmma, one consumer warp group; two CTAs an
# SM when measured, one of 7 stages since LOG.md v75) where that kernel reads the operands in place
# (LOG.md v41c, measured in the v42 entry); the 128x64 rectangle too (LOG.md v45).
def rect_on_sm90(shape: GemmShape, dtype: str, rect: TileShape, tiles: tuple[TileShape, ...]) -> TileShape:
    """``rect``, or the sm90 64x128x64 tile for either sm80 rectangle where it packs nothing."""
    if rect in RECT_TILES and SM90_M64_TILE in tiles and packed_bytes(shape, dtype, SM90_M64_TILE) == 0:
        return SM90_M64_TILE
    return rect


# Deep GEMMs whose 64x64 tiles fill half a wave or more run on the sm90 128x128x64 tile (wgmma,
# Stream-K over the fewer tiles) where it packs nothing: its mainloop does more per SM clock than the
# sm80 64x64x32 one once k is deep enough to pay the split; shallower or fewer tiles were mixed (LOG.md v50).
SMALL_DEEP_MIN_ITERS = 100  # MAC iterations of the paper tile (32 deep)


def small_on_sm90(shape: GemmShape, dtype: str, iters: int, small_tiles: int, square: TileShape,
                  sms: int) -> TileShape:
    """SMALL_TILE, or the sm90 ``square`` tile on a GEMM of ``iters`` paper-tile MAC iterations and
    half a wave or more of SMALL_TILE tiles (``small_tiles``) that it reads in place."""
    if (iters >= SMALL_DEEP_MIN_ITERS and 2 * small_tiles >= sms and not decode_like(shape.m, shape.n)
            and packed_bytes(shape, dtype, square) == 0):
        return square
    return SMALL_TILE


# Tall GEMMs of at most NARROWER_WIDE_MAX_N columns take 128x192x64 for 128x256x64 where it pads
# fewer columns (LOG.md v39), unless its tiles spill past the wide tile's one wave (LOG.md v56).
# Any GEMM whose 128x256 tiles fill less than a wave takes 128x192x64 where its tiles still fit one:
# more SMs busy for the same wave (LOG.md v61, v62).
NARROWER_WIDE_MAX_N = 1400  # columns (LOG.md v56)


def narrower_wide(shape: GemmShape, wide: TileShape, tiles: tuple[TileShape, ...], sms: int) -> TileShape:
    """``wide``, or 128x192x64 for the sm90 wide tile where both fit one wave on ``sms`` SMs and the
    wide tile's leave SMs idle, or on a GEMM of at most NARROWER_WIDE_MAX_N columns that it pads
    less, unless its tiles need a second wave where the wide tile's fit one."""
    def padded(bn: int) -> int:
        return -(-shape.n // bn) * bn

    def count(t: TileShape) -> int:
        return -(-shape.m // t.bm) * -(-shape.n // t.bn)

    if wide != SM90_WIDE_TILE or SM90_192_TILE not in tiles:
        return wide
    if count(wide) < sms and count(SM90_192_TILE) <= sms:
        return SM90_192_TILE
    if (shape.n <= NARROWER_WIDE_MAX_N and padded(SM90_192_TILE.bn) < padded(wide.bn)
            and not count(wide) <= sms < count(SM90_192_TILE)):
        return SM90_192_TILE
    return wide


def sm90_rungs(shape: GemmShape, dtype: str, sm80_in_place: bool) -> bool:
    """Whether auto's large rungs take the sm90 tiles for contiguous operands of ``shape``: yes,
    unless the sm80 tiles would read operands in place (``sm80_in_place``) that TMA needs packed and
    that pack would copy more than a byte per SM90_PACK_FLOPS_PER_BYTE flops of the GEMM."""
    if not sm80_in_place:
        return True
    item = ITEMSIZE[dtype]
    packed = sum(rows * cols * item for rows, cols in ((shape.m, shape.k), (shape.k, shape.n)) if (cols * item) % 16)
    return packed * SM90_PACK_FLOPS_PER_BYTE <= 2 * shape.m * shape.n * shape.k



def large_tiles(target: Target, dtype: str) -> tuple[TileShape, TileShape | None]:
    """auto's square and wide large-GEMM tiles for ``dtype`` on ``target``: the family's of its
    ``large_rungs`` (catalogue.LARGE_RUNGS) where it lists them, else the sm80 ones (the paper tile;
    None: no wide tile)."""
    tiles = target.tiles_for(dtype)
    (square, wide), (paper, paper_wide) = LARGE_RUNGS[target.large_rungs], LARGE_RUNGS["sm80"]
    square = square if square in tiles else paper if paper in tiles else tiles[0]
    wide = wide if wide in tiles else paper_wide if paper_wide in tiles else None
    return square, wide
