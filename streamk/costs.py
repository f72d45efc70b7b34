"""The appendix's cost model: a per CTA, b per partial stored, c per MAC iteration, d per peer.

Shared by the ``auto`` grid selection and the simulator, so the grid the model picks and the
time the simulator reports speak the same units.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Sequence

import numpy as np

from .errors import ScheduleError
from .shapes import Problem

# The most any cost term may be: a simulated time sums fewer than 2**96 priced steps (iterations,
# units, reads; sides < 2**31), so it stays below 1e130, far from float overflow (1.8e308);
# generous, as the calibration fit's trial steps price terms at up to ~1e11.
MAX_COST = 1e100


def is_cost(value: object) -> bool:
    """Whether ``value`` is a number a cost term can be: finite, >= 0 and <= MAX_COST."""
    return isinstance(value, (int, float)) and not isinstance(value, bool) and 0 <= value <= MAX_COST


@dataclass(frozen=True, slots=True)
class Costs:
    """Workload constants of the appendix model, in any consistent time unit."""

    a: float  # once per CTA: launch latency, compulsory misses, writing the output tile
    b: float  # storing a partial tile to the workspace (only when a tile is split)
    c: float  # one MAC-loop iteration
    d: float  # reading and accumulating one peer's partial tile

    def __post_init__(self) -> None:
        values = (self.a, self.b, self.c, self.d)
        if not all(is_cost(v) for v in values):
            raise ScheduleError(f"costs must be finite and >= 0, at most {MAX_COST:g} each "
                                f"(got a,b,c,d = {values})")
        if self.c <= 0:
            raise ScheduleError(f"cost c per MAC iteration must be > 0 (got {self.c})")

    @classmethod
    def parse(cls, text: str) -> Costs:
        try:
            a, b, c, d = (float(v) for v in text.split(","))
        except ValueError:
            raise ScheduleError(f"costs must be four numbers A,B,C,D such as 0,0,1,0 (got {text!r})") from None
        return cls(a, b, c, d)

    def __str__(self) -> str:
        return ",".join(f"{v:g}" for v in (self.a, self.b, self.c, self.d))


IDEAL = Costs(0.0, 0.0, 1.0, 0.0)
"""The ideal model of the paper's figures: only MAC iterations cost time."""

# Default constants of the `auto` grid selection, in units of one MAC iteration (c = 1).
# With 128x128x32 tiles on a 108-SM A100 they reproduce the appendix's Figure 8 choices
# (g = 108, 64, 8) exactly when 7 <= d < 10 and 13 <= b + d < 123 (a cancels out): see
# docs/auto-model.md, which derives that region. d = 8 sits near the geometric middle of
# [7, 10); b = 32 puts b + d = 40 at the geometric middle of [13, 123]; a = b because writing
# the output tile costs what storing a partial tile does.
AUTO_COSTS = Costs(a=32.0, b=32.0, c=1.0, d=8.0)


def model_times(total_iters, iters_per_tile, grid, costs: Costs) -> np.ndarray:
    """time_CTA(g) of the appendix, broadcast over arrays of problems and candidate grids."""
    return _times(total_iters, iters_per_tile, grid, costs.a, costs.b, costs.c, costs.d)


def _times(total_iters, iters_per_tile, grid, a, b, c, d) -> np.ndarray:
    """model_times with the constants as numbers or arrays that broadcast (one row per model)."""
    g = np.asarray(grid, dtype=np.int64)
    iters_per_cta = -(-np.asarray(total_iters, dtype=np.int64) // g)
    peers = -(-np.asarray(iters_per_tile, dtype=np.int64) // iters_per_cta)
    return np.asarray(a + b * (peers > 1) + c * iters_per_cta + d * (peers - 1), dtype=float)


def best_grids(total_iters, iters_per_tile, max_grid: int, models: Sequence[Costs] = (AUTO_COSTS,)
               ) -> tuple[np.ndarray, np.ndarray]:
    """Per cost model (rows) and problem (columns), the grid in [1, min(max_grid, total
    iterations)] of least modeled time (ties: the smaller grid) and that time, over arrays of
    total iterations and iterations per tile. The models share one evaluation (auto weighs two)."""
    total = np.asarray(total_iters, dtype=np.int64).reshape(-1, 1)
    g = np.arange(1, max_grid + 1)
    constants = _constants(tuple(models))
    # a grid beyond the total iterations times as that total: argmin never picks it over the total
    times = _times(total, np.asarray(iters_per_tile).reshape(-1, 1), np.minimum(g, total), *constants)
    best = times.argmin(axis=2)  # the first (smallest g) on ties
    return g[best], times.min(axis=2)


@functools.lru_cache(maxsize=64)
def _constants(models: tuple[Costs, ...]) -> np.ndarray:
    """a, b, c, d of each model as arrays (4, models, 1, 1) that broadcast over problems and grids."""
    constants = np.array([[c.a, c.b, c.c, c.d] for c in models]).T.reshape(4, -1, 1, 1)
    constants.setflags(write=False)
    return constants


def model_grids(total_iters, iters_per_tile, max_grid: int, costs: Costs = AUTO_COSTS) -> np.ndarray:
    """Per problem, the grid of least modeled time (``best_grids`` of one model)."""
    return best_grids(total_iters, iters_per_tile, max_grid, (costs,))[0][0]


def model_time(problem: Problem, grid: np.ndarray | int, costs: Costs) -> np.ndarray:
    """time_CTA(g) of the appendix for one problem, vectorized over candidate grids."""
    return model_times(problem.total_iters, problem.iters_per_tile, grid, costs)


def model_grid(problem: Problem, max_grid: int, costs: Costs = AUTO_COSTS) -> int:
    """The grid in [1, min(max_grid, total iterations)] with the least modeled time; ties -> smaller."""
    return int(model_grids(problem.total_iters, problem.iters_per_tile, max_grid, costs)[0])


def best_splits(tiles, iters_per_tile, sms: int, costs: Costs, busy_share=None) -> np.ndarray:
    """Per shape of fewer tiles than ``sms``, the s in [1, min(sms // tiles, iterations per tile)]
    of least modeled time for every tile split s ways at the same k offsets (fixed-split's ranges
    on s * tiles CTAs: ceil(ipt / s) iterations a CTA, s - 1 peers a tile); ties: the smaller s.
    Given ``busy_share`` (one share, or one per shape), a grid of more than that share of ``sms``
    CTAs runs each MAC iteration slower in proportion to its CTAs (their reads share the L2's
    bandwidth)."""
    tiles = np.asarray(tiles, dtype=np.int64).reshape(-1, 1)
    ipt = np.asarray(iters_per_tile, dtype=np.int64).reshape(-1, 1)
    s = np.arange(1, sms + 1)
    allowed = (s * tiles <= sms) & (s <= ipt)
    grid = np.minimum(s * tiles, tiles * ipt)
    if busy_share is not None:
        busy_share = np.asarray(busy_share, dtype=float).reshape(-1, 1)
    times = _times(tiles * ipt, ipt, grid, costs.a, costs.b, busy_price(costs.c, grid, sms, busy_share), costs.d)
    return s[np.where(allowed, times, np.inf).argmin(axis=1)]


def busy_price(c: float, busy, sms: int, busy_share: float | None):
    """A MAC iteration's price on ``busy`` CTAs: ``c``, or given ``busy_share``, slower in
    proportion to the CTAs beyond that share of ``sms`` (their reads share the L2's bandwidth)."""
    return c if busy_share is None else c * np.maximum(1.0, np.asarray(busy) / (busy_share * sms))


def two_tile_beats_dp(tiles, iters_per_tile, slots: int, costs: Costs = AUTO_COSTS,
                      busy_share: float | None = None):
    """Whether the model says two-tile SK + DP beats data-parallel (vectorized over shapes).

    With t >= slots tiles, w = t // slots full waves and t % slots = r > 0 left over, DP takes
    w + 1 waves of (a + c*ipt). The hybrid replaces the last full wave and the partial one by
    one SK wave of a + b + d + c*ceil((r + slots)*ipt / slots) (each SK CTA stores one partial
    and its owner reads one), then w - 1 DP waves. The difference reduces to
    b + d + c*ceil(r*ipt/slots) < a + c*ipt: Stream-K pays off when the partial wave's share
    of iterations plus one fixup costs less than a whole DP wave.

    Given ``busy_share`` (the calibrated sm90 constants), iterations are priced by their busy CTAs
    (``busy_price``): the full waves' dearer, DP's partial wave of r CTAs cheaper; and a is left
    out (counted, it took the hybrid where it ran 1.04x slower than DP; LOG.md v29).
    """
    tiles = np.asarray(tiles, dtype=np.int64)
    ipt = np.asarray(iters_per_tile, dtype=np.int64)
    left = tiles % slots
    share = -(-(left * ipt) // slots)
    if busy_share is None:
        wins = costs.b + costs.d + costs.c * share < costs.a + costs.c * ipt
    else:
        full, partial = (busy_price(costs.c, g, slots, busy_share) for g in (slots, left))
        wins = costs.b + costs.d + full * share < partial * ipt
    return (tiles >= slots) & (left > 0) & wins


def sk_beats_dp_resident(tiles, iters_per_tile, sms: int, costs: Costs, max_waves: int):
    """Whether the model says basic Stream-K over every resident slot beats data-parallel where
    several CTAs share each SM (vectorized over shapes): DP's busiest SM runs w = ceil(t / sms)
    tiles, w * ipt iterations, where Stream-K spreads t * ipt over the SMs evenly and pays one
    fixup (a partial stored, a peer read), so it wins when c * (w * ipt - ceil(t * ipt / sms))
    > b + d; only for tiles >= sms (fewer: auto's grid search) and w <= ``max_waves``."""
    tiles = np.asarray(tiles, dtype=np.int64)
    ipt = np.asarray(iters_per_tile, dtype=np.int64)
    waves = -(-tiles // sms)
    idle = waves * ipt - (-(-(tiles * ipt) // sms))
    return (tiles >= sms) & (waves <= max_waves) & (costs.c * idle > costs.b + costs.d)
