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
from ..shapes import GemmShape, Machine, Problem, TileShape
from .ranges import schedule_from_ranges, streamk_ranges, tile_ranges
from .registry import register


def _sk_region(first_tile: int, last_tile: int, ipt: int, slots: int) -> tuple[np.ndarray, np.ndarray]:
    iters = (last_tile - first_tile) * ipt
    return streamk_ranges(first_tile * ipt, last_tile * ipt, min(slots, iters))


def hybrid(name: str, shape: GemmShape, tile: TileShape, machine: Machine, sk_first: bool) -> Schedule:
    p = Problem(shape, tile)
    ipt, t, slots = p.iters_per_tile, p.tiles, machine.slots
    waves, leftover = divmod(t, slots)
    if leftover == 0:
        starts, ends = tile_ranges(0, t, ipt)
    elif sk_first and waves >= 1:
        sk_tiles = leftover + slots
        sk = _sk_region(0, sk_tiles, ipt, slots)
        dp = tile_ranges(sk_tiles, t, ipt)
        starts, ends = np.concatenate([sk[0], dp[0]]), np.concatenate([sk[1], dp[1]])
    else:
        dp = tile_ranges(0, waves * slots, ipt)
        sk = _sk_region(waves * slots, t, ipt, slots)
        starts, ends = np.concatenate([dp[0], sk[0]]), np.concatenate([dp[1], sk[1]])
    return schedule_from_ranges(name, shape, tile, machine, starts, ends)


@register("dp-one-tile-sk")
def dp_one_tile_sk(shape: GemmShape, tile: TileShape, machine: Machine) -> Schedule:
    """Full data-parallel waves, then Stream-K over the partial wave's tiles."""
    return hybrid("dp-one-tile-sk", shape, tile, machine, sk_first=False)


@register("two-tile-sk-dp")
def two_tile_sk_dp(shape: GemmShape, tile: TileShape, machine: Machine) -> Schedule:
    """Stream-K over one full wave plus the partial one (1-2 tiles per CTA), then DP waves."""
    return hybrid("two-tile-sk-dp", shape, tile, machine, sk_first=True)
