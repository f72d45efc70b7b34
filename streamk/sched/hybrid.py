"""The two data-parallel + Stream-K hybrids of section 5.2 of the paper.

With t tiles, p = sms x ctas_per_sm slots and w = t // p full waves:

* ``dp-one-tile-sk`` ("DP + one-tile SK"): w full DP waves first, then the t % p leftover tiles
  shared by up to p Stream-K CTAs, each with less than one tile of iterations.
* ``two-tile-sk-dp`` ("two-tile SK + DP", the kernel the paper evaluates): one DP wave fewer,
  so the Stream-K CTAs come first and each gets more than one tile of iterations but fewer
  than two; each split tile then has only two contributors, and its owner's peer finished long
  before. With w < 1 it is DP + one-tile SK; when t % p == 0 both are plain data-parallel.

The CTA order follows the names: DP then SK, and SK then DP (as CUTLASS 2.x's
threadblock_swizzle_streamk.h dispatches SK blocks before DP blocks).
"""

from __future__ import annotations

import numpy as np

from ..schedule import Schedule
from ..shapes import GemmShape, Machine, TileShape
from .ranges import Ranges, one_shape, tile_counts, two_regions
from .registry import register


def hybrid_regions(tiles: np.ndarray, ipt: np.ndarray, slots: int, sk_first: bool
                   ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per shape its two regions in CTA order as (split, first, second): ``[0, split)`` over
    ``first`` CTAs, then ``[split, total)`` over ``second``. One is the SK region of min(slots,
    its iterations) CTAs, the other the DP region of one CTA per tile (either may be empty; with
    no leftover tiles the whole problem is one DP region)."""
    left = tiles % slots
    lead = (tiles > slots) & (left > 0) if sk_first else np.zeros(len(tiles), dtype=bool)  # SK first
    sk_tiles = left + slots * lead
    dp_tiles = tiles - sk_tiles
    sk_parts = np.minimum(slots, sk_tiles * ipt)
    split = np.where(lead, sk_tiles, dp_tiles) * ipt
    return split, np.where(lead, sk_parts, dp_tiles), np.where(lead, dp_tiles, sk_parts)


def hybrid_ranges(shapes: np.ndarray, tile: TileShape, machine: Machine, sk_first: bool) -> Ranges:
    tiles_m, tiles_n, ipt = tile_counts(shapes, tile)
    tiles = tiles_m * tiles_n
    return two_regions(shapes, tiles, ipt, *hybrid_regions(tiles, ipt, machine.slots, sk_first))


def dp_one_tile_sk_ranges(shapes: np.ndarray, tile: TileShape, machine: Machine) -> Ranges:
    return hybrid_ranges(shapes, tile, machine, sk_first=False)


def two_tile_sk_dp_ranges(shapes: np.ndarray, tile: TileShape, machine: Machine) -> Ranges:
    return hybrid_ranges(shapes, tile, machine, sk_first=True)


@register("dp-one-tile-sk", batch=dp_one_tile_sk_ranges)
def dp_one_tile_sk(shape: GemmShape, tile: TileShape, machine: Machine) -> Schedule:
    """Full data-parallel waves, then Stream-K over the partial wave's tiles."""
    return one_shape("dp-one-tile-sk", dp_one_tile_sk_ranges, shape, tile, machine)


@register("two-tile-sk-dp", batch=two_tile_sk_dp_ranges)
def two_tile_sk_dp(shape: GemmShape, tile: TileShape, machine: Machine) -> Schedule:
    """Stream-K over one full wave plus the partial one (1-2 tiles per CTA), then DP waves."""
    return one_shape("two-tile-sk-dp", two_tile_sk_dp_ranges, shape, tile, machine)
