"""Paired Stream-K: CTAs 2i and 2i+1 run the same units on the two tiles of one cluster tile.

An sm90 launch in clusters of two shares B between a cluster's CTAs by TMA multicast where both
run unit j on tiles of one tile column over one k range (streamk/gpu/clusters.py). Basic
Stream-K's CTAs never do: each starts its tiles at its own k offset. Here the Stream-K split runs
over *cluster tiles* of 2 BM x BN (tile rows 2r and 2r + 1 of one tile column: one B) on half as
many super CTAs, and each super CTA becomes two CTAs, 2s taking the upper tile of each of its
units and 2s + 1 the lower one. The cluster tiles follow their upper tiles' index order, so the
tile order's rasterization (grouped-8: down a group's column) is kept.

With an odd number of tile rows the last row's tiles have no partner: they are shared by ordinary
Stream-K CTAs placed after the pairs, as many as keep the busiest CTA lightest. A data-parallel
region (the two-tile hybrid's) takes whole cluster tiles, the upper tile's CTA then the lower's.
Either way every MAC iteration is covered once (the Schedule checks it), and each pair's units
are on one tile column over one k range, so under turnstile every wait still points at a lower
CTA, and under owner-waits at a higher one, as in basic Stream-K.

``rows`` generalizes the pair: cluster tiles of 3 or 4 tile rows, each super CTA that many CTAs (CTA
rows s + i on tile row i of its cluster tiles), the last tile rows (fewer than ``rows``) ungrouped
after them. The GPU backend groups a whole tile column of 64-row splits so (gpu/decide/launches.py
column_splits): its clusters of three or four CTAs then all share B.
"""

from __future__ import annotations

import numpy as np

from ..schedule import FIXUP_POLICIES, Schedule, tile_coordinates
from ..shapes import GemmShape, Machine, Problem, TileShape
from .ranges import Ranges, split_within_one, units_of_ranges


def paired_schedule(name: str, shape: GemmShape, tile: TileShape, machine: Machine, tile_order: str,
                    sk_ctas: int, sk_tiles: int, rows: int = 2) -> Schedule | None:
    """Stream-K over ``sk_tiles`` tiles' worth of cluster tiles of ``rows`` tile rows (and the last
    tile rows' ungrouped tiles, where the tile rows are no multiple of ``rows``) on at most ``sk_ctas``
    CTAs, each super CTA ``rows`` CTAs (module doc), then the other cluster tiles data-parallel; None
    where no group fits (fewer tile rows, or too few CTAs)."""
    p = Problem(shape, tile)
    ipt = p.iters_per_tile
    tm, tn = tile_coordinates(tile_order, p.tiles_m, p.tiles_n, np.arange(p.tiles))
    at = np.empty((p.tiles_m, p.tiles_n), np.int64)
    at[tm, tn] = np.arange(p.tiles)
    top = np.flatnonzero((tm % rows == 0) & (tm + rows <= p.tiles_m))  # cluster tiles, in index order
    members = [at[tm[top] + i, tn[top]] for i in range(rows)]  # each cluster tile's tiles, top down
    single = np.flatnonzero(tm >= p.tiles_m - p.tiles_m % rows)
    dp = min((p.tiles - sk_tiles) // rows, len(top))  # whole cluster tiles, the last ones
    grouped_sk = len(top) - dp
    supers, alone = _split(grouped_sk * ipt, len(single) * ipt, sk_ctas, rows)
    if supers == 0:
        return None
    # the groups: super CTA s's units on cluster tiles, its tile row i's for CTA rows s + i
    starts, ends = split_within_one(grouped_sk * ipt, supers, np.arange(supers))
    cluster_units, cluster_offsets = units_of_ranges(ipt, starts, ends)
    counts = np.diff(cluster_offsets)
    # super CTA s's unit w (row offset + w) goes to row rows offset + w (CTA rows s), CTA rows s + i's count i rows on
    first = np.arange(len(cluster_units)) + (rows - 1) * np.repeat(cluster_offsets[:-1], counts)
    grouped = np.empty((rows * len(cluster_units), 3), np.int64)
    for i, tiles_of in enumerate(members):
        at_member = first + i * np.repeat(counts, counts)
        grouped[at_member] = cluster_units
        grouped[at_member, 0] = tiles_of[cluster_units[:, 0]]
    units = [grouped]
    sizes = [np.repeat(counts, rows)]
    if alone:  # the last, ungrouped rows: ordinary Stream-K after the groups
        starts, ends = split_within_one(len(single) * ipt, alone, np.arange(alone))
        single_units, single_offsets = units_of_ranges(ipt, starts, ends)
        single_units[:, 0] = single[single_units[:, 0]]
        units.append(single_units)
        sizes.append(np.diff(single_offsets))
    if dp:  # whole cluster tiles: the top tile's CTA, then the next row's
        whole = np.stack([m[grouped_sk:] for m in members], axis=1).reshape(-1)
        units.append(np.stack([whole, 0 * whole, 0 * whole + ipt], axis=1))
        sizes.append(np.ones(len(whole), np.int64))
    offsets = np.concatenate([[0], np.cumsum(np.concatenate(sizes))])
    return Schedule(name, shape, tile, np.concatenate(units), offsets, machine=machine, tile_order=tile_order)


def _split(grouped_iters: int, single_iters: int, ctas: int, rows: int) -> tuple[int, int]:
    """(super CTAs, ungrouped CTAs) sharing ``grouped_iters`` cluster-tile iterations and the ungrouped
    rows' ``single_iters`` on at most ``ctas`` CTAs (a super CTA is ``rows``), the busiest CTA as light as
    can be (ties: more groups); (0, 0) where no group fits."""
    low = 1 if grouped_iters else 0
    high = min(grouped_iters, (ctas - (single_iters > 0)) // rows)
    if high < low or grouped_iters == 0:
        return 0, 0
    supers = np.arange(low, high + 1)
    if single_iters == 0:
        return int(high), 0
    alone = np.minimum(ctas - rows * supers, single_iters)
    busiest = np.maximum(-(-grouped_iters // supers), -(-single_iters // alone))
    best = int(np.flatnonzero(busiest == busiest.min())[-1])
    return int(supers[best]), int(alone[best])


def paired_of_ranges(ranges: Ranges, name: str, tile: TileShape, machine: Machine, tile_order: str) -> Schedule | None:
    """Shape 0 of ``ranges`` paired (``paired_schedule``) where it is one Stream-K region from
    iteration 0 to a tile boundary and whole tiles after it (basic Stream-K, the two-tile hybrid),
    with its fixup and walk; None otherwise (data-parallel, aligned splits, ...) or where no pair fits."""
    ipt = int(ranges.ipt[0])
    lo, hi = int(ranges.region_offsets[0]), int(ranges.region_offsets[1])
    x0, x1, parts = ranges.x0[lo:hi], ranges.x1[lo:hi], ranges.parts[lo:hi]
    stream = (parts > 0) & (x1 - x0 != parts * ipt)
    if hi - lo > 2 or stream.sum() != 1:
        return None
    sk = int(np.flatnonzero(stream)[0])
    if x0[sk] != 0 or x1[sk] % ipt:
        return None
    shape = GemmShape(*(int(v) for v in ranges.shapes[0]))
    s = paired_schedule(name, shape, tile, machine, tile_order, int(parts[sk]), int(x1[sk]) // ipt)
    if s is None:
        return None
    s = s.with_fixup(FIXUP_POLICIES[ranges.fixup[0]])
    return s.walked_backward() if ranges.backward[0] else s


def paired_splits(s: Schedule, rows: int = 2) -> Schedule | None:
    """``s``'s aligned splits (every tile in the same number of k ranges, a CTA each, as fixed-split's)
    grouped: Stream-K over every cluster tile of ``rows`` tile rows on as many CTAs splits each tile the
    same way (evenly where the splits divide its iterations), now with CTAs rows i .. rows i + rows - 1
    on the tiles of one cluster tile over one k range; None where ``s`` is no such split or no group fits."""
    tiles = s.problem.tiles
    if s.grid % tiles or s.grid == tiles or len(s.units) != s.grid or \
            np.any(np.bincount(s.units[:, 0], minlength=tiles) != s.grid // tiles):
        return None
    paired = paired_schedule(s.decomposition, s.shape, s.tile, s.machine, s.tile_order, s.grid, tiles, rows)
    return None if paired is None else paired.with_fixup(s.fixup)
