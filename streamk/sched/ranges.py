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
    """The schedules of many shapes, as *regions* of each shape's linearization split over CTAs.

    Shape i (row ``shapes[i]`` = m, n, k; ``tiles[i]`` tiles of ``ipt[i]`` iterations) has
    regions ``region_offsets[i]:region_offsets[i+1]`` in CTA order; region r splits iterations
    ``[x0[r], x1[r])`` over ``parts[r]`` consecutive CTAs within one (``split_within_one``).
    Regions stay regions until a consumer asks for the CTAs (``cta_ranges``): a data-parallel
    region of a million tiles is three numbers, and the sweep times it in closed form.
    ``fixup[i]`` indexes FIXUP_POLICIES; ``backward[i]``: every CTA of shape i walks its units
    in reverse.
    """

    shapes: np.ndarray
    tiles: np.ndarray
    ipt: np.ndarray
    region_offsets: np.ndarray
    x0: np.ndarray
    x1: np.ndarray
    parts: np.ndarray
    fixup: np.ndarray
    backward: np.ndarray

    @classmethod
    def build(cls, shapes: np.ndarray, tiles: np.ndarray, ipt: np.ndarray, cta_offsets: np.ndarray,
              starts: np.ndarray, ends: np.ndarray, fixup: np.ndarray | None = None,
              backward: np.ndarray | None = None) -> Ranges:
        """Ranges of shape rows given CTA by CTA (shape i: CTAs ``cta_offsets[i]:cta_offsets[i+1]``,
        CTA j covering ``[starts[j], ends[j])``): a region of one part each."""
        return cls.of_regions(shapes, tiles, ipt, cta_offsets, starts, ends, np.ones(len(starts), np.int64),
                              fixup, backward)

    @classmethod
    def of_regions(cls, shapes: np.ndarray, tiles: np.ndarray, ipt: np.ndarray, region_offsets: np.ndarray,
                   x0: np.ndarray, x1: np.ndarray, parts: np.ndarray, fixup: np.ndarray | None = None,
                   backward: np.ndarray | None = None) -> Ranges:
        """Ranges of shape rows; by default every shape under owner-waits, walked forward."""
        n = len(ipt)
        return cls(np.asarray(shapes, dtype=np.int64).reshape(-1, 3), tiles, ipt, region_offsets, x0, x1, parts,
                   np.full(n, FIXUP_POLICIES.index(DEFAULT_FIXUP), np.int8) if fixup is None else fixup,
                   np.zeros(n, dtype=bool) if backward is None else backward)

    @property
    def cta_offsets(self) -> np.ndarray:
        """Per shape its first CTA (and the total CTA count last)."""
        cta_ends = np.zeros(len(self.parts) + 1, dtype=np.int64)  # CTA offset of each region's start
        np.add.accumulate(self.parts, out=cta_ends[1:])
        return cta_ends[self.region_offsets]

    @property
    def grids(self) -> np.ndarray:
        return np.diff(self.cta_offsets)

    def cta_ranges(self, regions: np.ndarray | slice | None = None) -> tuple[np.ndarray, np.ndarray]:
        """Per CTA of the regions (default: all; else these region indices or slice, in order), its
        ``(start, end)``."""
        x0, x1, parts = (self.x0, self.x1, self.parts) if regions is None else \
            (self.x0[regions], self.x1[regions], self.parts[regions])
        if (parts == 1).all():  # given CTA by CTA (Ranges.build)
            return x0, x1
        rep, c = ramp(parts)
        q, r = np.divmod(x1 - x0, np.maximum(parts, 1))
        q, r = q[rep], r[rep]
        starts = x0[rep] + c * q + np.minimum(c, r)
        return starts, starts + q + (c < r)

    def plain(self) -> np.ndarray:
        """Per shape: owner-waits, walked forward, and its CTAs tile [0, total) in order (the
        form the sweep's fast path times without building a Schedule). A region's CTAs are
        contiguous, so it is enough that the regions with CTAs chain from 0 to the total."""
        x0, x1, offsets = self.x0, self.x1, self.region_offsets
        if not (self.parts > 0).all():  # regions without CTAs drop out of the chain
            live = np.flatnonzero(self.parts > 0)
            x0, x1, offsets = x0[live], x1[live], np.searchsorted(live, offsets)
        counts = np.diff(offsets)
        prev = np.empty_like(x0)
        prev[1:] = x1[:-1]
        prev[offsets[:-1][counts > 0]] = 0
        jumps = np.flatnonzero(x0 != prev)  # a gap or a jump back: few or none
        broken = np.zeros(len(counts), dtype=bool)
        broken[np.searchsorted(offsets, jumps, side="right") - 1] = True
        covers = np.zeros(len(counts), dtype=bool)
        covers[counts > 0] = x1[offsets[1:][counts > 0] - 1] == (self.tiles * self.ipt)[counts > 0]
        return covers & ~broken & (self.fixup == FIXUP_POLICIES.index("owner-waits")) & ~self.backward

    def whole_tile_ends(self) -> tuple[np.ndarray, np.ndarray, np.ndarray | None, np.ndarray]:
        """Per shape, the CTAs of its leading and of its trailing regions of one whole tile a CTA
        (data-parallel regions, which the sweep times in closed form), and the regions between:
        their indices in order (None: all) and per shape its first CTA among theirs. For shapes
        that are ``plain``."""
        n, R = len(self.ipt), len(self.parts)
        if (self.parts == 1).all():  # given CTA by CTA (Ranges.build): the fast path finds its runs
            return np.zeros(n, np.int64), np.zeros(n, np.int64), None, self.region_offsets
        # a tile a CTA (in a contiguous schedule each starts a tile); a region of no CTAs is empty
        whole = self.x1 - self.x0 == self.parts * self.ipt.repeat(np.diff(self.region_offsets))
        begin, end = self.region_offsets[:-1], self.region_offsets[1:]
        first = last = end
        if n:  # per shape its first and last region that is not whole; one padding region at R
            idx = np.append(np.where(whole, R, np.arange(R)), R)
            first = np.minimum(np.minimum.reduceat(idx, begin), end)
            idx[np.append(whole, True)] = -1
            last = np.where(first < end, np.maximum.reduceat(idx, begin) + 1, end)
        cta_ends = np.zeros(R + 1, dtype=np.int64)
        np.add.accumulate(self.parts, out=cta_ends[1:])
        before, after = cta_ends[first] - cta_ends[begin], cta_ends[end] - cta_ends[last]
        counts = last - first
        if counts.sum() == R:  # no whole region at either end (fixed-split): all of them
            return before, after, None, cta_ends[self.region_offsets]
        offsets = np.zeros(n + 1, dtype=np.int64)
        np.add.accumulate(counts, out=offsets[1:])
        middle = np.repeat(first - offsets[:-1], counts) + np.arange(offsets[-1])
        middle_ctas = np.zeros(len(middle) + 1, dtype=np.int64)
        np.add.accumulate(self.parts[middle], out=middle_ctas[1:])
        return before, after, middle, middle_ctas[offsets]

    def take(self, rows: np.ndarray) -> Ranges:
        """The shapes ``rows`` only."""
        counts = np.diff(self.region_offsets)[rows]
        reg = np.repeat(self.region_offsets[rows] - (np.cumsum(counts) - counts), counts) + np.arange(counts.sum())
        return Ranges(self.shapes[rows], self.tiles[rows], self.ipt[rows], np.concatenate([[0], np.cumsum(counts)]),
                      self.x0[reg], self.x1[reg], self.parts[reg], self.fixup[rows], self.backward[rows])

    def schedule(self, i: int, name: str, tile: TileShape, machine: Machine) -> Schedule:
        """Shape i's Schedule."""
        shape = GemmShape(*self.shapes[i].tolist())
        starts, ends = self.cta_ranges(slice(self.region_offsets[i], self.region_offsets[i + 1]))
        s = schedule_from_ranges(name, shape, tile, machine, starts, ends)
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
    if isinstance(regions, int):
        region_offsets = np.arange(0, len(parts) + 1, regions, dtype=np.int64)
    else:
        region_offsets = np.zeros(len(regions) + 1, dtype=np.int64)
        np.add.accumulate(regions, out=region_offsets[1:])
    return Ranges.of_regions(shapes, tiles, ipt, region_offsets, x0, x1, parts, fixup, backward)


def two_regions(shapes: np.ndarray, tiles: np.ndarray, ipt: np.ndarray, split: np.ndarray, first: np.ndarray,
                second: np.ndarray, fixup: np.ndarray | None = None, backward: np.ndarray | None = None,
                tile_splits: np.ndarray | None = None) -> Ranges:
    """Ranges of shapes whose CTAs split ``[0, split)`` over ``first`` CTAs, then ``[split,
    total)`` over ``second``; a shape whose ``tile_splits`` is above 1 instead has a region per tile
    over that many CTAs (fixed-split's ranges)."""
    per_tile = np.zeros(len(tiles), dtype=bool) if tile_splits is None else tile_splits > 1
    counts = np.where(per_tile, tiles, 2)
    shape_of, r = ramp(counts)
    tiled, at, size = per_tile[shape_of], np.asarray(split)[shape_of], ipt[shape_of]
    x0 = np.where(tiled, r * size, np.where(r == 0, 0, at))
    x1 = np.where(tiled, (r + 1) * size, np.where(r == 0, at, (tiles * ipt)[shape_of]))
    parts = np.where(r == 0, np.asarray(first)[shape_of], np.asarray(second)[shape_of])
    if tile_splits is not None:
        parts = np.where(tiled, tile_splits[shape_of], parts)
    return from_regions(shapes, tiles, ipt, counts, x0, x1, parts, fixup, backward)


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
    units, offsets = units_of_ranges(ipt, starts, ends)
    # Non-empty ranges that tile [0, total) in order cover each iteration once, so do their units
    tiled = (len(starts) > 0 and starts[0] == 0 and ends[-1] == ipt * p.tiles and bool((ends > starts).all())
             and bool((starts[1:] == ends[:-1]).all()))
    make = Schedule.proven if tiled else Schedule
    return make(decomposition, shape, tile, units, offsets, machine=machine)


def units_of_ranges(ipt: int, starts: np.ndarray, ends: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The (tile, k_begin, k_end) units of CTAs covering global iterations ``[starts[c], ends[c])``
    (non-empty) with ``ipt`` iterations per tile, and each CTA's offsets into them."""
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
    return units, offsets


def tile_ranges(first_tile: int, last_tile: int, ipt: int) -> tuple[np.ndarray, np.ndarray]:
    """One CTA per whole tile in [first_tile, last_tile) (data-parallel)."""
    tiles = np.arange(first_tile, last_tile, dtype=np.int64)
    return tiles * ipt, (tiles + 1) * ipt
