"""Which way round ``auto`` runs C = A @ B, and where it reads column-major operands in place on
the sm90 square tile instead of taking its own tile: both priced in the bytes the pack pass would
copy on the tile auto picks for each orientation (each picked once).

Each rule carries the measurement it rests on (benchmarks/LOG.md has the history).
"""

from __future__ import annotations

from typing import Callable, NamedTuple

from ...shapes import ITEMSIZE, GemmShape, TileShape
from ...target import Target
from ..catalogue import spec_for_tile
from .operands import Operand, copy_widths, decode_like
from .tiles import choose_tile, large_tiles

# What auto's orientation rule prices, in the time the pack takes per byte of a row-major source
# (H100, LOG.md v32-v33c: ~0.77 us/MB): a source the pack transposes (a column-major operand, read
# down its columns) ~2x that (~1.5 us/MB); a C whose rows are not contiguous (the transposed
# problem's view of a row-major C), written with 4-byte stores, about one per byte of C (v32b's fit
# on x @ W.t() at 128-8192 rows: 0.47 of a transposing pack byte).
TRANSPOSING_PACK_RATIO = 2.0
STRIDED_C_PACK_RATIO = 1.0


class Orientation(NamedTuple):
    """auto's answer: the problem runs transposed (C^T = B^T A^T) or not, on ``tile`` (the sm90
    square tile where ``in_place``, else auto's tile of the problem the kernels run)."""

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
            tiles[flipped] = choose_tile(GemmShape(n, m, k) if flipped else GemmShape(m, n, k), a.dtype, target)
        return tiles[flipped]

    def cost(flipped: bool) -> float:
        ops = (b.transposed(), a.transposed(), c.transposed()) if flipped else (a, b, c)
        return _copy_cost(*ops, tile_of(flipped))

    square = in_place_tile(a, b, c, target, cost)
    if square is not None:
        return Orientation(False, square, True)
    transposed = cost(True) < cost(False)
    return Orientation(transposed, tile_of(transposed), False)


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
    """The sm90 square tile, where auto would copy an operand, in either orientation (``cost`` of
    the direct problem, False, or the transposed one, True), that the sm90 kernels read in place as
    given: column-major operands (torch's x @ W.t()) of GEMMs below auto's sm90 rungs, whose sm80
    tiles pack them. Not on decode-like GEMMs (their small and dot tiles were measured against the
    pack). H100, x @ W.t() at 96 and 128 rows on the 4096-wide Llama layers (auto had taken 64x64
    tiles with x^T packed, transposed): 1.54-2.03x faster (LOG.md v37)."""
    square, _ = large_tiles(target, a.dtype)
    spec = spec_for_tile(a.dtype, square)
    if not spec.tma or decode_like(a.shape[0], b.shape[1]) or copy_widths(a, b, spec) != (16, 16):
        return None
    if not c.rows_contiguous:
        return None
    return square if min(cost(False), cost(True)) > 0 else None
