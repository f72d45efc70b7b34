"""Schedules as contiguous ranges of the linearized iteration space, for one shape or thousands.

Every built-in decomposition is a list of per-CTA ranges ``[start, end)`` over the paper's
m -> n -> k linearization (iteration ``i`` is tile ``i // iters_per_tile``, k-iteration
``i % iters_per_tile``); a range is cut at tile boundaries into work units. Each one is written
once, as a *batch* function over an array of shapes returning ``Ranges`` (NumPy, no loop over
shapes); its registered scheduler is that function on one shape (``one_shape``), and the sweep
times the batch output directly. Most are a few *regions* per shape, each ``[x0, x1)`` split
over ``parts`` consecutive CTAs within one (``from_regions``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

import numpy as np

from ..errors import ScheduleError
from ..schedule import DEFAULT_FIXUP, FIXUP_POLICIES, Schedule
from ..shapes import GemmShape, Machine, Problem, TileShape


@dataclass(frozen=True, slots=True, eq=False)
class Ranges:
    """The schedules of many shapes, as per-CTA ranges of each shape's linearization.

    Shape i (row ``shapes[i]`` = m, n, k; ``tiles[i]`` tiles of ``ipt[i]`` iterations) has
    CTAs ``cta_offsets[i]:cta_offsets[i+1]`` in blockIdx order; CTA j covers iterations
    ``[starts[j], ends[j])`` of its shape. ``fixup[i]`` indexes FIXUP_POLICIES; ``backward[i]``:
    every CTA of shape i walks its units in reverse.
    """

    shapes: np.ndarray
    tiles: np.ndarray
    ipt: np.ndarray
    cta_offsets: np.ndarray
    starts: np.ndarray
    ends: np.ndarray
    fixup: np.ndarray
    backward: np.ndarray

    @classmethod
    def build(cls, shapes: np.ndarray, tiles: np.ndarray, ipt: np.ndarray, cta_offsets: np.ndarray,
              starts: np.ndarray, ends: np.ndarray, fixup: np.ndarray | None = None,
              backward: np.ndarray | None = None) -> Ranges:
        """Ranges of shape rows; by default every shape under owner-waits, walked forward."""
        n = len(ipt)
        return cls(np.asarray(shapes, dtype=np.int64).reshape(-1, 3), tiles, ipt, cta_offsets, starts, ends,
                   np.full(n, FIXUP_POLICIES.index(DEFAULT_FIXUP), np.int8) if fixup is None else fixup,
                   np.zeros(n, dtype=bool) if backward is None else backward)

    @property
    def grids(self) -> np.ndarray:
        return np.diff(self.cta_offsets)

    def plain(self) -> np.ndarray:
        """Per shape: owner-waits, walked forward, and its CTAs tile [0, total) in order (the
        form the sweep's fast path times without building a Schedule)."""
        grids = self.grids
        prev = np.empty_like(self.starts)
        prev[1:] = self.ends[:-1]
        prev[self.cta_offsets[:-1][grids > 0]] = 0
        jumps = np.flatnonzero(self.starts != prev)  # a gap or a jump back: few or none
        broken = np.zeros(len(grids), dtype=bool)
        broken[np.searchsorted(self.cta_offsets, jumps, side="right") - 1] = True
        last_end = self.ends[self.cta_offsets[1:][grids > 0] - 1]
        covers = np.zeros(len(grids), dtype=bool)
        covers[grids > 0] = last_end == (self.tiles * self.ipt)[grids > 0]
        return covers & ~broken & (self.fixup == FIXUP_POLICIES.index("owner-waits")) & ~self.backward

    def take(self, rows: np.ndarray) -> Ranges:
        """The shapes ``rows`` only."""
        counts = self.grids[rows]
        cta = np.repeat(self.cta_offsets[rows] - (np.cumsum(counts) - counts), counts) + np.arange(counts.sum())
        return Ranges(self.shapes[rows], self.tiles[rows], self.ipt[rows], np.concatenate([[0], np.cumsum(counts)]),
                      self.starts[cta], self.ends[cta], self.fixup[rows], self.backward[rows])

    def schedule(self, i: int, name: str, tile: TileShape, machine: Machine) -> Schedule:
        """Shape i's Schedule."""
        a, b = self.cta_offsets[i], self.cta_offsets[i + 1]
        shape = GemmShape(*self.shapes[i].tolist())
        s = schedule_from_ranges(name, shape, tile, machine, self.starts[a:b], self.ends[a:b])
        if FIXUP_POLICIES[self.fixup[i]] != s.fixup:
            s = s.with_fixup(FIXUP_POLICIES[self.fixup[i]])
        return s.walked_backward() if self.backward[i] else s


BatchScheduler = Callable[..., "Ranges | None"]
"""``(shapes, tile, machine, **options) -> Ranges`` (None: no batch form on this machine)."""


def tile_counts(shapes: np.ndarray, tile: TileShape) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per shape row (m, n, k): (tiles_m, tiles_n, iterations per tile)."""
    counts = -(-np.asarray(shapes, dtype=np.int64).reshape(-1, 3) // np.array([tile.bm, tile.bn, tile.bk]))
    return counts[:, 0], counts[:, 1], counts[:, 2]


def ramp(counts: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """For per-row counts, (row of each item, index of the item within its row)."""
    counts = np.asarray(counts, dtype=np.int64)
    row = np.arange(len(counts)).repeat(counts)
    return row, np.arange(len(row)) - (counts.cumsum() - counts)[row]


def split_within_one(total: np.ndarray, parts: np.ndarray, index: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Part ``index`` of ``total`` split into ``parts`` within one (the first ``total % parts``
    get one more, the paper's "even share"), as (start, end) offsets."""
    q, r = np.divmod(total, np.maximum(parts, 1))
    start = index * q + np.minimum(index, r)
    return start, start + q + (index < r)


def from_regions(shapes: np.ndarray, tiles: np.ndarray, ipt: np.ndarray, regions: np.ndarray | int,
                 x0: np.ndarray, x1: np.ndarray, parts: np.ndarray, fixup: np.ndarray | None = None,
                 backward: np.ndarray | None = None) -> Ranges:
    """Ranges of shapes whose CTAs split regions: shape i has the next ``regions[i]`` regions
    (an int: as many for every shape) in CTA order, region r splits ``[x0[r], x1[r])`` over
    ``parts[r]`` CTAs within one."""
    rep, c = ramp(parts)
    q, r = np.divmod(x1 - x0, np.maximum(parts, 1))
    q, r = q[rep], r[rep]
    starts = x0[rep] + c * q + np.minimum(c, r)
    ends = starts + q + (c < r)
    cta_ends = np.zeros(len(parts) + 1, dtype=np.int64)  # CTA offset of each region's end
    np.add.accumulate(parts, out=cta_ends[1:])
    if isinstance(regions, int):
        return Ranges.build(shapes, tiles, ipt, cta_ends[::regions], starts, ends, fixup, backward)
    region_ends = np.zeros(len(regions) + 1, dtype=np.int64)
    np.add.accumulate(regions, out=region_ends[1:])
    return Ranges.build(shapes, tiles, ipt, cta_ends[region_ends], starts, ends, fixup, backward)


def two_regions(shapes: np.ndarray, tiles: np.ndarray, ipt: np.ndarray, split: np.ndarray, first: np.ndarray,
                second: np.ndarray, fixup: np.ndarray | None = None, backward: np.ndarray | None = None) -> Ranges:
    """Ranges of shapes whose CTAs split ``[0, split)`` over ``first`` CTAs, then ``[split,
    total)`` over ``second`` (from_regions with two regions a shape)."""
    x = np.empty((3, len(tiles), 2), dtype=np.int64)  # x0, x1, parts; the shape's two regions interleaved
    x[0, :, 0] = 0
    x[0, :, 1] = x[1, :, 0] = split
    x[1, :, 1] = tiles * ipt
    x[2, :, 0] = first
    x[2, :, 1] = second
    return from_regions(shapes, tiles, ipt, 2, *x.reshape(3, -1), fixup, backward)


def check_range(name: str, values: np.ndarray, low: int, high: np.ndarray, shapes: np.ndarray, tile: TileShape,
                what: str) -> None:
    """ScheduleError naming the first shape whose option ``name`` lies outside [low, high]."""
    values = np.broadcast_to(np.asarray(values), np.shape(high))
    bad = np.flatnonzero((values < low) | (values > high))
    if len(bad):
        i = bad[0]
        shape = GemmShape(*(int(v) for v in shapes[i]))
        raise ScheduleError(f"--{name} must be between {low} and the {int(high[i])} {what} of {shape} "
                            f"with {tile} tiles (got {int(values[i])})")


def one_shape(name: str, batch: BatchScheduler, shape: GemmShape, tile: TileShape, machine: Machine,
              **options: Any) -> Schedule:
    """``batch`` on the one shape: the registered scheduler of a batch function."""
    return batch(np.array([[shape.m, shape.n, shape.k]]), tile, machine, **options).schedule(0, name, tile, machine)


def balanced_starts(total: int, parts: int) -> np.ndarray:
    """Start offsets (length parts + 1) splitting ``total`` into ``parts`` sizes within one."""
    if not 1 <= parts <= total:
        raise ScheduleError(f"cannot split {total} iterations into {parts} non-empty parts")
    c = np.arange(parts + 1, dtype=np.int64)
    return split_within_one(total, parts, c)[0]


def schedule_from_ranges(
    decomposition: str,
    shape: GemmShape,
    tile: TileShape,
    machine: Machine,
    starts: np.ndarray,
    ends: np.ndarray,
) -> Schedule:
    """CTA c covers global iterations ``[starts[c], ends[c])``, cut into per-tile units."""
    p = Problem(shape, tile)
    ipt = p.iters_per_tile
    starts = np.asarray(starts, dtype=np.int64)
    ends = np.asarray(ends, dtype=np.int64)
    first = starts // ipt
    base = first * ipt
    counts = (ends - 1 - base) // ipt + 1  # tiles CTA c touches
    if (counts == 1).all():  # one unit a CTA (data-parallel, fixed-split): fewer NumPy calls
        units = np.empty((len(counts), 3), dtype=np.int64)
        units[:, 0] = first
        np.subtract(starts, base, out=units[:, 1])
        np.subtract(ends, base, out=units[:, 2])
        offsets = np.arange(len(counts) + 1)
    else:
        offsets = np.zeros(len(counts) + 1, dtype=np.int64)
        np.add.accumulate(counts, out=offsets[1:])
        cta = np.arange(len(counts)).repeat(counts)
        units = np.empty((int(offsets[-1]), 3), dtype=np.int64)
        tile_idx = units[:, 0]
        np.add(np.arange(len(units)), (first - offsets[:-1])[cta], out=tile_idx)
        base = tile_idx * ipt
        np.maximum(starts[cta] - base, 0, out=units[:, 1])
        np.minimum(ends[cta] - base, ipt, out=units[:, 2])
    # Non-empty ranges that tile [0, total) in order cover each iteration once, so do their units
    tiled = (len(starts) > 0 and starts[0] == 0 and ends[-1] == ipt * p.tiles and bool((ends > starts).all())
             and bool((starts[1:] == ends[:-1]).all()))
    make = Schedule.proven if tiled else Schedule
    return make(decomposition, shape, tile, units, offsets, machine=machine)


def tile_ranges(first_tile: int, last_tile: int, ipt: int) -> tuple[np.ndarray, np.ndarray]:
    """One CTA per whole tile in [first_tile, last_tile) (data-parallel)."""
    tiles = np.arange(first_tile, last_tile, dtype=np.int64)
    return tiles * ipt, (tiles + 1) * ipt
