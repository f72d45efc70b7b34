"""The stream-K heuristics of record in NVIDIA CUTLASS, re-implemented as schedulers.

* ``cutlass2-sk``: CUTLASS 2.x, ``include/cutlass/gemm/threadblock/threadblock_swizzle_streamk.h``
  (``ThreadblockSwizzleStreamK::get_blocks`` / ``get_sk_blocks``, block and iteration mapping)
  and ``include/cutlass/gemm/kernel/gemm_universal_streamk.h`` (SK blocks, then DP blocks).
* ``cutlass3-sk``: CUTLASS 3.x, ``include/cutlass/gemm/kernel/tile_scheduler_params.h``
  (``PersistentTileSchedulerSm90StreamKParams``: ``get_num_sk_tiles``, ``get_num_sk_units``,
  ``calculate_groups``, ``select_decomposition_mode``) and
  ``include/cutlass/gemm/kernel/sm90_tile_scheduler_stream_k.hpp`` (unit -> k-range mapping and
  its ``min_iters_per_sk_unit_`` snapping).

Our own code, written from reading NVIDIA/cutlass at commit 7107b05 (Aug 2026); none copied.
Both use a 1x1 cluster, no swizzle and the Heuristic decomposition mode. The wave is the
machine's ``sms`` (CUTLASS's ``avail_sms``) with ``ctas_per_sm`` as its ``sm_occupancy`` for 2.x,
and ``slots`` (CUTLASS's ``ctas_per_wave``) for 3.x. Co-resident SK units are numbered in
linearization order rather than CUTLASS's interleaved blockIdx order (the same times, and a
contiguous schedule for the sweep's fast path). What we leave out (the separate reduction wave,
cohort rasterization's tile renaming, SK units walking their tiles backwards, persistent CTAs)
is listed in docs/heuristics.md; the Schedule runs under any fixup policy.

The rules are written once, in NumPy over arrays of shapes: ``cutlass_ranges`` gives the ranges
of thousands of shapes at once (for the sweep), and the registered schedulers are the
same code on one shape.
"""

from __future__ import annotations

import numpy as np

from ..schedule import Schedule
from ..shapes import GemmShape, Machine, Problem, TileShape
from .ranges import Ranges, one_shape, ramp, schedule_from_ranges, split_within_one, tile_ranges
from .registry import register

# ---- CUTLASS 2.x (threadblock_swizzle_streamk.h) ----------------------------------------
CUTLASS2_MIN_ITERS_PER_SK_BLOCK = 2  # kMinItersPerSkBlock: fewest MAC iterations an SK block may get
CUTLASS2_WAVE_COST = 2.0  # get_sk_blocks' base_cost: iteration-equivalents of fixup per SK wave
CUTLASS2_PEER_COST = 2.0  # get_sk_blocks' peer_cost: iteration-equivalents per peer of an SK tile
CUTLASS2_SKEW_COST = 0.02  # get_sk_blocks' iter_cost: fraction of the SK time lost per peer when unaligned
CUTLASS2_COHORT_CTAS = (8, 4)  # kCohortCtasM x kCohortCtasN: tiles in one rasterization cohort
CUTLASS2_COHORT_EFFICIENCY = 0.85  # cohort rasterization needs dp_blocks / cohort_blocks above this
_NO_SAVINGS = -(2**31)  # INT_MIN: "no candidate", never profitable

# ---- CUTLASS 3.x (tile_scheduler_params.h, sm90_tile_scheduler_stream_k.hpp) ------------
CUTLASS3_MIN_ITERS_PER_SK_UNIT = 8  # min_iters_per_sk_unit_: k-tiles; also "k-tiles <= this: no SK"
CUTLASS3_MAX_SK_GROUPS = 8  # max_sk_groups_: most groups SK units are split into (L2 locality)


def _ceil_div(a, b):
    return -(-a // b)


# =========================================================================================
# CUTLASS 2.x
# =========================================================================================
def cutlass2_sk_blocks(sk_tiles, ipt, sms: int, max_occupancy, allow_partial_wave) -> tuple[np.ndarray, np.ndarray]:
    """``get_sk_blocks``, per shape: the SK block count with the largest modeled savings (ties:
    more blocks) and those savings; (0, INT_MIN) where no count is allowed.

    Savings, in MAC iterations, of running ``sk_tiles`` tiles as ``g`` SK blocks instead of
    ``ceil(sk_tiles / sms)`` DP waves: the DP time, minus the SK time (``ceil(iters / g)`` per
    block times SK waves), minus a fixup charge per wave and per peer, plus a skew charge when
    the blocks do not split the tiles evenly.
    """
    sk_tiles, ipt, max_occupancy, allow = np.broadcast_arrays(*(np.atleast_1d(np.asarray(v, dtype=np.int64))
                                                              for v in (sk_tiles, ipt, max_occupancy, allow_partial_wave)))
    sk_iters = sk_tiles * ipt
    lo = np.where(allow > 0, np.minimum(sms, sk_tiles + 1), sms)
    hi = np.minimum(sms * max_occupancy, sk_iters // CUTLASS2_MIN_ITERS_PER_SK_BLOCK)
    hi = np.where(sk_tiles > 0, hi, lo - 1)  # no SK tiles: no candidate
    width = int(max(1, (hi - lo + 1).max(initial=1)))
    trial = lo[:, None] + np.arange(width)[None, :]
    valid = trial <= hi[:, None]
    trial = np.where(valid, trial, 1)
    tiles = np.maximum(sk_tiles, 1)[:, None]
    waves = _ceil_div(trial, sms)
    sk_iter_equiv = _ceil_div(sk_iters[:, None], trial) * waves
    aligned = trial % tiles == 0
    peers = np.where(aligned, trial // tiles, _ceil_div(trial, tiles) + 1)  # +1: alignment skew
    f32 = np.float32  # CUTLASS computes the charges in float, then truncates to int
    skew = np.where(aligned, f32(0), f32(CUTLASS2_SKEW_COST) * peers.astype(f32) * sk_iter_equiv.astype(f32))
    fixup = (f32(CUTLASS2_WAVE_COST) * waves.astype(f32) + skew.astype(f32)
             + f32(CUTLASS2_PEER_COST) * peers.astype(f32)).astype(np.int64)
    savings = np.where(valid, ipt[:, None] * _ceil_div(sk_tiles, sms)[:, None] - sk_iter_equiv - fixup, _NO_SAVINGS)
    best = width - 1 - np.argmax(savings[:, ::-1], axis=1)  # ">=": the last of equal savings wins
    rows = np.arange(len(best))
    found = valid[rows, best]
    return np.where(found, trial[rows, best], 0), np.where(found, savings[rows, best], _NO_SAVINGS)


def cutlass2_blocks(tiles, ipt, sms: int, occupancy: int) -> tuple[np.ndarray, np.ndarray]:
    """``get_blocks``, per shape: (dp_tiles, sk_blocks). The SK tiles are the first ``tiles - dp_tiles``."""
    tiles, ipt = np.broadcast_arrays(*(np.atleast_1d(np.asarray(v, dtype=np.int64)) for v in (tiles, ipt)))
    full_waves, partial = np.divmod(tiles, sms)
    dp_tiles, sk_blocks = tiles.copy(), np.zeros_like(tiles)
    open_ = (partial > 0) & (sms >= 2)  # else perfect quantization, or nothing to balance across

    def take(rows: np.ndarray, dp: np.ndarray, sk_tiles: np.ndarray, max_occ: np.ndarray, allow: bool) -> np.ndarray:
        if not len(rows):
            return rows
        blocks, savings = cutlass2_sk_blocks(sk_tiles[rows], ipt[rows], sms, max_occ[rows], allow)
        good = savings >= 0
        dp_tiles[rows[good]], sk_blocks[rows[good]] = dp[rows[good]], blocks[good]
        return rows[~good]

    # Under one GPU-full of CTAs: SK over the partial wave only, up to full occupancy.
    take(np.flatnonzero(open_ & (full_waves < occupancy)), full_waves * sms, partial, occupancy - full_waves, True)
    rest = np.flatnonzero(open_ & (full_waves >= occupancy))
    if occupancy > 1:  # the partial wave would top up the last occupancy level: try it alone
        top = rest[full_waves[rest] % occupancy == occupancy - 1]
        rest = np.union1d(rest[full_waves[rest] % occupancy != occupancy - 1],
                          take(top, full_waves * sms, partial, np.ones_like(tiles), True))
    # SK over the last full wave plus the partial one, with at least a full wave of SK blocks.
    take(rest, (full_waves - 1) * sms, partial + sms, occupancy - (full_waves - 1) % occupancy, False)
    return dp_tiles, sk_blocks


def _cutlass2_sk_ranges(sk_tiles: np.ndarray, ipt: np.ndarray, sk_blocks: np.ndarray):
    """Per shape, its SK blocks' iteration ranges: split evenly within one; when the blocks are
    a multiple of the SK tiles (and more), each tile is its own region (split-K)."""
    blocks = np.minimum(sk_blocks, sk_tiles * ipt)
    regions = np.where((blocks > sk_tiles) & (blocks % np.maximum(sk_tiles, 1) == 0), sk_tiles, 1)
    per_region = blocks // regions
    region_iters = sk_tiles * ipt // regions
    row, b = ramp(blocks)
    region, j = np.divmod(b, per_region[row])
    start, end = split_within_one(region_iters[row], per_region[row], j)
    base = region * region_iters[row]
    return blocks, base + start, base + end


def _cohort_raster(p: Problem, sk_tiles: int, dp_blocks: int, gpu_slots: int) -> bool:
    """Whether CUTLASS 2.x rasterizes DP tiles in 8x4 cohorts (then every DP block does one tile)."""
    cm, cn = CUTLASS2_COHORT_CTAS
    cohorts_m, cohorts_n = _ceil_div(p.tiles_m, cm), _ceil_div(p.tiles_n, cn)
    if sk_tiles > 0:
        cohort = (sk_tiles - 1) // (cm * cn)
        grid_m = cohort // cohorts_n
        grid_n = cohorts_n - 1 if grid_m > 0 else cohort % cohorts_n
        if (grid_m + 1) * cm >= p.tiles_m or (grid_n + 1) * cn >= p.tiles_n:
            return False  # the SK tiles' cohorts would leave the grid
    return dp_blocks >= 2 * gpu_slots and dp_blocks / (cohorts_m * cohorts_n * cm * cn) > CUTLASS2_COHORT_EFFICIENCY


def _cutlass2_multi_occupancy(p: Problem, machine: Machine, dp_tiles: int, sk_blocks: int) -> Schedule:
    """CUTLASS 2.x with several CTAs per SM: blockIdx remapping and first-wave DP tiles."""
    ipt, sms, occ = p.iters_per_tile, machine.sms, machine.ctas_per_sm
    sk_tiles = p.tiles - dp_tiles
    sk_waves = _ceil_div(sk_blocks, sms)
    blocks, sk_start, sk_end = _cutlass2_sk_ranges(np.array([sk_tiles]), np.array([ipt]), np.array([sk_blocks]))
    dp_blocks, first_wave_tiles = dp_tiles, 1
    if sk_waves and not _cohort_raster(p, sk_tiles, dp_blocks, sms * occ):
        excess = (sk_waves + _ceil_div(dp_tiles, sms)) % occ  # keep whole wave-sets
        if 1 + excess <= dp_tiles // sms:
            first_wave_tiles += excess
            dp_blocks -= excess * sms
    dp_start = sk_waves * sms  # SK blocks, padding to whole SK waves (they do nothing), DP blocks
    active = dp_start + dp_blocks
    logical = np.arange(active, dtype=np.int64)
    if active > 2 * sms:  # remap_block_indices: spread the first two waves over the SMs
        head = logical[: 2 * sms]
        logical[: 2 * sms] = head // 2 + (head % 2) * sms
    hw = np.arange(active, dtype=np.int64)  # hardware blockIdx
    sk = logical < int(blocks[0])
    dp_hw = hw[logical >= dp_start]
    d = logical[dp_hw] - dp_start
    tiles_each = np.where(d < sms, first_wave_tiles, 1)
    first = sk_tiles + d + np.where(d < sms, 0, (first_wave_tiles - 1) * sms)
    rep, nth = ramp(tiles_each)
    piece_tile = first[rep] + nth * sms  # a first-wave DP block strides over its tiles
    cta = np.concatenate([hw[sk], dp_hw[rep]])
    starts = np.concatenate([sk_start[logical[sk]], piece_tile * ipt])
    ends = np.concatenate([sk_end[logical[sk]], (piece_tile + 1) * ipt])
    order = np.argsort(cta, kind="stable")
    s = schedule_from_ranges("cutlass2-sk", p.shape, p.tile, machine, starts[order], ends[order])
    first_piece = np.flatnonzero(np.diff(cta[order], prepend=-1) != 0)  # a CTA may own several ranges
    offsets = np.append(s.cta_offsets[first_piece], s.cta_offsets[-1])
    return Schedule("cutlass2-sk", p.shape, p.tile, s.units, offsets, machine=machine)


# =========================================================================================
# CUTLASS 3.x
# =========================================================================================
def cutlass3_sk_tiles(tiles, ipt, wave: int) -> np.ndarray:
    """``get_num_sk_tiles`` (Heuristic mode), per shape: how many leading tiles stream-K covers (0: DP)."""
    tiles, ipt = np.broadcast_arrays(*(np.atleast_1d(np.asarray(v, dtype=np.int64)) for v in (tiles, ipt)))
    full_waves, tail = np.divmod(tiles, wave)
    dp = (tail == 0) | (ipt <= CUTLASS3_MIN_ITERS_PER_SK_UNIT)  # no quantization, or too few k-tiles to split
    dp |= 2 * tail >= wave  # the tail wave is at least half full: data-parallel
    dp_waves = np.where(full_waves > 1, full_waves - 1, 0)  # the last full wave joins the SK region
    return np.where(dp, 0, tiles - dp_waves * wave)


def cutlass3_groups(sk_tiles, sk_units, ipt, max_groups) -> np.ndarray:
    """``calculate_groups``, per shape: the most groups (<= 8) dividing the SK units and tiles
    with >= 8 k-tiles per unit; else the most that divide the units; else 1."""
    sk_tiles, sk_units, ipt, max_groups = np.broadcast_arrays(
        *(np.atleast_1d(np.asarray(v, dtype=np.int64)) for v in (sk_tiles, sk_units, ipt, max_groups)))
    top = np.minimum(max_groups, CUTLASS3_MAX_SK_GROUPS)
    ideal, fallback = np.ones_like(top), np.zeros_like(top)
    for g in range(min(CUTLASS3_MAX_SK_GROUPS, int(top.max(initial=1))), 1, -1):  # CUTLASS counts down
        if (ideal > 1).all():
            break
        units = sk_units % g == 0
        big_enough = (sk_tiles // g) * ipt // np.maximum(sk_units // g, 1) >= CUTLASS3_MIN_ITERS_PER_SK_UNIT
        here = (g <= top) & (ideal == 1)
        ideal = np.where(here & units & (sk_tiles % g == 0) & big_enough, g, ideal)
        fallback = np.where(here & (fallback == 0) & units & big_enough, g, fallback)
    return np.where((ideal == 1) & (fallback > 0), fallback, ideal)


def _snap(x: np.ndarray, ipt: np.ndarray) -> np.ndarray:
    """Move a unit boundary to its tile's edge when within 8 k-tiles of it (never a short split)."""
    k = x % ipt
    return np.where(k < CUTLASS3_MIN_ITERS_PER_SK_UNIT, x - k,
                    np.where(k > ipt - CUTLASS3_MIN_ITERS_PER_SK_UNIT, x - k + ipt, x))


def _cutlass3_sk_ranges(tiles_m, tiles_n, ipt, wave: int):
    """Per shape: (SK tiles, then per SK unit its range) under CUTLASS 3.x's rules."""
    tiles = tiles_m * tiles_n
    sk_tiles = cutlass3_sk_tiles(tiles, ipt, wave)
    sk_units = np.minimum(wave, sk_tiles * ipt // CUTLASS3_MIN_ITERS_PER_SK_UNIT)
    sk_tiles = np.where(sk_units > 0, sk_tiles, 0)
    # Split-K over every tile when the units are a multiple of the tiles (only under one full
    # wave): CUTLASS numbers those units split-major; they are co-resident, tile-major is the same.
    split_k = (sk_tiles > 0) & (sk_tiles < sk_units) & (sk_units % np.maximum(sk_tiles, 1) == 0)
    groups = np.where(split_k, sk_tiles, 1)
    stream = np.flatnonzero((sk_tiles > 0) & ~split_k)
    if len(stream):
        groups[stream] = cutlass3_groups(sk_tiles[stream], sk_units[stream], ipt[stream],
                                         np.minimum(tiles_m, tiles_n)[stream])
    per_group = np.where(sk_tiles > 0, sk_units // groups, 0)
    # Group g gets sk_tiles // G tiles, one more for the first sk_tiles % G; its units split them
    # within one, then snap. (CUTLASS gives group g the tiles g, g + G, ...: a renaming.)
    row, u = ramp(per_group * groups)
    g, j = np.divmod(u, per_group[row])
    G, ip = groups[row], ipt[row]
    first_tile = g * (sk_tiles[row] // G) + np.minimum(g, sk_tiles[row] % G)
    group_iters = (sk_tiles[row] // G + (g < sk_tiles[row] % G)) * ip
    start, end = split_within_one(group_iters, per_group[row], j)
    snap = ~split_k[row]
    start = first_tile * ip + np.where(snap, _snap(start, ip), start)
    end = first_tile * ip + np.where(snap, _snap(end, ip), end)
    keep = end > start  # snapping can empty a unit: that CTA would have nothing to do
    return sk_tiles, row[keep], start[keep], end[keep]


# =========================================================================================
# Both: ranges of many shapes, and the registered schedulers
# =========================================================================================
def cutlass_ranges(name: str, shapes: np.ndarray, tile: TileShape, machine: Machine) -> Ranges | None:
    """The ranges of ``cutlass2-sk`` or ``cutlass3-sk`` for every shape row (m, n, k), each over
    its own m -> n -> k linearization: its SK CTAs one by one, then its DP tiles as one region
    of a tile a CTA. None where the schedule is not contiguous (cutlass2-sk with several CTAs
    per SM) or ``name`` is another."""
    shapes = np.asarray(shapes, dtype=np.int64).reshape(-1, 3)
    tiles_m, tiles_n = _ceil_div(shapes[:, 0], tile.bm), _ceil_div(shapes[:, 1], tile.bn)
    ipt, tiles = _ceil_div(shapes[:, 2], tile.bk), tiles_m * tiles_n
    if name == "cutlass2-sk" and machine.ctas_per_sm == 1:
        dp_tiles, sk_blocks = cutlass2_blocks(tiles, ipt, machine.sms, 1)
        sk_tiles = tiles - dp_tiles
        blocks, sk_start, sk_end = _cutlass2_sk_ranges(sk_tiles, ipt, sk_blocks)
        sk_row = np.repeat(np.arange(len(tiles)), blocks)
    elif name == "cutlass3-sk":
        sk_tiles, sk_row, sk_start, sk_end = _cutlass3_sk_ranges(tiles_m, tiles_n, ipt, machine.slots)
    else:
        return None
    n = len(tiles)
    row = np.concatenate([sk_row, np.arange(n)])  # the DP region after its shape's SK CTAs
    order = np.argsort(row, kind="stable")
    x0 = np.concatenate([sk_start, sk_tiles * ipt])[order]
    x1 = np.concatenate([sk_end, tiles * ipt])[order]
    parts = np.concatenate([np.ones(len(sk_row), np.int64), tiles - sk_tiles])[order]
    offsets = np.zeros(n + 1, dtype=np.int64)
    np.add.accumulate(np.bincount(row, minlength=n), out=offsets[1:])
    return Ranges.of_regions(shapes, tiles, ipt, offsets, x0, x1, parts)


def cutlass2_sk_ranges(shapes: np.ndarray, tile: TileShape, machine: Machine) -> Ranges | None:
    """cutlass2-sk's ranges for every shape on a machine of one CTA per SM; None on others."""
    return cutlass_ranges("cutlass2-sk", shapes, tile, machine)


def cutlass3_sk_ranges(shapes: np.ndarray, tile: TileShape, machine: Machine) -> Ranges:
    return cutlass_ranges("cutlass3-sk", shapes, tile, machine)


@register("cutlass2-sk", batch=cutlass2_sk_ranges)
def cutlass2_sk(shape: GemmShape, tile: TileShape, machine: Machine) -> Schedule:
    """CUTLASS 2.x's stream-K grid: SK blocks over the first tiles (count from the savings
    model), then data-parallel blocks; pure DP when no SK block count saves anything."""
    if machine.ctas_per_sm == 1:
        return one_shape("cutlass2-sk", cutlass2_sk_ranges, shape, tile, machine)
    p = Problem(shape, tile)
    dp_tiles, sk_blocks = cutlass2_blocks(p.tiles, p.iters_per_tile, machine.sms, machine.ctas_per_sm)
    if sk_blocks[0] == 0:
        return schedule_from_ranges("cutlass2-sk", shape, tile, machine, *tile_ranges(0, p.tiles, p.iters_per_tile))
    return _cutlass2_multi_occupancy(p, machine, int(dp_tiles[0]), int(sk_blocks[0]))


@register("cutlass3-sk", batch=cutlass3_sk_ranges)
def cutlass3_sk(shape: GemmShape, tile: TileShape, machine: Machine) -> Schedule:
    """CUTLASS 3.x's stream-K: DP unless there is a tail under half a wave and > 8 k-tiles per
    tile; then one wave of SK units (>= 8 k-tiles each) over the last full + partial wave,
    in up to 8 groups, followed by the DP tiles; split-K when the units divide the tiles."""
    return one_shape("cutlass3-sk", cutlass3_sk_ranges, shape, tile, machine)
