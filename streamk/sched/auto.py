"""``auto``: the appendix's analytical model picks the Stream-K grid.

For fewer tiles than slots (the strong-scaling regime of the appendix's Figure 8) the model's
grid g in [1, slots] gives a basic Stream-K schedule (g = t is data-parallel). With at least a
wave of tiles the model always picks g = slots (no CTA can get fewer iterations than a tile's
worth there, so peers = 1 for every candidate); we then run that grid as the paper's evaluated
kernel, two-tile SK + DP, which limits Stream-K's tile-processing skew to one wave.
"""

from __future__ import annotations

from ..costs import AUTO_COSTS, Costs, model_grid
from ..schedule import Schedule
from ..shapes import GemmShape, Machine, Problem, TileShape
from .hybrid import hybrid
from .ranges import schedule_from_ranges, streamk_ranges
from .registry import register


@register("auto")
def auto(shape: GemmShape, tile: TileShape, machine: Machine, *, model_costs: Costs | None = None) -> Schedule:
    p = Problem(shape, tile)
    if p.tiles >= machine.slots:
        return hybrid("auto", shape, tile, machine, sk_first=True)
    grid = model_grid(p, machine.slots, model_costs or AUTO_COSTS)
    return schedule_from_ranges("auto", shape, tile, machine, *streamk_ranges(0, p.total_iters, grid))
