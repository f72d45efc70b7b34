"""``auto``: the appendix's analytical model picks the decomposition and its grid.

For fewer tiles than slots (the strong-scaling regime of the appendix's Figure 8) the model's
grid g in [1, slots] gives a basic Stream-K schedule (g = t is data-parallel). With at least a
wave of tiles the model's grid is always g = slots (no CTA can get fewer iterations than a
tile's worth, so peers = 1 for every candidate), which we run as the paper's evaluated kernel,
two-tile SK + DP (Stream-K's skew limited to one wave) -- but only where the same model says
its SK wave beats the two DP waves it replaces (``costs.two_tile_beats_dp``); else plain DP.
"""

from __future__ import annotations

from ..costs import AUTO_COSTS, Costs, model_grid, two_tile_beats_dp
from ..schedule import Schedule
from ..shapes import GemmShape, Machine, Problem, TileShape
from .hybrid import hybrid
from .ranges import schedule_from_ranges, streamk_ranges, tile_ranges
from .registry import register


@register("auto")
def auto(shape: GemmShape, tile: TileShape, machine: Machine, *, model_costs: Costs | None = None) -> Schedule:
    p = Problem(shape, tile)
    costs = model_costs or AUTO_COSTS
    if p.tiles >= machine.slots:
        if two_tile_beats_dp(p.tiles, p.iters_per_tile, machine.slots, costs):
            return hybrid("auto", shape, tile, machine, sk_first=True)
        return schedule_from_ranges("auto", shape, tile, machine, *tile_ranges(0, p.tiles, p.iters_per_tile))
    grid = model_grid(p, machine.slots, costs)
    return schedule_from_ranges("auto", shape, tile, machine, *streamk_ranges(0, p.total_iters, grid))
