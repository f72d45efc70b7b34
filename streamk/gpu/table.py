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
from ..fixup import FixupPlan, trait_lookup
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


def _int32(values: np.ndarray) -> np.ndarray:
    out = np.asarray(values).astype(np.int32, order="C")
    out.setflags(write=False)
    return out


def build_table(plan: FixupPlan) -> Table:
    """Encode ``plan`` (and its schedule) as the kernel's table."""
    s = plan.schedule
    units = s.units
    # every entry is a tile, a coordinate, a k, a slot (-1: none), a unit row or an offset into
    # reads or waits: it fits int32 when these counts do (no scan of the arrays needed)
    largest = max(s.problem.tiles, s.problem.iters_per_tile, len(units), len(plan.read_slots), len(plan.wait_units))
    if largest > INT32_MAX:
        raise ScheduleError(f"{s} does not fit the int32 table: {largest:,} tiles, iterations, units, reads or "
                            f"waits (at most {INT32_MAX:,}); use a larger tile")
    table = np.empty((len(units), len(UNIT_FIELDS)), dtype=np.int64)  # filled column by column: no np.stack
    column = {f: table[:, i] for i, f in enumerate(UNIT_FIELDS)}
    column["tile"][:] = units[:, 0]
    column["tile_m"][:], column["tile_n"][:] = tile_coordinates(s.tile_order, s.problem.tiles_m,
                                                                s.problem.tiles_n, units[:, 0])
    column["k_begin"][:], column["k_end"][:] = units[:, 1], units[:, 2]
    column["action"][:], column["slot"][:] = plan.action, plan.slot
    for what, offsets in (("reads", plan.read_offsets), ("waits", plan.wait_offsets)):
        column[f"{what}_offset"][:] = offsets[:-1]
        np.subtract(offsets[1:], offsets[:-1], out=column[f"{what}_count"])
    items = _items(plan, column["tile_m"], column["tile_n"])
    return Table(_int32(s.cta_offsets), _int32(table), _int32(plan.read_slots), _int32(plan.wait_units),
                 _int32(items), plan.num_slots, s.problem.tiles, plan.policy)


# by action code: a split tile's item rows carry reads for the reduce pass and the atomic prescale
_ITEM_READERS = trait_lookup("reduced_later") | trait_lookup("adds_to_c")


def _items(plan: FixupPlan, tile_m: np.ndarray, tile_n: np.ndarray) -> np.ndarray:
    """One row per split tile: its coordinates and the reads of its k = 0 contributor (only the
    reduce pass and the atomic prescale read items; other policies' rows carry no reads)."""
    tiles = plan.split_tiles
    items = np.zeros((len(tiles), len(ITEM_FIELDS)), dtype=np.int64)
    if len(tiles) == 0:
        return items
    first = plan.tile_units[plan.tile_offsets[tiles]]  # each split tile's k = 0 contributor
    items[:, 0], items[:, 1] = tile_m[first], tile_n[first]
    if _ITEM_READERS[plan.action[first[0]]]:  # one policy: the first contributors' actions agree
        items[:, 2] = plan.read_offsets[first]
        items[:, 3] = plan.read_offsets[first + 1] - items[:, 2]
    return items
