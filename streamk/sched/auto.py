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
Where several CTAs are resident per SM the partial
last wave needs no Stream-K: its tiles share SMs with fewer others and run faster (a lone tile
gets the whole SM), so auto stays data-parallel there.

Below a tile per SM, given ``reduce_costs`` (the same model's constants for the separate-reduce
fixup, whose pass sums a split tile's slots on many SMs at once), auto also plans that grid and
takes it where the model says it is faster than owner-waits: the owner reads its peers one after
another (``d`` per peer), the reduce pass costs one more launch and every CTA's partial store
(larger ``b``) but little per peer, so it wins on few tiles split many ways (GPU measurements in
docs/auto-model.md).
"""

from __future__ import annotations

from ..costs import AUTO_COSTS, Costs, model_grid, model_time, two_tile_beats_dp
from ..schedule import Schedule
from ..shapes import GemmShape, Machine, Problem, TileShape
from .hybrid import hybrid
from .ranges import schedule_from_ranges, streamk_ranges, tile_ranges
from .registry import register


@register("auto")
def auto(shape: GemmShape, tile: TileShape, machine: Machine, *, model_costs: Costs | None = None,
         reduce_costs: Costs | None = None, sk_backward: bool = False) -> Schedule:
    p = Problem(shape, tile)
    costs = model_costs or AUTO_COSTS
    if p.tiles >= machine.sms:
        if machine.ctas_per_sm == 1 and two_tile_beats_dp(p.tiles, p.iters_per_tile, machine.sms, costs):
            s = hybrid("auto", shape, tile, machine, sk_first=True)
            return s.walked_backward().with_fixup("turnstile") if sk_backward else s
        return schedule_from_ranges("auto", shape, tile, machine, *tile_ranges(0, p.tiles, p.iters_per_tile))
    grid = model_grid(p, machine.sms, costs)
    if reduce_costs is not None:
        reduce_grid = model_grid(p, machine.sms, reduce_costs)
        if model_time(p, reduce_grid, reduce_costs) < model_time(p, grid, costs):
            ranges = streamk_ranges(0, p.total_iters, reduce_grid)
            return schedule_from_ranges("auto", shape, tile, machine, *ranges).with_fixup("separate-reduce")
    return schedule_from_ranges("auto", shape, tile, machine, *streamk_ranges(0, p.total_iters, grid))
