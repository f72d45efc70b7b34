"""Build a Schedule from contiguous ranges of the linearized iteration space.

Every built-in decomposition is a list of per-CTA ranges ``[start, end)`` over the paper's
m -> n -> k linearization (iteration ``i`` is tile ``i // iters_per_tile``, k-iteration
``i % iters_per_tile``); a range is cut at tile boundaries into work units. Done with NumPy so
that a 4,096-tile schedule costs microseconds.
"""

from __future__ import annotations

import numpy as np

from ..errors import ScheduleError
from ..schedule import Schedule
from ..shapes import GemmShape, Machine, Problem, TileShape


def balanced_starts(total: int, parts: int) -> np.ndarray:
    """Start offsets (length parts + 1) splitting ``total`` into ``parts`` sizes within one.

    The first ``total % parts`` parts get one more, as the paper's "even share (within one)".
    """
    if not 1 <= parts <= total:
        raise ScheduleError(f"cannot split {total} iterations into {parts} non-empty parts")
    q, r = divmod(total, parts)
    c = np.arange(parts + 1, dtype=np.int64)
    return c * q + np.minimum(c, r)


def schedule_from_ranges(
    decomposition: str,
    shape: GemmShape,
    tile: TileShape,
    machine: Machine,
    starts: np.ndarray,
    ends: np.ndarray,
) -> Schedule:
    """CTA c covers global iterations ``[starts[c], ends[c])``, cut into per-tile units."""
    ipt = Problem(shape, tile).iters_per_tile
    starts = np.asarray(starts, dtype=np.int64)
    ends = np.asarray(ends, dtype=np.int64)
    first = starts // ipt
    last = (ends - 1) // ipt
    per_cta = last - first + 1
    cta = np.repeat(np.arange(len(starts)), per_cta)
    offsets = np.concatenate([[0], np.cumsum(per_cta)])
    tile_idx = first[cta] + (np.arange(offsets[-1]) - offsets[cta])
    base = tile_idx * ipt
    k_begin = np.maximum(starts[cta], base) - base
    k_end = np.minimum(ends[cta], base + ipt) - base
    units = np.stack([tile_idx, k_begin, k_end], axis=1)
    return Schedule(decomposition, shape, tile, units, offsets, machine=machine)


def streamk_ranges(begin: int, end: int, ctas: int) -> tuple[np.ndarray, np.ndarray]:
    """Split global iterations [begin, end) over ``ctas`` CTAs, balanced within one."""
    bounds = begin + balanced_starts(end - begin, ctas)
    return bounds[:-1], bounds[1:]


def tile_ranges(first_tile: int, last_tile: int, ipt: int) -> tuple[np.ndarray, np.ndarray]:
    """One CTA per whole tile in [first_tile, last_tile) (data-parallel)."""
    tiles = np.arange(first_tile, last_tile, dtype=np.int64)
    return tiles * ipt, (tiles + 1) * ipt
