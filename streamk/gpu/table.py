"""The Schedule table the kernels execute: compact int32 arrays, mirrored in kernels/common/schedule_table.cuh.

Built from a Schedule and its FixupPlan (``streamk.fixup.plan_fixup``); nothing here derives
the decomposition or the fixup, it only re-encodes them. Layout (all int32):

* ``cta_offsets[grid + 1]``: CTA c runs unit rows ``cta_offsets[c]:cta_offsets[c+1]`` in order.
* ``units[n, UNIT_FIELDS]``: per unit row the tile, its (tile_m, tile_n) under the schedule's
  tile order, k_begin, k_end (MAC iterations), the plan's action and slot, and offset/count
  into ``reads`` (slot ids, k order) and ``waits`` (unit rows whose flag must be up).
* ``items[t, ITEM_FIELDS]``: the split tiles (tile_m, tile_n, reads offset/count): the
  separate-reduce pass sums their slots, the atomic policy's prologue prescales their C.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..errors import ScheduleError
from ..fixup import Action, FixupPlan
from ..schedule import tile_coordinates

TABLE_VERSION = 1
UNIT_FIELDS = ("tile", "tile_m", "tile_n", "k_begin", "k_end", "action", "slot",
               "reads_offset", "reads_count", "waits_offset", "waits_count")
ITEM_FIELDS = ("tile_m", "tile_n", "reads_offset", "reads_count")
STATE_WORDS = 2  # epoch, done counter (schedule_table.cuh StateWord)
INT32_MAX = np.iinfo(np.int32).max


@dataclass(frozen=True, slots=True, eq=False)
class Table:
    """The arrays one launch uploads, plus the sizes the host allocates for."""

    cta_offsets: np.ndarray
    units: np.ndarray
    reads: np.ndarray
    waits: np.ndarray
    items: np.ndarray
    num_slots: int
    tiles: int
    policy: str

    @property
    def grid(self) -> int:
        return len(self.cta_offsets) - 1

    def field(self, name: str) -> np.ndarray:
        return self.units[:, UNIT_FIELDS.index(name)]


def _int32(name: str, values: np.ndarray) -> np.ndarray:
    values = np.asarray(values, dtype=np.int64)
    if values.size and (values.max() > INT32_MAX or values.min() < -1):
        raise ScheduleError(f"{name} does not fit the int32 table (range {values.min()}..{values.max()})")
    out = np.ascontiguousarray(values.astype(np.int32))
    out.setflags(write=False)
    return out


def build_table(plan: FixupPlan) -> Table:
    """Encode ``plan`` (and its schedule) as the kernel's table."""
    s = plan.schedule
    units = s.units
    tiles = units[:, 0]
    tile_m, tile_n = tile_coordinates(s.tile_order, s.problem.tiles_m, s.problem.tiles_n, tiles)
    columns = {
        "tile": tiles, "tile_m": tile_m, "tile_n": tile_n, "k_begin": units[:, 1], "k_end": units[:, 2],
        "action": plan.action.astype(np.int64), "slot": plan.slot,
        "reads_offset": plan.read_offsets[:-1], "reads_count": np.diff(plan.read_offsets),
        "waits_offset": plan.wait_offsets[:-1], "waits_count": np.diff(plan.wait_offsets),
    }
    table = np.stack([columns[f] for f in UNIT_FIELDS], axis=1)
    items = _items(plan, tile_m, tile_n)
    return Table(_int32("cta_offsets", s.cta_offsets), _int32("units", table).reshape(-1, len(UNIT_FIELDS)),
                 _int32("reads", plan.read_slots), _int32("waits", plan.wait_units),
                 _int32("items", items).reshape(-1, len(ITEM_FIELDS)), plan.num_slots, s.problem.tiles,
                 plan.policy)


_ITEM_READERS = np.isin(np.arange(len(Action)), (Action.DEFER, Action.ATOMIC))  # by action code


def _items(plan: FixupPlan, tile_m: np.ndarray, tile_n: np.ndarray) -> np.ndarray:
    """One row per split tile: its coordinates and the reads of its k = 0 contributor (only the
    reduce pass and the atomic prescale read items; other policies' rows carry no reads)."""
    tiles = plan.split_tiles
    first = plan.tile_units[plan.tile_offsets[tiles]]  # each split tile's k = 0 contributor
    offset, count = plan.read_offsets[first], plan.read_offsets[first + 1] - plan.read_offsets[first]
    reads = _ITEM_READERS[plan.action[first]]
    return np.stack([tile_m[first], tile_n[first], np.where(reads, offset, 0), np.where(reads, count, 0)], axis=1)
