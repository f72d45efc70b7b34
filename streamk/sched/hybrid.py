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
from .ranges import Ranges, from_regions, one_shape, tile_counts
from .registry import register


def hybrid_regions(tiles: np.ndarray, ipt: np.ndarray, slots: int, sk_first: bool
                   ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per shape its two regions (x0, x1, parts), each an (n, 2) array in CTA order: the SK
    region of min(slots, its iterations) CTAs and the DP region of one CTA per tile (either may
    be empty; with no leftover tiles the whole problem is one DP region)."""
    waves, left = np.divmod(tiles, slots)
    sk_leads = sk_first & (waves >= 1)
    sk_tiles = np.where(sk_leads, left + slots, left)
    dp_tiles = tiles - sk_tiles
    sk0 = np.where(sk_leads, 0, dp_tiles * ipt)
    dp0 = np.where(sk_leads, sk_tiles * ipt, 0)
    sk = (sk0, sk0 + sk_tiles * ipt, np.minimum(slots, sk_tiles * ipt))
    dp = (dp0, dp0 + dp_tiles * ipt, dp_tiles)
    whole = (0 * tiles, tiles * ipt, tiles)
    none = (0 * tiles,) * 3
    first = [np.where(left == 0, w, np.where(sk_leads, a, b)) for w, a, b in zip(whole, sk, dp)]
    second = [np.where(left == 0, z, np.where(sk_leads, b, a)) for z, a, b in zip(none, sk, dp)]
    return tuple(np.stack([f, g], axis=1) for f, g in zip(first, second))


def hybrid_ranges(shapes: np.ndarray, tile: TileShape, machine: Machine, sk_first: bool) -> Ranges:
    tiles_m, tiles_n, ipt = tile_counts(shapes, tile)
    tiles = tiles_m * tiles_n
    x0, x1, parts = hybrid_regions(tiles, ipt, machine.slots, sk_first)
    return from_regions(shapes, tiles, ipt, np.full(len(tiles), 2), x0.ravel(), x1.ravel(), parts.ravel())


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
