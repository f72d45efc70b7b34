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

from ..errors import ScheduleError
from ..schedule import Schedule
from ..shapes import GemmShape, Machine, Problem, TileShape
from .ranges import Ranges, one_shape, split_within_one, tile_counts, two_regions, units_of_ranges
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
def dp_one_tile_sk(shape: GemmShape, tile: TileShape, machine: Machine, *, grid: int | None = None) -> Schedule:
    """Full data-parallel waves, then Stream-K over the partial wave's tiles. With ``grid`` the
    waves run on ``grid`` persistent CTAs, which then share the leftover tiles' iterations
    (``persistent_dp_one_tile_sk``)."""
    if grid is None:
        return one_shape("dp-one-tile-sk", dp_one_tile_sk_ranges, shape, tile, machine)
    return persistent_dp_one_tile_sk("dp-one-tile-sk", shape, tile, machine, grid)


def persistent_dp_one_tile_sk(name: str, shape: GemmShape, tile: TileShape, machine: Machine, grid: int) -> Schedule:
    """CTA c of ``grid``: whole tiles c, c + grid, ... of the t // grid full waves (data-parallel's
    persistent CTAs), then its even share, within one, of the t % grid leftover tiles' MAC
    iterations (basic Stream-K over min(grid, those iterations) CTAs): no CTA starts per tile and
    none idles through a partial wave."""
    p = Problem(shape, tile)
    ipt, total = p.iters_per_tile, p.tiles * p.iters_per_tile
    if not 1 <= grid <= total:
        raise ScheduleError(f"--grid must be between 1 and the {total} MAC iterations of {shape} with {tile} tiles "
                            f"(got {grid})")
    waves = p.tiles // grid
    tiles = np.arange(waves * grid, dtype=np.int64)
    dp_units = np.stack([tiles, 0 * tiles, 0 * tiles + ipt], axis=1)
    left = total - len(tiles) * ipt
    parts = min(grid, left)
    starts, ends = split_within_one(left, parts, np.arange(parts))
    sk_units, sk_offsets = units_of_ranges(ipt, starts + len(tiles) * ipt, ends + len(tiles) * ipt)
    sk_cta = np.repeat(np.arange(len(sk_offsets) - 1), np.diff(sk_offsets))
    cta = np.concatenate([tiles % grid, sk_cta])
    step = np.concatenate([tiles // grid, waves + np.arange(len(sk_cta)) - sk_offsets[sk_cta]])  # DP, then SK
    order = np.lexsort((step, cta))
    offsets = np.concatenate([[0], np.cumsum(np.bincount(cta, minlength=grid))])
    return Schedule(name, shape, tile, np.concatenate([dp_units, sk_units])[order], offsets, machine=machine)



@register("two-tile-sk-dp", batch=two_tile_sk_dp_ranges)
def two_tile_sk_dp(shape: GemmShape, tile: TileShape, machine: Machine) -> Schedule:
    """Stream-K over one full wave plus the partial one (1-2 tiles per CTA), then DP waves."""
    return one_shape("two-tile-sk-dp", two_tile_sk_dp_ranges, shape, tile, machine)
