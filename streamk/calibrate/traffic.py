"""Operand traffic: how much of a Schedule's A and B reads miss the L2 and come from DRAM.

Data-parallel waves run their resident tiles at the same k step, so each slice of A (a tile row's
BM x BK block at one k) and of B is fetched once and shared by every tile of that row or column.
Stream-K CTAs start at scattered k offsets: the tiles of one row read the same slice at different
times, and once the operands outgrow the L2 most reads come from DRAM, where a whole wave of
CTAs asks for more bytes per iteration than DRAM delivers (the fidelity run of LOG.md v19).

The trace: ``slots`` CTAs run at once, slot j running CTAs j, j + slots, ... in order, all slots
advancing one MAC iteration per step. A slice read is an L2 hit when the same slice was read
within the last ``window`` steps (the steps whose distinct slices fill the L2), or when the
problem's operands fit the L2 (back-to-back calls find them there).
"""

from __future__ import annotations

import numpy as np

from ..schedule import Schedule, tile_coordinates
from ..shapes import GemmShape, TileShape

# The share of the L2 that holds operand slices between reads (the rest: C, partials, other sets).
L2_SHARE = 0.5
_MEMO: dict[tuple, tuple[Schedule, np.ndarray]] = {}  # a fit predicts each probe dozens of times
_MEMO_ENTRIES = 64
# wave_steps' own memo: sharing _MEMO would hold two keys a probe, and a design's ~50 probes taken
# in turn would evict each key before its next use
_WAVES: dict[tuple[int, int], tuple[Schedule, tuple[np.ndarray, np.ndarray]]] = {}


def operand_bytes(shape: GemmShape, element_bytes: int) -> int:
    """Bytes of A (m x k) and B (k x n): what the problem asks the L2 to hold."""
    return (shape.m + shape.n) * shape.k * element_bytes


# Steps within which a slice another CTA read is still shared (c_scatter; 0, 1, 2 and 4 tried on
# the H200 oracles of seeds 4258 and 4265: 2 predicted each tile's best most often; LOG.md v66)
SCATTER_WINDOW = 2
SECTOR_BYTES = 32  # the L2's sector: a box row starting off one spans a sector more
IN_PLACE_BYTES = 16  # rows of a multiple of this are read in place; others are packed first (or shifted: c_shifted)
BOX_ROW_BYTES = 128  # a TMA box row (the 128-byte swizzle's width, gpu/runtime/tma.py)


def row32_share(shape: GemmShape, tile: TileShape, element_bytes: int, a_requests: float = 1.0,
                b_requests: float = 1.0) -> float:
    """The share of the rows of a MAC iteration's A and B boxes that start off a 32-byte boundary,
    for contiguous row-major operands of ``shape`` read in place (A m x k: BM rows a step; B k x n:
    BK rows per 128 bytes of BN), as ``target.streams_unaligned`` assumes. Row r starts r x the
    row's bytes past an aligned base, so where those bytes are an odd multiple of 16 (k or n an odd
    multiple of 8 two-byte elements) every other row is off: 0.5 of that operand's rows. Rows that
    are not a multiple of 16 bytes are not read in place (packed first, or the dot tiles' shifted
    path): 0 here. ``a_requests``, ``b_requests``: the shares of its A and B rows a CTA requests itself
    (0.5 where a cluster pair multicasts B, each CTA loading half of every stage's B boxes; gpu/clusters.py
    requested)."""
    def off(row_bytes: int) -> float:
        return 0.5 if row_bytes % SECTOR_BYTES == IN_PLACE_BYTES else 0.0

    rows_a = tile.bm
    rows_b = tile.bk * max(1, tile.bn * element_bytes // BOX_ROW_BYTES)
    return (a_requests * rows_a * off(shape.k * element_bytes) + b_requests * rows_b * off(shape.n * element_bytes)) \
        / (rows_a + rows_b)


def wave_steps(schedule: Schedule, slots: int) -> tuple[np.ndarray, np.ndarray]:
    """The trace's waves: wave w holds each slot's w-th CTA (CTAs w x slots onwards); per wave, how
    many CTAs it runs and how many steps it lasts (its longest CTA's MAC iterations). Persistent CTAs
    of whole tiles (one wave) run in rounds instead: round r holds each CTA's r-th tile, as a grid of
    one tile a CTA would run wave r, and the CTAs with fewer tiles leave their SMs idle, as that
    grid's smaller last wave does (LOG.md v142: 198 tiles on 132 CTAs were priced as one full wave of
    two tiles, 25% slow against 12% for the same tiles on 198 CTAs)."""
    key = (id(schedule), slots)  # every prediction asks (predict.calibrated_run): found once a schedule
    held = _WAVES.get(key)
    if held is not None and held[0] is schedule:
        return held[1]
    lengths = (schedule.units[:, 2] - schedule.units[:, 1]).astype(np.int64)
    ipt = schedule.problem.iters_per_tile
    if schedule.grid <= slots and np.all(lengths == ipt):
        ctas_with = np.bincount(np.bincount(schedule.unit_cta, minlength=schedule.grid))  # CTAs by unit count
        busy = np.cumsum(ctas_with[::-1])[::-1][1:].astype(np.int64)  # round r: the CTAs of more than r units
        steps = np.full(len(busy), ipt, dtype=np.int64)
    else:
        per_cta = np.bincount(schedule.unit_cta, weights=lengths, minlength=schedule.grid).astype(np.int64)
        wave = np.arange(len(per_cta)) // slots
        busy = np.bincount(wave)
        steps = np.zeros(len(busy), dtype=np.int64)
        np.maximum.at(steps, wave, per_cta)
    for a in (busy, steps):
        a.setflags(write=False)  # shared by every later call
    if len(_WAVES) >= _MEMO_ENTRIES:
        _WAVES.pop(next(iter(_WAVES)))
    _WAVES[key] = (schedule, (busy, steps))
    return busy, steps


def miss_bytes_per_step(schedule: Schedule, slots: int, l2_bytes: float, element_bytes: int) -> np.ndarray:
    """Bytes of A and B read from DRAM at each step of ``schedule``'s trace on ``slots`` slots."""
    key = (id(schedule), slots, l2_bytes, element_bytes)
    held = _MEMO.get(key)
    if held is None or held[0] is not schedule:
        if len(_MEMO) >= _MEMO_ENTRIES:
            _MEMO.pop(next(iter(_MEMO)))
        held = _MEMO[key] = (schedule, _trace_misses(schedule, slots, l2_bytes, element_bytes))
    return held[1]


def _trace_misses(schedule: Schedule, slots: int, l2_bytes: float, element_bytes: int) -> np.ndarray:
    units = schedule.units
    lengths = (units[:, 2] - units[:, 1]).astype(np.int64)
    total = int(lengths.sum())
    if total == 0:
        return np.zeros(0)
    unit_of = np.repeat(np.arange(len(units)), lengths)
    starts = np.cumsum(lengths) - lengths
    k = units[unit_of, 1] + (np.arange(total) - starts[unit_of])
    slot = (schedule.unit_cta % slots)[unit_of]
    order = np.argsort(slot, kind="stable")  # each slot's iterations in CTA order
    slot_sorted = slot[order]
    slot_first = np.searchsorted(slot_sorted, np.arange(slots))
    step = np.empty(total, dtype=np.int64)
    step[order] = np.arange(total) - slot_first[slot_sorted]

    problem, tile = schedule.problem, schedule.tile
    tm, tn = tile_coordinates(schedule.tile_order, problem.tiles_m, problem.tiles_n, units[unit_of, 0])
    ipt = problem.iters_per_tile
    slice_a = tile.bm * tile.bk * element_bytes
    slice_b = tile.bk * tile.bn * element_bytes
    steps = int(step.max()) + 1
    keys = np.concatenate([tm * ipt + k, (problem.tiles_m + tn) * ipt + k])
    when = np.concatenate([step, step])

    # one read per (slice, step): tiles sharing a slice in the same step fetch it once (a sort, then
    # the runs' heads: np.unique's hash path took 1.2 s on the 16M reads of an 8192^2 FP64 GEMM)
    pair = np.sort(keys * steps + when)
    pair = pair[np.r_[True, pair[1:] != pair[:-1]]]
    keys, when = np.divmod(pair, steps)
    size = np.where(keys < problem.tiles_m * ipt, slice_a, slice_b)
    distinct_per_step = float(size.sum()) / steps
    window = L2_SHARE * l2_bytes / max(distinct_per_step, 1.0)
    footprint = operand_bytes(schedule.shape, element_bytes)
    first = np.r_[True, keys[1:] != keys[:-1]]
    gap = np.r_[0, np.diff(when)]
    miss = np.where(first, footprint > L2_SHARE * l2_bytes, gap > window)
    return np.bincount(when[miss], weights=size[miss], minlength=steps)


def dram_slowdown(schedule: Schedule, slots: int, l2_bytes: float, element_bytes: int, c_us: float,
                  dram_bytes_per_us: float) -> float:
    """How many times longer the trace's steps take than ``c_us`` each, where a step whose misses
    take longer at ``dram_bytes_per_us`` than the MAC iteration waits for DRAM."""
    misses = miss_bytes_per_step(schedule, slots, l2_bytes, element_bytes)
    if not len(misses):
        return 1.0
    return float(np.maximum(c_us, misses / dram_bytes_per_us).sum() / (len(misses) * c_us))


def _unshared(keys: np.ndarray, when: np.ndarray, window: int) -> float:
    """The share of reads (slice ``keys`` at steps ``when``) whose slice no read took in the ``window``
    steps before (the same step included)."""
    order = np.lexsort((when, keys))
    k, w = keys[order], when[order]
    unshared = np.r_[True, (k[1:] != k[:-1]) | (np.diff(w) > window)]
    return float(unshared.mean())


def scattered_share(schedule: Schedule, slots: int, window: int = SCATTER_WINDOW) -> float:
    """How much more of the trace's A and B slice reads find their slice unread by any CTA in the
    ``window`` steps before (the same step included) than data-parallel's of the same tiles on
    ``slots`` do: 0 to 1, 0 where every CTA of a wave steps through k together (data-parallel, even
    splits, the calibration's probes). Stream-K walked forwards starts each CTA at its own k offset;
    walked backwards every CTA starts its first unit at k = 0 and ends its last at the tile's end, in
    step (sched/auto.py; LOG.md v15, v66)."""
    key = ("scattered", id(schedule), slots, window)
    held = _MEMO.get(key)
    if held is not None and held[0] is schedule:
        return float(held[1])
    units = schedule.units
    lengths = (units[:, 2] - units[:, 1]).astype(np.int64)
    total = int(lengths.sum())
    problem = schedule.problem
    if total == 0 or np.all(lengths == problem.iters_per_tile):
        return 0.0  # whole tiles: every CTA starts each at k = 0, in step with its wave
    unit_of = np.repeat(np.arange(len(units)), lengths)
    starts = np.cumsum(lengths) - lengths
    k = units[unit_of, 1] + (np.arange(total) - starts[unit_of])
    slot = (schedule.unit_cta % slots)[unit_of]
    order = np.argsort(slot, kind="stable")
    slot_sorted = slot[order]
    step = np.empty(total, dtype=np.int64)
    step[order] = np.arange(total) - np.searchsorted(slot_sorted, np.arange(slots))[slot_sorted]
    ipt = problem.iters_per_tile

    def reads(tile: np.ndarray, k: np.ndarray, step: np.ndarray) -> float:
        tm, tn = tile_coordinates(schedule.tile_order, problem.tiles_m, problem.tiles_n, tile)
        keys = np.concatenate([tm * ipt + k, (problem.tiles_m + tn) * ipt + k])
        return _unshared(keys, np.concatenate([step, step]), window)

    ours = reads(units[unit_of, 0], k, step)
    tile = np.repeat(np.arange(problem.tiles), ipt)
    kk = np.tile(np.arange(ipt), problem.tiles)
    dp = reads(tile, kk, (tile // slots) * ipt + kk)
    share = max(0.0, ours - dp)
    if len(_MEMO) >= _MEMO_ENTRIES:
        _MEMO.pop(next(iter(_MEMO)))
    _MEMO[key] = (schedule, share)
    return share
