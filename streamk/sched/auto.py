"""``auto``: the appendix's analytical model picks the decomposition and its grid.

The model's processors are SMs (the appendix's p: one CTA per SM), not resident slots: CTAs
that share an SM share its tensor cores and its L2 bandwidth, so a second CTA per SM adds no MAC
throughput to a Stream-K grid, only fixup (measured on an H100: per-SM throughput with one or two
resident 128x128 CTAs is the same, benchmarks/LOG.md v10). For fewer tiles than SMs (the
strong-scaling regime of the appendix's Figure 8) the model's grid g in [1, SMs] gives a basic
Stream-K schedule (g = t is data-parallel). With at least a tile per SM, on a machine of one CTA
per SM, auto runs the paper's evaluated kernel, two-tile SK + DP (Stream-K's skew limited to one
wave), but only where the same model says its SK wave beats the two DP waves it replaces
(``costs.two_tile_beats_dp``); else plain DP. ``sk_backward=True`` has each SK CTA walk its units
backwards under the turnstile fixup (the GPU backend asks for it): every SK CTA then starts the
head (k = 0) of its last tile at once and they move through k together, so one slab of B serves
the CTAs of a tile row as in a DP wave, and each tail's predecessor finished long before. Walked
forwards, each SK CTA starts a tile at its own k offset and the wave reads A and B from DRAM with
no reuse (H100, 128x256 tiles: 3072x3072x8192 353 -> 449 TFLOP/s, 6144^3 395 -> 435; +2-3% on
the corpus shapes that take that tile; benchmarks/LOG.md v15).
Where several CTAs are resident per SM, data-parallel's
busiest SM still runs ceil(t/p) tiles (co-resident CTAs share its tensor cores), so the same
model prices its quantization: basic Stream-K on every resident slot (p * CTAs per SM, the grid
that keeps them all busy) replaces it where the MAC iterations DP leaves idle on the busiest SM
exceed one fixup, c * (ceil(t/p) * ipt - ceil(t * ipt / p)) > b + d (``costs.sk_beats_dp_resident``),
for at most SK_MAX_WAVES SM-waves (more waves: DP's waste is a small share and Stream-K's units
scattered over them lost up to 1.27x; H100 oracle of 200 shapes on 128x128x32, LOG.md v22).

Given ``split_costs`` (the GPU backend passes its calibrated constants for the TMA + wgmma kernels),
below a tile per SM auto splits every tile s ways at the same k offsets (fixed-split's ranges on
s * tiles CTAs, s by the same model under those constants: ``costs.best_splits``) instead of taking
the model's grid: the CTAs of a tile's j-th split then step through one slab of A and B together,
as a DP wave does, where the even shares of a grid start each CTA at its own k offset and, once all
SMs are busy, read A and B back from DRAM (sm90 128x128x64 on an H100: basic Stream-K on every SM
0.75-1.07x of DP on 57 corpus shapes, the splits up to 1.23x; LOG.md v24). Given also
``split_busy_share``, the model prices a split grid's MAC iterations slower in proportion to its
CTAs beyond that share of the SMs: past about half of them an H100's 128x128x64 mainloop is bound
by the L2's bandwidth, so splitting tiles onto more SMs stops paying (LOG.md v28). Given also
``split_wide_share``, a wide GEMM of deep tiles (n at least SPLIT_WIDE_RATIO times m, at least
SPLIT_DEEP_ITERS iterations a tile: few tile rows, so DP leaves most SMs idle while its CTAs stream B)
prices them with that share instead: H100, 2-way splits of such corpus shapes ran 1.131x faster than
DP on 50 held out (min 0.977), x @ W.t() at 256x4096x14336 1.45x; on other deep shapes the larger
share was a wash (0.986x over 48; LOG.md v37).

Given ``hybrid_max_fill``, the two-tile hybrid is taken only where DP's partial wave fills at most
that share of the SMs: a nearly full last wave leaves Stream-K little to recover, and on the
one-CTA-per-SM 128x256x64 sm90 tile the SK wave then ran up to 1.27x slower than DP (LOG.md v37).
Given ``hybrid_max_waves``, the two-tile hybrid is taken only below that many waves of tiles (sm90
128x128x64 on an H100, from two waves on: the hybrid ran 1.03-1.10x the time of DP in grouped order
on deep tiles, and persistent DP already takes the shallow ones; LOG.md v28). Given also
``hybrid_busy_share`` and ``split_costs``, the same model decides the hybrid under the calibrated
constants with MAC iterations priced by their busy CTAs (``costs.two_tile_beats_dp``): DP's last,
partial wave then runs at the L2's light-load rate, so Stream-K pays only where that wave is a
small share of the SMs (LOG.md v29).

Given ``persistent_upto`` (the GPU backend passes it for kernels of one CTA per SM where it was
measured to pay), where auto's pick is plain DP over more tiles than SMs with at most that many
iterations per tile, the same tiles run on one persistent CTA per SM (CTA c: tiles c, c + p, ...;
``basic.persistent_tiles``): each CTA's prologue and pipeline fill is paid once, and its producer
loads the next tile's operands during an epilogue, where a new CTA per tile starts from an empty
pipeline (sm90 128x128x64 on an H100: 1.16x faster than DP on the 35 of 78 corpus shapes with
k <= 1024 it changes; deeper tiles lose the hardware's dynamic CTA placement; LOG.md v23).

Given ``few_tiles_reduce`` (the GPU backend passes it for the sm90 128x128x64 kernel), a GEMM of
fewer than SK_REDUCE_MAX_WAVES tiles per SM and at least SK_REDUCE_MIN_ITERS iterations per tile runs
basic Stream-K on every SM under the separate-reduce fixup: each tile is then split five ways or more,
and the reduce pass sums a tile's partials on many SMs at once where an owner reads its peers one
after another (H100, sm90 128x128x64, three 200-shape fidelity runs of every variant: 1.13-1.19x
faster than the aligned splits on the 20-23 shapes it changes, none slower than 0.97x; LOG.md v26).

Given ``decode_reduce`` (the GPU backend passes it for decode-like GEMMs on the sm80 rectangles of
an H100), a DP grid of at most DECODE_REDUCE_MAX_FILL of the SMs' tiles, each at least
DECODE_REDUCE_MIN_ITERS deep, runs basic Stream-K on every resident slot under separate-reduce:
such a GEMM streams a large operand, and one CTA per tile on a minority of the SMs reads it at a
fraction of the device's bandwidth (1.05-1.7x faster on the 10 of 400 decode shapes it changes,
0.9719 -> 0.9840x cuBLAS raw on one seed; LOG.md v29).

Given ``spread_reduce`` (the GPU backend passes it for its memory-bound tile of at most 8 columns,
kernels/sm80/dot.cuh, whose MAC iteration streams 16 KB of A while a partial is 2 KB), auto ignores
the model: deeper than SPREAD_REDUCE_MAX_SHALLOW iterations a tile, basic Stream-K under
separate-reduce on every resident slot, but at most SPREAD_REDUCE_MAX_PARTIALS CTAs a tile (every
SM streams its share of A; the reduce pass sums a tile's slots 8 in flight); else DP. H100, 46
decode shapes of at most 8 columns: Stream-K on every slot under separate-reduce 0.857x cuBLAS raw,
DP 0.527x, Stream-K under owner-waits 0.644x; DP was as fast at two iterations a tile (LOG.md v30).
H200, 83 such shapes deeper than that: at most 8 / 16 / 32 / 64 CTAs a tile 0.941 / 1.002 / 1.011 /
1.009x cuBLAS raw, last-arrival in place of the reduce pass 0.70-0.75x (LOG.md v31).

Given ``pair_rows`` (the GPU backend passes it where the launch would share B by TMA multicast on the
128x256x64 and 128x192x64 tiles: gpu/decide/launches.pair_stream_k), auto's Stream-K (basic, or the
two-tile hybrid's SK CTAs) runs paired (``sched.paired``): CTAs 2i and 2i + 1 run the same k ranges
on the two tiles of one cluster tile, so that a cluster of two shares each stage's B (benchmarks/LOG.md
v42); numbered in ``tile_order``, which make_schedule gives it.

Below a tile per SM, given ``reduce_costs`` (the same model's constants for the separate-reduce
fixup, whose pass sums a split tile's slots on many SMs at once), auto also plans that grid and
takes it where the model says it is faster than owner-waits: the owner reads its peers one after
another (``d`` per peer), the reduce pass costs one more launch and every CTA's partial store
(larger ``b``) but little per peer, so it wins on few tiles split many ways (GPU measurements in
docs/auto-model.md).
"""

from __future__ import annotations

import numpy as np

from ..costs import AUTO_COSTS, Costs, best_grids, best_splits, sk_beats_dp_resident, two_tile_beats_dp
from ..schedule import FIXUP_POLICIES, Schedule
from ..shapes import GemmShape, Machine, TileShape
from .basic import persistent_tiles
from .hybrid import hybrid_regions
from .paired import paired_of_ranges
from .ranges import Ranges, tile_counts, two_regions
from .registry import register


def auto_ranges(shapes: np.ndarray, tile: TileShape, machine: Machine, *, model_costs: Costs | None = None,
                reduce_costs: Costs | None = None, sk_backward: bool = False,
                split_costs: Costs | None = None, split_busy_share: float | None = None,
                split_wide_share: float | None = None,
                few_tiles_reduce: bool = False, hybrid_max_waves: float | None = None,
                hybrid_busy_share: float | None = None, hybrid_max_fill: float | None = None,
                decode_reduce: bool = False, spread_reduce: bool = False) -> Ranges:
    """auto's choice for every shape (see the module docstring), as a batch."""
    tiles_m, tiles_n, ipt = tile_counts(shapes, tile)
    tiles = tiles_m * tiles_n
    total = tiles * ipt
    if spread_reduce:
        spread = ipt > SPREAD_REDUCE_MAX_SHALLOW
        grid = np.where(spread, np.minimum(np.minimum(machine.slots, total), SPREAD_REDUCE_MAX_PARTIALS * tiles), tiles)
        fixup = np.where(spread, FIXUP_POLICIES.index("separate-reduce"), FIXUP_POLICIES.index("owner-waits"))
        return two_regions(shapes, tiles, ipt, total, grid, 0 * grid, fixup.astype(np.int8), np.zeros(len(tiles), bool))
    costs = model_costs or AUTO_COSTS
    fixup = np.full(len(tiles), FIXUP_POLICIES.index("owner-waits"), np.int8)
    grid = tiles.copy()  # DP, or basic Stream-K at the model's grid below a tile per SM
    splits = np.ones_like(tiles)  # > 1: every tile split that many ways at aligned k offsets
    few = (tiles < machine.sms).nonzero()[0]
    if len(few) and split_costs is not None:
        share = split_busy_share
        if split_wide_share is not None and split_busy_share is not None:
            dims = np.asarray(shapes, dtype=np.int64).reshape(-1, 3)
            m, n = dims[few, 0], dims[few, 1]
            wide = (n >= SPLIT_WIDE_RATIO * m) & (ipt[few] >= SPLIT_DEEP_ITERS)
            share = np.where(wide, split_wide_share, split_busy_share)
        splits[few] = best_splits(tiles[few], ipt[few], machine.sms, split_costs, share)
    elif len(few):  # the model's grids cost tens of microseconds: only where they are used
        models = (costs,) if reduce_costs is None else (costs, reduce_costs)
        grids, times = best_grids(total[few], ipt[few], machine.sms, models)
        grid[few] = grids[0]
        if reduce_costs is not None:
            reduce = times[1] < times[0]
            grid[few[reduce]] = grids[1][reduce]
            fixup[few[reduce]] = FIXUP_POLICIES.index("separate-reduce")
    if few_tiles_reduce:  # few deep tiles: every SM, the partials summed by the reduce pass
        deep = (tiles < SK_REDUCE_MAX_WAVES * machine.sms) & (ipt >= SK_REDUCE_MIN_ITERS)
        grid[deep], splits[deep] = np.minimum(machine.sms, total[deep]), 1
        fixup[deep] = FIXUP_POLICIES.index("separate-reduce")
    if decode_reduce:  # a DP grid of few deep tiles: every resident slot, the reduce pass sums
        lone = (grid == tiles) & (splits == 1) & (tiles <= DECODE_REDUCE_MAX_FILL * machine.sms)
        lone &= ipt >= DECODE_REDUCE_MIN_ITERS
        grid[lone] = np.minimum(machine.slots, total[lone])
        fixup[lone] = FIXUP_POLICIES.index("separate-reduce")
    split, first, second = total, grid, 0 * grid
    if machine.ctas_per_sm == 1 and len(few) < len(tiles):
        if split_costs is not None and hybrid_busy_share is not None:  # calibrated, priced by busy CTAs
            hybrid = two_tile_beats_dp(tiles, ipt, machine.sms, split_costs, hybrid_busy_share)
        else:
            hybrid = two_tile_beats_dp(tiles, ipt, machine.sms, costs)
        if hybrid_max_waves is not None:
            hybrid &= tiles < hybrid_max_waves * machine.sms
        if hybrid_max_fill is not None:
            hybrid &= tiles % machine.sms <= hybrid_max_fill * machine.sms
        h_split, h_first, h_second = hybrid_regions(tiles, ipt, machine.sms, sk_first=True)
        split, first, second = (np.where(hybrid, h, o) for h, o in
                                ((h_split, split), (h_first, first), (h_second, second)))
        backward = hybrid & sk_backward
        fixup[backward] = FIXUP_POLICIES.index("turnstile")
    else:
        sk = sk_beats_dp_resident(tiles, ipt, machine.sms, costs, SK_MAX_WAVES)
        grid = np.where(sk, np.minimum(machine.slots, total), grid)
        first = grid
        backward = sk & sk_backward
        fixup[backward] = FIXUP_POLICIES.index("turnstile")
    return two_regions(shapes, tiles, ipt, split, first, second, fixup, backward, tile_splits=splits)


SPLIT_WIDE_RATIO = 8  # split_wide_share: n at least this many times m ...
SPLIT_DEEP_ITERS = 64  # ... and at least this many MAC iterations a tile
SK_MAX_WAVES = 3  # SM-waves of tiles up to which several resident CTAs per SM run Stream-K
SK_REDUCE_MAX_WAVES = 0.2  # few_tiles_reduce: below this many tiles per SM (0.15-0.25 scored alike, v26)
SK_REDUCE_MIN_ITERS = 32  # ... and at least this many MAC iterations per tile (24-40 scored alike)
DECODE_REDUCE_MAX_FILL = 0.6  # decode_reduce: DP grids of at most this share of the SMs (0.5-0.7 alike)
DECODE_REDUCE_MIN_ITERS = 24  # ... and at least this many MAC iterations per tile (16-32 alike)
SPREAD_REDUCE_MAX_SHALLOW = 2  # spread_reduce: DP at this many MAC iterations per tile or fewer
SPREAD_REDUCE_MAX_PARTIALS = 32  # ... else at most this many CTAs a tile


@register("auto", batch=auto_ranges)
def auto(shape: GemmShape, tile: TileShape, machine: Machine, *, model_costs: Costs | None = None,
         reduce_costs: Costs | None = None, sk_backward: bool = False, persistent_upto: int | None = None,
         split_costs: Costs | None = None, split_busy_share: float | None = None,
         split_wide_share: float | None = None, few_tiles_reduce: bool = False, hybrid_max_waves: float | None = None,
         hybrid_busy_share: float | None = None, hybrid_max_fill: float | None = None, decode_reduce: bool = False,
         spread_reduce: bool = False, pair_rows: bool = False, tile_order: str = "row-major") -> Schedule:
    ranges = auto_ranges(np.array([[shape.m, shape.n, shape.k]]), tile, machine, model_costs=model_costs,
                         reduce_costs=reduce_costs, sk_backward=sk_backward, split_costs=split_costs,
                         split_busy_share=split_busy_share, split_wide_share=split_wide_share,
                         few_tiles_reduce=few_tiles_reduce,
                         hybrid_max_waves=hybrid_max_waves, hybrid_busy_share=hybrid_busy_share,
                         hybrid_max_fill=hybrid_max_fill, decode_reduce=decode_reduce, spread_reduce=spread_reduce)
    tiles, ipt = int(ranges.tiles[0]), int(ranges.ipt[0])
    # auto's even splits of [0, total) over as many CTAs as tiles are a whole tile each: plain DP
    if persistent_upto is not None and machine.sms < tiles and ipt <= persistent_upto and ranges.grids[0] == tiles:
        return persistent_tiles("auto", shape, tile, machine, machine.sms)
    if pair_rows and (paired := paired_of_ranges(ranges, "auto", tile, machine, tile_order)) is not None:
        return paired
    return ranges.schedule(0, "auto", tile, machine)
