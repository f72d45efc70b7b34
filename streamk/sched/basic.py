"""The paper's three basic decompositions: Algorithms 2 (data-parallel), 4 (fixed-split), 5 (Stream-K)."""

from __future__ import annotations

import numpy as np

from ..errors import ScheduleError
from ..schedule import Schedule
from ..shapes import GemmShape, Machine, Problem, TileShape
from .ranges import balanced_starts, schedule_from_ranges, streamk_ranges, tile_ranges
from .registry import register


@register("data-parallel")
def data_parallel(shape: GemmShape, tile: TileShape, machine: Machine, *, grid: int | None = None) -> Schedule:
    """Algorithm 2: one CTA per output tile, all of its MAC iterations. With ``grid`` below the
    tile count the CTAs are persistent: CTA c runs whole tiles c, c + grid, c + 2*grid, ... in
    order, so the grid's tiles advance through k in step, wave after wave, instead of starting
    whenever a slot frees up (the working set of a wave stays in L2; LOG.md v10)."""
    p = Problem(shape, tile)
    if grid is None or grid >= p.tiles:
        return schedule_from_ranges("data-parallel", shape, tile, machine, *tile_ranges(0, p.tiles, p.iters_per_tile))
    if grid < 1:
        raise ScheduleError(f"--grid must be at least 1 (got {grid})")
    tiles = np.arange(p.tiles, dtype=np.int64)
    order = np.lexsort((tiles // grid, tiles % grid))  # by CTA, then by wave
    counts = np.bincount(tiles % grid, minlength=grid)
    units = np.stack([tiles[order], np.zeros(p.tiles, np.int64), np.full(p.tiles, p.iters_per_tile)], axis=1)
    offsets = np.concatenate([[0], np.cumsum(counts)])
    return Schedule("data-parallel", shape, tile, units, offsets, machine=machine)


@register("fixed-split")
def fixed_split(shape: GemmShape, tile: TileShape, machine: Machine, *, splits: int = 2) -> Schedule:
    """Algorithm 4: every tile split into ``splits`` k-ranges (within one of each other) held by
    adjacent CTAs, so a tile's owner only waits on the next few CTAs."""
    p = Problem(shape, tile)
    if not 1 <= splits <= p.iters_per_tile:
        raise ScheduleError(f"--splits must be between 1 and the {p.iters_per_tile} iterations per tile "
                            f"of {shape} with {tile} tiles (got {splits})")
    within = balanced_starts(p.iters_per_tile, splits)
    base = np.arange(p.tiles, dtype=np.int64)[:, None] * p.iters_per_tile
    starts = (base + within[None, :-1]).reshape(-1)
    ends = (base + within[None, 1:]).reshape(-1)
    return schedule_from_ranges("fixed-split", shape, tile, machine, starts, ends)


@register("stream-k")
def stream_k(shape: GemmShape, tile: TileShape, machine: Machine, *, grid: int | None = None) -> Schedule:
    """Algorithm 5: the aggregate MAC iterations split evenly (within one) over ``grid`` CTAs,
    each contiguous in the m -> n -> k linearization; default grid = every resident slot."""
    p = Problem(shape, tile)
    if grid is None:
        grid = min(machine.slots, p.total_iters)
    if not 1 <= grid <= p.total_iters:
        raise ScheduleError(f"--grid must be between 1 and the {p.total_iters} MAC iterations of {shape} "
                            f"with {tile} tiles (got {grid})")
    return schedule_from_ranges("stream-k", shape, tile, machine, *streamk_ranges(0, p.total_iters, grid))
