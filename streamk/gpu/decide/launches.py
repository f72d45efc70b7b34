"""How a decided GEMM's kernels are launched: programmatic dependent launch between them, sm90
clusters that multicast B (and, asked for, 2x2 ones that multicast A too), and the separate-reduce pass's blocks per split tile.

Each rule names the LOG.md entry that measured it; benchmarks/LOG.md holds the figures.
"""

from __future__ import annotations

import numpy as np

from ...schedule import Schedule, tile_coordinates
from ...shapes import ITEMSIZE, GemmShape, Problem
from ..catalogue import (SM90_192_TILE, SM90_M64_192_TILE, SM90_M64_TILE, SM90_M64_WIDE_TILE, SM90_TILE, SM90_WIDE_TILE,
                         KernelSpec)

# Programmatic dependent launch between one GEMM's kernels (pack -> main -> separate-reduce): by
# default only where the main grid is at most one CTA per SM; larger grids gained little and lost on
# some big packed GEMMs, whose main-kernel CTAs were placed while the pack pass still ran (LOG.md v13).
# A GEMM's first main kernel launches so too, behind whatever kernel ran before it on the stream (often
# another GEMM; a kernel that never triggers lets it start only at its end): that kernel may be a
# multi-wave grid like the pack, so the same one-wave default holds there. But sm90 launches of more
# than half a wave and less than a whole one lost there: the GEMM before leaves some SMs free, so some
# CTAs are placed early and the rest as its CTAs leave, and traces show the mixed placement's mainloops
# slower per iteration once released (gpu_probe.py --trace --pair); at most half a wave (every CTA
# early) or nearly a whole one (none) they ran as fast. So there, only where the busiest CTA's work is
# small enough for the hidden prologue (~1 us) to outweigh that (LOG.md v41).
BEHIND = ("pack", "prescale", "main", "stream")  # the kernel a PDL launch follows
MAY_BE_MULTI_WAVE = ("pack", "stream")
STREAM_PDL_MAX_MACS = 8 * 128 * 128 * 64  # the busiest CTA's MACs: eight 128x128x64 iterations
FULL_WAVE = 0.9  # from this share of the SMs on, a grid is placed as a whole wave is


def longest_cta_macs(spec: KernelSpec, schedule: Schedule) -> int:
    """The MACs of the schedule's busiest CTA on the kernels whose PDL launch behind an unknown
    kernel was measured to cost (the sm90 family's); 0 on the others, which it never cost."""
    if not spec.tma:
        return 0
    done = np.concatenate(([0], np.cumsum(schedule.units[:, 2] - schedule.units[:, 1])))
    per_cta = done[schedule.cta_offsets[1:]] - done[schedule.cta_offsets[:-1]]
    return int(per_cta.max(initial=0)) * spec.tile.bm * spec.tile.bn * spec.tile.bk


def use_pdl(pdl: bool | None, main_grid: int, sms: int, arch: str, *, behind: str, cta_macs: int = 0) -> bool:
    """Whether a kernel of this launch uses programmatic dependent launch behind ``behind``: "pack"
    or "prescale" (the main kernel behind that pass), "main" (the reduce pass behind the main
    kernel) or "stream" (the main kernel as the GEMM's first, behind any kernel before it). Behind
    the pack pass or an unknown kernel, by default only where the main grid fits one CTA per SM:
    main-kernel CTAs placed while a large multi-wave pack still ran were slower (LOG.md v13);
    behind an unknown kernel, a grid between half a wave and nearly a whole one also only where
    ``cta_macs`` (longest_cta_macs) is at most STREAM_PDL_MAX_MACS. Behind the main kernel or the one-wave atomic prescale, every grid:
    nothing waits to be placed."""
    if behind not in BEHIND:
        raise ValueError(f"behind must be one of {', '.join(BEHIND)} (got {behind!r})")
    if int("".join(ch for ch in arch if ch.isdigit())) < 90:
        return False  # griddepcontrol is sm_90's
    if pdl is not None:
        return pdl
    if behind == "stream" and cta_macs > STREAM_PDL_MAX_MACS and sms / 2 < main_grid < FULL_WAVE * sms:
        return False
    return main_grid <= sms or behind not in MAY_BE_MULTI_WAVE


# sm90 clusters of two CTAs sharing B by TMA multicast (clusters.py) on the tile whose mainloop asks the
# most of the L2 (128x128x64: 32 KB a CTA per 0.38 us MAC iteration; 128x256x64: 48 KB per 0.69 us).
# 128x256x64 gained nothing with 128-byte rows (LOG.md v26; but see STRADDLE_MULTICAST_TILES). The
# 64-row tiles read B twice per flop what 128-row ones do (64x128x64: 16 of a stage's 24 KB), so they
# share it too (LOG.md v41c).
MULTICAST_TILES = (SM90_TILE, SM90_M64_TILE, SM90_M64_WIDE_TILE)
# 128x256x64 and 128x192x64 share B too where each tile runs at least MULTICAST_MIN_ITERATIONS and
# either B's rows are only 16-byte aligned (a row stride that is no multiple of 32 bytes: every other
# 128-byte box row starts 16 bytes into a 32-byte L2 sector and spans one sector more, which the L2's
# request rate pays for, and multicast halves B's requests; LOG.md v41b, v41d) or the launch splits
# tiles (auto's paired Stream-K: 1.01-1.15x on aligned rows, LOG.md v151). Whole-tile launches on
# aligned rows ran 0.90-1.10x in pairs, and shallower launches lose what clusters cost (LOG.md v41b).
STRADDLE_MULTICAST_TILES = (SM90_WIDE_TILE, SM90_192_TILE)
MULTICAST_MIN_ITERATIONS = 16  # MAC iterations a tile
STRADDLE_BYTES = 32  # B row strides that are no multiple of this
# 64x192x64 (m 129-192 over wide n: its three tile rows read each B column three times) shares B at any
# depth, but only where B's rows straddle sectors: pairs ran 1.02-1.18x there, 0.80-0.92x on rows of
# whole 128-byte lines and 0.95-1.06x on 32-byte ones (LOG.md v162).
STRADDLE_ONLY_TILES = (SM90_M64_192_TILE,)


def use_multicast(multicast: bool, spec: KernelSpec, b_row_bytes: int | None = None, tile_iterations: int = 0,
                  splits_tiles: bool = False) -> bool:
    """Whether launches of ``spec``'s main kernel run in clusters that share B where the table pairs
    CTAs; ``b_row_bytes``: the stride of the rows the kernel's TMA reads B by (None: unknown),
    ``tile_iterations``: a tile's MAC iterations, ``splits_tiles``: whether some tile's MAC iterations
    run in more than one unit."""
    if not (multicast and spec.tma):
        return False
    if spec.tile in MULTICAST_TILES:
        return True
    straddles = b_row_bytes is not None and b_row_bytes % STRADDLE_BYTES != 0
    if spec.tile in STRADDLE_ONLY_TILES:
        return straddles
    return (spec.tile in STRADDLE_MULTICAST_TILES and tile_iterations >= MULTICAST_MIN_ITERATIONS
            and (straddles or splits_tiles))


def pair_stream_k(multicast: bool, spec: KernelSpec, b_row_bytes: int | None, tile_iterations: int) -> bool:
    """Whether auto's Stream-K on ``spec``'s tile runs paired (streamk.sched.paired: CTAs 2i and
    2i + 1 on two tile rows of one column over the same k ranges) so that its clusters share B: on
    the tiles that multicast split tiles (use_multicast). Basic Stream-K's partial tiles never pair,
    so they keep paying for straddling rows (H200, LOG.md v41b)."""
    return spec.tile in STRADDLE_MULTICAST_TILES and use_multicast(multicast, spec, b_row_bytes, tile_iterations, True)


# auto's and the model's aligned splits (auto's even splits, fixed-split) on STRADDLE_MULTICAST_TILES
# run in twin pairs that share B (sched.paired_splits) where B's rows straddle sectors and each CTA's
# split is at least PAIRED_SPLIT_MIN_ITERS MAC iterations (H200, LOG.md v154): shorter splits gained 1.05x
# with losses to 0.85x; of 60 moved shapes of fresh seeds, those with straddling rows 1.14x (0.97-1.44x),
# aligned rows 1.01x (0.85-1.20x); the rule held out on seeds drawn after it at 1.154x FP16 (23 shapes,
# 1.00-1.34x) and 1.130x BF16 (15). The model prices pairs as halving B's straddle cost only and misses
# most of this gain (LOG.md v155): a rule.
PAIRED_SPLIT_MIN_ITERS = 26


def pair_splits(multicast: bool, spec: KernelSpec, b_row_bytes: int, schedule: Schedule) -> bool:
    """Whether ``schedule``'s aligned splits (a split a CTA) on ``spec``'s tile run in twin pairs
    (above): B's rows ``b_row_bytes`` apart straddle sectors (use_multicast) and each CTA runs
    PAIRED_SPLIT_MIN_ITERS MAC iterations or more."""
    p = schedule.problem
    return (spec.tile in STRADDLE_MULTICAST_TILES and schedule.grid > p.tiles
            and p.iters_per_tile * p.tiles // schedule.grid >= PAIRED_SPLIT_MIN_ITERS
            and use_multicast(multicast, spec, b_row_bytes, p.iters_per_tile))


# auto's aligned splits on 64x128x64 over COLUMN_ROWS tile rows (m 129-256) run grouped by the whole tile
# column (sched.paired_splits by rows: its rows CTAs on one column's tiles over one k range), in clusters
# of that many CTAs that all share B (column_rows), where each CTA's split is PAIRED_SPLIT_MIN_ITERS deep or
# more, as the pairs' rule, and the grid fits such clusters' residency (cluster_slots; owner-waits
# point upwards: every cluster must be resident). Against the same splits unclustered: 1.19x and 1.20x on
# auto's own such launches, 1.02-1.10x on deeper splits of sm80 shapes; splits of 6-21 iterations lost to
# 0.81x (H200, LOG.md v164).
COLUMN_SPLIT_TILES = (SM90_M64_TILE,)
# The share of an H200's 132 CTA slots (one CTA an SM) that clusters of 3 and of 4 fill: the occupancy API holds
# 39 and 30 of them, a cluster's CTAs sharing one GPC (LOG.md v160, v164)
CLUSTER_SLOTS_SHARE = {3: 117 / 132, 4: 120 / 132}


def cluster_slots(size: int, sms: int) -> int:
    """The CTAs that clusters of ``size`` (3 or 4) hold at once on ``sms`` SMs (CLUSTER_SLOTS_SHARE)."""
    return int(CLUSTER_SLOTS_SHARE[size] * sms + 1e-9)


def column_splits(multicast: bool, spec: KernelSpec, schedule: Schedule, sms: int) -> int:
    """The tile rows (COLUMN_ROWS) by which auto groups ``schedule``'s aligned splits on ``spec``'s tile into
    column clusters on ``sms`` SMs by the rule above; 0 where it does not."""
    p = schedule.problem
    if not (multicast and spec.tma and spec.tile in COLUMN_SPLIT_TILES and p.tiles_m in COLUMN_ROWS):
        return 0
    deep = p.iters_per_tile * p.tiles // schedule.grid >= PAIRED_SPLIT_MIN_ITERS
    fits = p.tiles < schedule.grid <= cluster_slots(p.tiles_m, sms)
    return p.tiles_m if deep and fits else 0


# Shapes of COLUMN_ROWS 64-row tile rows (m 129-256) whose aligned 64x128x64 splits under the rule above fill
# at least COLUMN_MIN_FILL of the SMs run them, grouped by tile column, in place of auto's pick (mostly the
# sm80 64x64x32 tile's Stream-K, or 128x128x64): the most splits of PAIRED_SPLIT_MIN_ITERS iterations or more
# whose grid fits the clusters. On selection seeds 4900-4903, 8 of 9 such shapes ran faster (1.02-1.39x, one
# 0.89x); fewer CTAs lost to auto's 128-odd (0.6-0.98x; LOG.md v165).
COLUMN_MIN_FILL = 0.5  # share of the SMs


def column_split_count(shape: GemmShape, sms: int) -> int:
    """The splits a tile of ``shape``'s 64x128x64 launch by the rule above runs on ``sms`` SMs; 0 where it does not."""
    p = Problem(shape, SM90_M64_TILE)
    if p.tiles_m not in COLUMN_ROWS:
        return 0
    most = min(p.iters_per_tile // PAIRED_SPLIT_MIN_ITERS, cluster_slots(p.tiles_m, sms) // p.tiles)
    return most if most >= 2 and p.tiles * most >= COLUMN_MIN_FILL * sms else 0


# Clusters of 2x2 CTAs on 2x2 blocks of whole tiles (issue 42): each CTA shares A with the CTA of its
# tile row and B with the CTA of its tile column (gpu/clusters.py share_words), so a 128x128x64 CTA
# reads 16 KB of L2 per MAC iteration (A 8 + B 8) against 24 with pairs and 32 alone. The CTAs 4q ..
# 4q + 3 run one 2x2 block (QUAD_ORDER); a schedule in that order runs in them. auto takes the order
# on the 128-row tiles where they run at most QUAD_MAX_ITERATIONS each: there the clusters fill the
# pipeline with half the loads a CTA. The 64-row tiles and deeper shapes did not gain (LOG.md v46)...
QUAD_TILES = MULTICAST_TILES + STRADDLE_MULTICAST_TILES
AUTO_QUAD_TILES = tuple(t for t in QUAD_TILES if t.bm == 128)
QUAD_ORDER = "quads-8"  # streamk.schedule TILE_ORDERS: blocks of 2x2 tiles in grouped order
QUAD_MAX_ITERATIONS = 11  # MAC iterations a tile (k <= 704 on the 64-deep tiles)
# ... but deeper 128x128x64 tiles gain where they run one wave of at least QUAD_WAVE_MIN_FILL of the SMs
# and an operand the clusters newly share straddles 32-byte L2 sectors: each CTA then reads at the L2's
# limit, and the clusters halve what it reads. Newly shared: A, and B where no pairs share it already.
# Not where that B's rows are whole 128-byte lines and A alone straddles: sharing such a B cost more than
# A's saved. Held out, the shapes this takes ran 1.15x (0.94-1.55x), those it leaves 0.98x (LOG.md v158).
# The same rule held on one wave of 128x192x64 tiles deeper than QUAD_MAX_ITERATIONS and of 64x128x64
# tiles of any depth (whose pairs always share B, so A's rows decide; LOG.md v161).
QUAD_WAVE_TILES = (SM90_TILE, SM90_192_TILE, SM90_M64_TILE)
QUAD_WAVE_MIN_FILL = 0.66  # share of the SMs
LINE_BYTES = 128  # an L2 line
NO_CLUSTER, PAIR_CLUSTER, QUAD_CLUSTER = (1, 1), (2, 1), (2, 2)  # tile rows x tile columns a cluster spans


def whole_tiles(schedule: Schedule) -> bool:
    """Whether every unit of ``schedule`` is a whole tile (so no tile is split and none waits)."""
    ipt = schedule.problem.iters_per_tile
    return bool(np.all(schedule.units[:, 1] == 0) and np.all(schedule.units[:, 2] == ipt))


def quads_fit(multicast: bool, spec: KernelSpec, schedule: Schedule) -> bool:
    """Whether ``schedule`` can run in 2x2 clusters on ``spec``'s main kernel: whole tiles on a
    QUAD_TILES tile with multicast on."""
    return multicast and spec.tma and spec.tile in QUAD_TILES and whole_tiles(schedule)


def auto_quads(multicast: bool, spec: KernelSpec, schedule: Schedule, sms: int, a_row_bytes: int,
               b_row_bytes: int) -> bool:
    """Whether auto runs ``schedule`` in QUAD_ORDER (so in 2x2 clusters) by the rules above: short
    128-row tiles that fit, or one wave of deeper ones on ``sms`` SMs where the operands the clusters
    newly share straddle sectors (A and B's rows: the bytes between the rows the kernel reads them by)."""
    p = schedule.problem
    if spec.tile in AUTO_QUAD_TILES and p.iters_per_tile <= QUAD_MAX_ITERATIONS:
        return quads_fit(multicast, spec, schedule)
    if not (spec.tile in QUAD_WAVE_TILES and schedule.grid == p.tiles and QUAD_WAVE_MIN_FILL * sms <= p.tiles <= sms):
        return False
    a_straddles, b_straddles = a_row_bytes % STRADDLE_BYTES != 0, b_row_bytes % STRADDLE_BYTES != 0
    b_newly_shared = not pairs_share_b(multicast, spec, schedule, b_row_bytes)
    if b_newly_shared and b_straddles:
        return quads_fit(multicast, spec, schedule)
    b_on_lines = b_newly_shared and b_row_bytes % LINE_BYTES == 0  # sharing such a B costs (rule above)
    return a_straddles and not b_on_lines and quads_fit(multicast, spec, schedule)


def pairs_share_b(multicast: bool, spec: KernelSpec, schedule: Schedule, b_row_bytes: int) -> bool:
    """Whether ``schedule`` (whole tiles, no waits) launches in pairs that share B as it stands
    (gpu/clusters.py launch_groups, B's rows ``b_row_bytes`` apart)."""
    from ...fixup import plan_fixup
    from ..clusters import launch_groups
    from ..table import build_table

    table = build_table(plan_fixup(schedule))
    return launch_groups(table, spec, False, multicast, b_row_bytes, schedule.problem.iters_per_tile) is not None


# Short GEMMs of many tiles run whole 128x256x64 tiles on one persistent CTA an SM, in QUAD_ORDER,
# where auto would run 128x128x64 or 128x256x64 and the calibrated model keeps auto's pick: the CTAs
# of a 2x2 block of tiles then run in clusters that share B in pairs (fours that share A too fit no
# grid of 132 on an H200 in one wave: bind.py), each producer loads its next tile during an
# epilogue, and a flop costs two thirds of the L2 bytes it does on paired 128x128 tiles. Where:
# PERSISTENT_QUAD_MIN_WAVES waves of 128x256 tiles or more, PERSISTENT_QUAD_ITERS MAC iterations a
# tile, a grid of whole 2x2 blocks (LOG.md v74; at 1-2 waves 0.82-0.94x, at 4-8 or 33-64 iterations
# mixed; held out on seed 4277, the 292 shapes it left ran 0.998x, noise 0.998).
PERSISTENT_QUAD_MIN_WAVES = 2
PERSISTENT_QUAD_ITERS = (9, 32)
# ... and the tiles fill PERSISTENT_QUAD_MIN_FILL of their waves' slots: 128x256 tiles leave a last
# wave's idle SMs idle twice as long as 128x128 ones (chosen after the fitting seeds; LOG.md v74).
PERSISTENT_QUAD_MIN_FILL = 0.75  # share of the waves' CTA slots


def persistent_quads_fit(shape: GemmShape, spec: KernelSpec, sms: int, multicast: bool = True,
                         low: int = PERSISTENT_QUAD_ITERS[0]) -> bool:
    """Whether ``shape`` can run on ``spec``'s tile as whole tiles on ``sms`` persistent CTAs in QUAD_ORDER
    as the rule above measured it: the sm90 128x256x64 tile with multicast on, ``low`` to PERSISTENT_QUAD_ITERS'
    most MAC iterations a tile, a wave of tiles or more on a grid of whole 2x2 blocks (no wave or fill guard)."""
    p = Problem(shape, spec.tile)
    high = PERSISTENT_QUAD_ITERS[1]
    return wide_quads_launchable(spec, sms, multicast) and p.tiles >= sms and low <= p.iters_per_tile <= high


def wide_quads_launchable(spec: KernelSpec, sms: int, multicast: bool) -> bool:
    """Whether ``spec``'s kernel can run the wide persistent launch on ``sms`` CTAs: the sm90 128x256x64
    tile with multicast on, on a grid of whole 2x2 blocks."""
    return multicast and spec.tma and spec.tile == SM90_WIDE_TILE and sms % (QUAD_CLUSTER[0] * QUAD_CLUSTER[1]) == 0


def persistent_quads(shape: GemmShape, spec: KernelSpec, sms: int, multicast: bool = True) -> bool:
    """Whether auto runs ``shape`` on ``spec``'s tile as whole tiles on ``sms`` persistent CTAs in
    QUAD_ORDER by the rule above: it fits (persistent_quads_fit), in PERSISTENT_QUAD_MIN_WAVES waves or
    more that fill PERSISTENT_QUAD_MIN_FILL of their slots."""
    tiles = Problem(shape, spec.tile).tiles
    waves = -(-tiles // sms)
    return (persistent_quads_fit(shape, spec, sms, multicast) and tiles >= PERSISTENT_QUAD_MIN_WAVES * sms
            and tiles >= PERSISTENT_QUAD_MIN_FILL * waves * sms)


# Where auto's own pick is plain data-parallel on 128x256x64 (one whole tile a CTA, more tiles than SMs)
# and the tiles are at most PERSISTENT_DP_MAX_ITERS MAC iterations deep, the same tiles run on one
# persistent CTA an SM in QUAD_ORDER: each SM runs the tiles it would have, but a CTA's next tile loads
# while its C leaves through TMA boxes (v137), where a fresh CTA's fill and its predecessor's epilogue
# ran exposed. Fresh shapes: 1.12x at <= 32 iterations, 1.05x at 33-64, 1.02x but down to 0.94x deeper
# (LOG.md v139).
PERSISTENT_DP_MAX_ITERS = 64


def persistent_in_place_of_dp(schedule: Schedule, spec: KernelSpec, sms: int, multicast: bool = True) -> bool:
    """Whether ``schedule`` is plain data-parallel on ``spec``'s 128x256x64 tile over more than ``sms``
    CTAs, on tiles of at most PERSISTENT_DP_MAX_ITERS MAC iterations, which auto runs on ``sms`` persistent
    CTAs instead (the rule above)."""
    return (wide_quads_launchable(spec, sms, multicast) and schedule.grid == schedule.problem.tiles > sms
            and schedule.problem.iters_per_tile <= PERSISTENT_DP_MAX_ITERS and whole_tiles(schedule))


# One wave of 64x128x64 tiles in place of auto's 128x128x64 launch where the 64-row tiles fit one wave
# and auto's launch runs at most M64_WAVE_MAX_SHARE as many CTAs as they number, or m is 129-192 (the
# 128-row tiles pad 64-127 rows of their 256, the 64-row ones fewer than 64 of 192): the 7-stage
# 64x128x64 ring alone on its SM then puts up to twice the SMs to work. Where auto's launch already runs
# about as many CTAs the results were mixed (LOG.md v76). And wherever m is 65-128, where two 64-row
# tiles run twice the CTAs of one 128-row tile at no more padding (LOG.md v82).
M64_WAVE_MAX_SHARE = 2 / 3


def two_or_three_m64_rows(shape: GemmShape) -> bool:
    """Whether m is 65-192: 64-row tiles then pad less than 128-row ones, or (m 65-128) run twice
    the CTAs with as little padding."""
    return SM90_M64_TILE.bm < shape.m <= SM90_TILE.bm + SM90_M64_TILE.bm


def one_wave_m64(shape: GemmShape, sms: int, auto: Schedule) -> bool:
    """Whether auto runs ``shape`` on 64x128x64 tiles, one CTA an SM, instead of ``auto`` (its
    128x128x64 launch) by the rule above."""
    m64_tiles = Problem(shape, SM90_M64_TILE).tiles
    few_ctas = auto.grid <= M64_WAVE_MAX_SHARE * m64_tiles
    return auto.tile == SM90_TILE and m64_tiles <= sms and (few_ctas or two_or_three_m64_rows(shape))


# ... but not where auto's 128x128x64 launch splits its tiles over more CTAs than the 64x128x64 launch
# runs and those tiles are M64_DEEP_ITERS MAC iterations deep or more: there the split's extra SMs outweigh
# its fixups; shallower, at more CTAs, the 64-row launch won (m 65-128, H200; LOG.md v85).
M64_DEEP_ITERS = 160  # MAC iterations of a 64x128x64 tile (k > 10,176)


def split_wider(auto: Schedule, narrow: Schedule) -> bool:
    """Whether ``auto`` (the 128x128x64 launch) runs more CTAs than ``narrow`` (the 64x128x64 launch
    one_wave_m64 would run) on tiles at least M64_DEEP_ITERS deep: auto's launch stands (rule above)."""
    return auto.grid > narrow.grid and narrow.problem.iters_per_tile >= M64_DEEP_ITERS


# ... and where m is 65-192 but the 64x128 tiles take more than a wave, one wave of 64x192x64 tiles of
# at least M64_192_MIN_ITERS MAC iterations: at m 129-192 three 64-row tiles pad fewer rows than two
# 128-row ones at about the same tile count. Shorter tiles lost (the epilogue weighs more; LOG.md v81).
M64_192_MIN_ITERS = 9


def one_wave_m64_192(shape: GemmShape, sms: int, auto: Schedule) -> bool:
    """Whether auto runs ``shape`` on 64x192x64 tiles, one CTA an SM, instead of ``auto`` (its
    128x128x64 launch) by the rule above."""
    tiles = Problem(shape, SM90_M64_192_TILE)
    return (auto.tile == SM90_TILE and two_or_three_m64_rows(shape) and Problem(shape, SM90_M64_TILE).tiles > sms
            and tiles.tiles <= sms and tiles.iters_per_tile >= M64_192_MIN_ITERS)


# ... and where one_wave_m64 takes the 64-row tiles but n is 129-192 and B's rows are whole 32-byte
# sectors, one 64x192 column of tiles in place of two 128-wide ones that pad 64-127 of their 256 columns.
# Where B's rows straddle sectors the 64x128x64 launch's B-sharing pairs won (LOG.md v108; held out on
# tall shapes of m 2,700-4,200).
def one_column_192(shape: GemmShape, sms: int, auto: Schedule, b_row_bytes: int) -> bool:
    """Whether auto runs ``shape`` on 64x192x64 tiles instead of the 64x128x64 ones one_wave_m64 takes
    for ``auto`` (its 128x128x64 launch), B's rows ``b_row_bytes`` apart, by the rule above."""
    return (SM90_M64_TILE.bn < shape.n <= SM90_M64_192_TILE.bn and b_row_bytes % STRADDLE_BYTES == 0
            and one_wave_m64(shape, sms, auto) and Problem(shape, SM90_M64_192_TILE).tiles <= sms)


# auto's whole 128x128x64 tiles run row-major and unclustered (no B-sharing pairs, no 2x2 blocks) where
# at most PLAIN_MAX_WAVE of the SMs run them and neither A's nor B's rows straddle 32-byte L2 sectors
# (row bytes a multiple of STRADDLE_BYTES). A cluster's CTAs land on one TPC (LOG.md v45), where a CTA's
# mainloop ran slower per iteration than alone on one, as a plain launch this short mostly puts it; on
# aligned rows multicast saves no sector request (v71). Straddling rows at this fill gained from the
# clusters; fuller aligned launches were mixed (LOG.md v80; 0.90-1.07x).
PLAIN_TILES = (SM90_TILE,)
PLAIN_MAX_WAVE = 0.6  # share of the SMs


def plain_partial_wave(multicast: bool, spec: KernelSpec, schedule: Schedule, sms: int, a_row_bytes: int,
                       b_row_bytes: int) -> bool:
    """Whether auto runs ``schedule`` row-major without clusters by the rule above: whole tiles on a
    PLAIN_TILES tile, a grid of at most PLAIN_MAX_WAVE * ``sms``, and rows of A and B (the bytes
    between the rows the kernel reads them by) that are whole sectors; only where ``multicast`` would
    cluster the launch at all."""
    return (multicast and spec.tma and spec.tile in PLAIN_TILES and schedule.grid <= PLAIN_MAX_WAVE * sms
            and a_row_bytes % STRADDLE_BYTES == 0 and b_row_bytes % STRADDLE_BYTES == 0 and whole_tiles(schedule))


# Clusters of one column of COLUMN_ROWS tiles: a schedule that splits tiles and whose first CTAs run the
# same units on that many consecutive tile rows of one column (sched.paired grouped by rows) launches in
# clusters of that many CTAs, each sharing B with all the others (gpu/clusters.py launch_groups).
COLUMN_ROWS = (4, 3)


def column_rows(schedule: Schedule) -> int:
    """The tile rows a cluster of ``schedule``'s launch spans (COLUMN_ROWS) where it splits tiles and its
    first CTAs are twins on that many consecutive tile rows of one column; 0 otherwise."""
    if whole_tiles(schedule):
        return 0
    offsets, units = schedule.cta_offsets, schedule.units
    p = schedule.problem
    for rows in COLUMN_ROWS:
        if schedule.grid < rows or np.any(np.diff(offsets[:rows + 1]) != offsets[1] - offsets[0]):
            continue
        first = [units[offsets[i]:offsets[i + 1]] for i in range(rows)]
        tm, tn = tile_coordinates(schedule.tile_order, p.tiles_m, p.tiles_n, np.stack([u[:, 0] for u in first]))
        if all(np.array_equal(u[:, 1:], first[0][:, 1:]) for u in first) and np.all(tn == tn[0]) and \
                np.all(tm == tm[0] + np.arange(rows)[:, None]) and np.all(tm[-1] < p.tiles_m):
            return rows
    return 0


def cluster_shape(multicast: bool, cluster_2d: bool, spec: KernelSpec, schedule: Schedule) -> tuple[int, int]:
    """The clusters a launch of ``spec``'s main kernel asks for, as (tile rows, tile columns):
    NO_CLUSTER where multicast is off or the kernel has no TMA; QUAD_CLUSTER where the schedule runs
    in QUAD_ORDER or ``cluster_2d`` (bench +mc2d) asks for it, and quads_fit; (rows, 1) where its CTAs
    run in groups of a column's tile rows (column_rows); else PAIR_CLUSTER (pairs along m where the
    table has them and use_multicast holds: clusters.launch_groups)."""
    if not (multicast and spec.tma):
        return NO_CLUSTER
    if (cluster_2d or schedule.tile_order == QUAD_ORDER) and quads_fit(multicast, spec, schedule):
        return QUAD_CLUSTER
    rows = column_rows(schedule)
    return (rows, 1) if rows else PAIR_CLUSTER


REDUCE_MAX_VECS = 4  # fixup.cuh: accumulator vectors per thread of one reduce block


def reduce_slices(items: int, spec: KernelSpec, threads: int, sms: int) -> int:
    """Blocks per split tile of the separate-reduce pass: enough for two blocks per SM where the
    split tiles are few (one block per tile read its slots at ~1.3 us per 64 KB, LOG.md v10), a
    power of two dividing the tile's 16-byte vectors per thread, with at most REDUCE_MAX_VECS of
    them per block (fixup.cuh reduce_slice)."""
    acc_bytes = ITEMSIZE[spec.out_dtype]
    vecs = spec.tile.bm * spec.tile.bn * acc_bytes // (16 * threads)
    slices = max(1, vecs // REDUCE_MAX_VECS)
    while slices < vecs and items * slices < 2 * sms:
        slices *= 2
    return slices

