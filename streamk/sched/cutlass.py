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
"""

from __future__ import annotations

import numpy as np

from ..schedule import Schedule
from ..shapes import GemmShape, Machine, Problem, TileShape
from .ranges import balanced_starts, schedule_from_ranges, tile_ranges
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


def _ceil_div(a: int | np.ndarray, b: int | np.ndarray):
    return -(-a // b)


# =========================================================================================
# CUTLASS 2.x
# =========================================================================================
def cutlass2_sk_blocks(sk_tiles: int, ipt: int, sms: int, max_occupancy: int,
                       allow_partial_wave: bool) -> tuple[int, int]:
    """``get_sk_blocks``: the SK block count with the largest modeled savings (ties: more blocks).

    Savings, in MAC iterations, of running ``sk_tiles`` tiles as ``g`` SK blocks instead of
    ``ceil(sk_tiles / sms)`` DP waves: the DP time, minus the SK time (``ceil(iters / g)`` per
    block times SK waves), minus a fixup charge per wave and per peer, plus a skew charge when
    the blocks do not split the tiles evenly. Returns (blocks, savings); (0, INT_MIN) if none.
    """
    if sk_tiles == 0:
        return 0, _NO_SAVINGS
    sk_iters = sk_tiles * ipt
    dp_equiv_iters = ipt * _ceil_div(sk_tiles, sms)
    lo = min(sms, sk_tiles + 1) if allow_partial_wave else sms
    hi = min(sms * max_occupancy, sk_iters // CUTLASS2_MIN_ITERS_PER_SK_BLOCK)
    if lo > hi:
        return 0, _NO_SAVINGS
    trial = np.arange(lo, hi + 1, dtype=np.int64)
    waves = _ceil_div(trial, sms)
    sk_iter_equiv = _ceil_div(sk_iters, trial) * waves
    aligned = trial % sk_tiles == 0
    peers = np.where(aligned, trial // sk_tiles, _ceil_div(trial, sk_tiles) + 1)  # +1: alignment skew
    f32 = np.float32  # CUTLASS computes the charges in float, then truncates to int
    skew = np.where(aligned, f32(0), f32(CUTLASS2_SKEW_COST) * peers.astype(f32) * sk_iter_equiv.astype(f32))
    fixup = (f32(CUTLASS2_WAVE_COST) * waves.astype(f32) + skew.astype(f32)
             + f32(CUTLASS2_PEER_COST) * peers.astype(f32)).astype(np.int64)
    savings = dp_equiv_iters - sk_iter_equiv - fixup
    best = len(savings) - 1 - int(np.argmax(savings[::-1]))  # ">=": the last of equal savings wins
    return int(trial[best]), int(savings[best])


def cutlass2_blocks(tiles: int, ipt: int, sms: int, occupancy: int) -> tuple[int, int]:
    """``get_blocks``: (dp_tiles, sk_blocks). The SK tiles are the first ``tiles - dp_tiles``."""
    full_waves, partial = divmod(tiles, sms)
    full_wave_tiles = full_waves * sms
    if partial == 0 or sms < 2:  # perfect quantization, or nothing to balance across
        return tiles, 0
    if full_waves < occupancy:
        # Under one GPU-full of CTAs: SK over the partial wave only, up to full occupancy.
        blocks, savings = cutlass2_sk_blocks(partial, ipt, sms, occupancy - full_waves, True)
        return (full_wave_tiles, blocks) if savings >= 0 else (tiles, 0)
    if occupancy > 1 and full_waves % occupancy == occupancy - 1:
        # The partial wave would top up the last occupancy level: try SK over it alone.
        blocks, savings = cutlass2_sk_blocks(partial, ipt, sms, 1, True)
        if savings >= 0:
            return full_wave_tiles, blocks
    # SK over the last full wave plus the partial one, with at least a full wave of SK blocks.
    max_occupancy = occupancy - (full_waves - 1) % occupancy
    blocks, savings = cutlass2_sk_blocks(partial + sms, ipt, sms, max_occupancy, False)
    return (full_wave_tiles - sms, blocks) if savings >= 0 else (tiles, 0)


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


def _from_pieces(name: str, shape: GemmShape, tile: TileShape, machine: Machine,
                 cta: np.ndarray, starts: np.ndarray, ends: np.ndarray) -> Schedule:
    """Like schedule_from_ranges, but CTA ``cta[i]`` (non-decreasing) may own several ranges."""
    s = schedule_from_ranges(name, shape, tile, machine, starts, ends)
    first_piece = np.flatnonzero(np.diff(cta, prepend=-1) != 0)
    offsets = np.append(s.cta_offsets[first_piece], s.cta_offsets[-1])
    if len(offsets) == len(s.cta_offsets):
        return s
    return Schedule(name, shape, tile, s.units, offsets, machine=machine)


@register("cutlass2-sk")
def cutlass2_sk(shape: GemmShape, tile: TileShape, machine: Machine) -> Schedule:
    """CUTLASS 2.x's stream-K grid: SK blocks over the first tiles (count from the savings
    model), then data-parallel blocks; pure DP when no SK block count saves anything."""
    p = Problem(shape, tile)
    ipt, sms, occ = p.iters_per_tile, machine.sms, machine.ctas_per_sm
    dp_tiles, sk_blocks = cutlass2_blocks(p.tiles, ipt, sms, occ)
    sk_tiles = p.tiles - dp_tiles
    if sk_blocks == 0:
        return schedule_from_ranges("cutlass2-sk", shape, tile, machine, *tile_ranges(0, p.tiles, ipt))
    sk_waves = _ceil_div(sk_blocks, sms)
    sk_blocks = min(sk_blocks, sk_tiles * ipt)
    regions = sk_tiles if sk_blocks > sk_tiles and sk_blocks % sk_tiles == 0 else 1  # split-K-like
    per_region = sk_blocks // regions
    # DP blocks; with several CTAs per SM the first DP wave may take several tiles each.
    dp_blocks, first_wave_tiles = dp_tiles, 1
    if sk_waves and not _cohort_raster(p, sk_tiles, dp_blocks, sms * occ):
        excess = (sk_waves + _ceil_div(dp_tiles, sms)) % occ
        if 1 + excess <= dp_tiles // sms:
            first_wave_tiles += excess
            dp_blocks -= excess * sms
    dp_start = sk_waves * sms  # SK blocks, padding to whole SK waves, then DP blocks
    active = dp_start + dp_blocks
    logical = np.arange(active, dtype=np.int64)
    if occ > 1 and active > 2 * sms:  # remap_block_indices: spread the first two waves over SMs
        head = logical[: 2 * sms]
        logical[: 2 * sms] = head // 2 + (head % 2) * sms
    sk = logical < sk_blocks
    # CUTLASS interleaves the regions over blockIdx (block b -> region b % regions); all SK
    # blocks are co-resident (at most sms x occupancy of them), so we number them region-major,
    # which keeps the schedule contiguous for the sweep's fast path and changes no time.
    sk_idx = logical[sk]
    region_iters = sk_tiles * ipt // regions
    bounds = balanced_starts(region_iters, per_region)
    region, j = np.divmod(sk_idx, per_region)
    sk_start, sk_end = region * region_iters + bounds[j], region * region_iters + bounds[j + 1]
    hw = np.arange(active, dtype=np.int64)  # hardware blockIdx; padding blocks do nothing
    dp_hw = hw[logical >= dp_start]
    d = logical[dp_hw] - dp_start
    tiles_each = np.where(d < sms, first_wave_tiles, 1)
    first = sk_tiles + d + np.where(d < sms, 0, (first_wave_tiles - 1) * sms)
    rep = np.repeat(np.arange(len(d)), tiles_each)
    nth = np.arange(len(rep)) - np.repeat(np.cumsum(tiles_each) - tiles_each, tiles_each)
    piece_tile = first[rep] + nth * sms  # a first-wave DP block strides over its tiles
    cta = np.concatenate([hw[sk], dp_hw[rep]])
    starts = np.concatenate([sk_start, piece_tile * ipt])
    ends = np.concatenate([sk_end, (piece_tile + 1) * ipt])
    if occ == 1:  # blockIdx order is already SK then DP, one range per CTA
        return schedule_from_ranges("cutlass2-sk", shape, tile, machine, starts, ends)
    order = np.argsort(cta, kind="stable")
    return _from_pieces("cutlass2-sk", shape, tile, machine, cta[order], starts[order], ends[order])


# =========================================================================================
# CUTLASS 3.x
# =========================================================================================
def cutlass3_sk_tiles(tiles: int, ipt: int, wave: int) -> int:
    """``get_num_sk_tiles`` (Heuristic mode): how many leading tiles stream-K covers (0: DP)."""
    full_waves, tail = divmod(tiles, wave)
    if tail == 0 or ipt <= CUTLASS3_MIN_ITERS_PER_SK_UNIT:
        return 0  # no wave quantization, or too few k-tiles per tile to split
    if 2 * tail >= wave:
        return 0  # the tail wave is at least half full: data-parallel
    dp_waves = full_waves - 1 if full_waves > 1 else 0  # the last full wave joins the SK region
    return tiles - dp_waves * wave


def cutlass3_groups(sk_tiles: int, sk_units: int, ipt: int, max_groups: int) -> int:
    """``calculate_groups``: the most groups (<= 8) that divide the SK units and tiles evenly
    and keep >= 8 k-tiles per unit; else the most that divide the units; else 1."""
    def too_small(g: int) -> bool:
        return (sk_tiles // g) * ipt // (sk_units // g) < CUTLASS3_MIN_ITERS_PER_SK_UNIT

    groups, fallback = min(max_groups, CUTLASS3_MAX_SK_GROUPS), 0
    while groups > 1 and not (sk_units % groups == 0 and sk_tiles % groups == 0 and not too_small(groups)):
        if fallback == 0 and sk_units % groups == 0 and not too_small(groups):
            fallback = groups
        groups -= 1
    return fallback if groups == 1 and fallback > 0 else max(groups, 1)


def _snap(x: np.ndarray, ipt: int) -> np.ndarray:
    """Move a unit boundary to its tile's edge when within 8 k-tiles of it (never a short split)."""
    k = x % ipt
    return np.where(k < CUTLASS3_MIN_ITERS_PER_SK_UNIT, x - k,
                    np.where(k > ipt - CUTLASS3_MIN_ITERS_PER_SK_UNIT, x - k + ipt, x))


@register("cutlass3-sk")
def cutlass3_sk(shape: GemmShape, tile: TileShape, machine: Machine) -> Schedule:
    """CUTLASS 3.x's stream-K: DP unless there is a tail under half a wave and > 8 k-tiles per
    tile; then one wave of SK units (>= 8 k-tiles each) over the last full + partial wave,
    in up to 8 groups, followed by the DP tiles; split-K when the units divide the tiles."""
    p = Problem(shape, tile)
    ipt, wave, tiles = p.iters_per_tile, machine.slots, p.tiles
    sk_tiles = cutlass3_sk_tiles(tiles, ipt, wave)
    sk_units = min(wave, sk_tiles * ipt // CUTLASS3_MIN_ITERS_PER_SK_UNIT)
    if sk_tiles == 0 or sk_units == 0:
        return schedule_from_ranges("cutlass3-sk", shape, tile, machine, *tile_ranges(0, tiles, ipt))
    if sk_tiles < sk_units and sk_units % sk_tiles == 0:
        # Split-K over every tile (only reachable with under one full wave). CUTLASS numbers the
        # units split-major (split * tiles + tile); they are all co-resident, so tile-major order
        # gives the same times and a contiguous schedule.
        bounds = balanced_starts(ipt, sk_units // sk_tiles)
        base = np.arange(tiles, dtype=np.int64)[:, None] * ipt
        return schedule_from_ranges("cutlass3-sk", shape, tile, machine, (base + bounds[None, :-1]).reshape(-1),
                                    (base + bounds[None, 1:]).reshape(-1))
    groups = cutlass3_groups(sk_tiles, sk_units, ipt, min(p.tiles_m, p.tiles_n))
    units_per_group = sk_units // groups
    # CUTLASS gives group g the tiles g, g + G, g + 2G, ... and SK unit i to group i % G. We
    # number each group's tiles contiguously and its units group-major: a renaming of tiles
    # (each keeps its contributors) and of co-resident units (all start at once), so no time
    # changes and the schedule stays contiguous for the sweep's fast path.
    group_tiles = sk_tiles // groups + (np.arange(groups) < sk_tiles % groups)
    group_first = np.concatenate([[0], np.cumsum(group_tiles)])
    g, j = np.divmod(np.arange(units_per_group * groups, dtype=np.int64), units_per_group)
    group_iters = group_tiles[g] * ipt
    per, big = group_iters // units_per_group, group_iters % units_per_group
    local = per * j + np.minimum(j, big)
    base = group_first[g] * ipt
    starts = base + _snap(local, ipt)
    ends = base + _snap(local + per + (j < big), ipt)
    keep = ends > starts  # snapping can empty a unit: that CTA would have nothing to do
    dp = tile_ranges(sk_tiles, tiles, ipt)
    return schedule_from_ranges("cutlass3-sk", shape, tile, machine, np.concatenate([starts[keep], dp[0]]),
                                np.concatenate([ends[keep], dp[1]]))
