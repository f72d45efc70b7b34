"""The paper's three basic decompositions: Algorithms 2 (data-parallel), 4 (fixed-split), 5 (Stream-K).

Each is a batch function over an array of shape rows (m, n, k) returning ``Ranges``; the
registered scheduler is that function on one shape.
"""

from __future__ import annotations

import numpy as np

from ..errors import ScheduleError
from ..schedule import Schedule
from ..shapes import GemmShape, Machine, Problem, TileShape
from .paired import paired_schedule
from .ranges import Ranges, check_range, from_regions, one_shape, ramp, tile_counts
from .registry import register

FIXED_SPLITS = 2  # fixed-split's default splitting factor (the paper's), clamped to the iterations per tile


def default_splits(iters_per_tile: int | np.ndarray) -> int | np.ndarray:
    """fixed-split's splits where none are given: FIXED_SPLITS, or fewer where a tile has fewer iterations."""
    return np.minimum(FIXED_SPLITS, iters_per_tile)


def data_parallel_ranges(shapes: np.ndarray, tile: TileShape, machine: Machine) -> Ranges:
    """One CTA per tile, all of its iterations: [0, total) split over as many CTAs as tiles."""
    tiles_m, tiles_n, ipt = tile_counts(shapes, tile)
    tiles = tiles_m * tiles_n
    return from_regions(shapes, tiles, ipt, 1, 0 * tiles, tiles * ipt, tiles)


def fixed_split_ranges(shapes: np.ndarray, tile: TileShape, machine: Machine, *,
                       splits: int | np.ndarray | None = None) -> Ranges:
    """Every tile split into ``splits`` (per shape or for all; default ``default_splits``)
    k-ranges within one, held by adjacent CTAs."""
    tiles_m, tiles_n, ipt = tile_counts(shapes, tile)
    tiles = tiles_m * tiles_n
    splits = default_splits(ipt) if splits is None else splits
    splits = np.broadcast_to(np.asarray(splits, dtype=np.int64), tiles.shape)
    check_range("splits", splits, 1, ipt, shapes, tile, "iterations per tile")
    shape_of, t = ramp(tiles)
    x0 = t * ipt[shape_of]
    return from_regions(shapes, tiles, ipt, tiles, x0, x0 + ipt[shape_of], splits[shape_of])


def stream_k_ranges(shapes: np.ndarray, tile: TileShape, machine: Machine, *,
                    grid: int | np.ndarray | None = None) -> Ranges:
    """The aggregate iterations split evenly (within one) over ``grid`` CTAs (default: every
    resident slot), each contiguous in the linearization."""
    tiles_m, tiles_n, ipt = tile_counts(shapes, tile)
    tiles = tiles_m * tiles_n
    total = tiles * ipt
    grid = np.minimum(machine.slots, total) if grid is None else np.broadcast_to(np.asarray(grid), total.shape)
    check_range("grid", grid, 1, total, shapes, tile, "MAC iterations")
    return from_regions(shapes, tiles, ipt, 1, 0 * tiles, total, grid)


@register("data-parallel", batch=data_parallel_ranges)
def data_parallel(shape: GemmShape, tile: TileShape, machine: Machine, *, grid: int | None = None) -> Schedule:
    """Algorithm 2: one CTA per output tile, all of its MAC iterations. With ``grid`` below the
    tile count the CTAs are persistent: CTA c runs whole tiles c, c + grid, c + 2*grid, ... in
    order, so the grid's tiles advance through k in step, wave after wave, instead of starting
    whenever a slot frees up (the working set of a wave stays in L2; LOG.md v10)."""
    if grid is None or grid >= Problem(shape, tile).tiles:
        return one_shape("data-parallel", data_parallel_ranges, shape, tile, machine)
    if grid < 1:
        raise ScheduleError(f"--grid must be at least 1 (got {grid})")
    return persistent_tiles("data-parallel", shape, tile, machine, grid)


def persistent_tiles(name: str, shape: GemmShape, tile: TileShape, machine: Machine, grid: int) -> Schedule:
    """Whole tiles on ``grid`` persistent CTAs: CTA c runs tiles c, c + grid, c + 2*grid, ..."""
    p = Problem(shape, tile)
    tiles = np.arange(p.tiles, dtype=np.int64)
    order = np.lexsort((tiles // grid, tiles % grid))  # by CTA, then by wave
    counts = np.bincount(tiles % grid, minlength=grid)
    units = np.stack([tiles[order], np.zeros(p.tiles, np.int64), np.full(p.tiles, p.iters_per_tile)], axis=1)
    offsets = np.concatenate([[0], np.cumsum(counts)])
    return Schedule(name, shape, tile, units, offsets, machine=machine)


@register("fixed-split", batch=fixed_split_ranges)
def fixed_split(shape: GemmShape, tile: TileShape, machine: Machine, *, splits: int | None = None) -> Schedule:
    """Algorithm 4: every tile split into ``splits`` k-ranges (within one of each other; default
    ``default_splits``) held by adjacent CTAs, so a tile's owner only waits on the next few CTAs."""
    return one_shape("fixed-split", fixed_split_ranges, shape, tile, machine, splits=splits)


@register("stream-k", batch=stream_k_ranges)
def stream_k(shape: GemmShape, tile: TileShape, machine: Machine, *, grid: int | None = None,
             pair_rows: bool = False, tile_order: str = "row-major") -> Schedule:
    """Algorithm 5: the aggregate MAC iterations split evenly (within one) over ``grid`` CTAs,
    each contiguous in the m -> n -> k linearization; default grid = every resident slot. With
    ``pair_rows`` the split runs over cluster tiles of two tile rows and CTAs 2i, 2i + 1 take their
    upper and lower tiles (``sched.paired``; at most ``grid`` CTAs; unpaired where no pair fits)."""
    if pair_rows:
        p = Problem(shape, tile)
        ctas = min(machine.slots, p.total_iters) if grid is None else grid
        check_range("grid", np.array([ctas]), 1, np.array([p.total_iters]), np.array([[shape.m, shape.n, shape.k]]),
                    tile, "MAC iterations")
        paired = paired_schedule("stream-k", shape, tile, machine, tile_order, ctas, p.tiles)
        if paired is not None:
            return paired
    return one_shape("stream-k", stream_k_ranges, shape, tile, machine, grid=grid)
