"""Hypothesis strategies for shapes, tiles, machines and schedules; small by default so CI stays fast.

Each draws from keyword-only bounds and shrinks towards the smallest problem (1x1x1 on one SM).
"""

from __future__ import annotations

from hypothesis import strategies as st

from streamk import Costs, GemmShape, Machine, Problem, Schedule, TileShape, make_schedule
from streamk.sched import names

BUILT_IN = ["data-parallel", "fixed-split", "stream-k", "dp-one-tile-sk", "two-tile-sk-dp", "auto"]


def _side(max_value: int) -> st.SearchStrategy[int]:
    if max_value < 1:
        raise ValueError(f"max side must be >= 1 (got {max_value})")
    return st.integers(1, max_value)


def gemm_shapes(*, max_m: int = 600, max_n: int = 600, max_k: int = 600) -> st.SearchStrategy[GemmShape]:
    return st.builds(GemmShape, _side(max_m), _side(max_n), _side(max_k))


def tile_shapes(*, max_bm: int = 128, max_bn: int = 128, max_bk: int = 64) -> st.SearchStrategy[TileShape]:
    return st.builds(TileShape, _side(max_bm), _side(max_bn), _side(max_bk))


def machines(*, max_sms: int = 16, max_ctas_per_sm: int = 3) -> st.SearchStrategy[Machine]:
    return st.builds(Machine, _side(max_sms), _side(max_ctas_per_sm))


def problems(*, max_tiles: int = 48, max_iters: int = 40) -> st.SearchStrategy[tuple[GemmShape, TileShape]]:
    """(shape, tile) pairs with at most ``max_tiles`` tiles and ``max_iters`` iterations per tile."""

    def build(tm: int, tn: int, it: int, tile: TileShape, rm: int, rn: int, rk: int) -> tuple[GemmShape, TileShape]:
        # the last tile in each dimension may be partial: side = (count - 1) * block + remainder
        shape = GemmShape((tm - 1) * tile.bm + 1 + rm % tile.bm, (tn - 1) * tile.bn + 1 + rn % tile.bn,
                          (it - 1) * tile.bk + 1 + rk % tile.bk)
        return shape, tile

    side = max(1, int(max_tiles ** 0.5))
    return st.builds(build, st.integers(1, side), st.integers(1, side), st.integers(1, max_iters),
                     tile_shapes(max_bm=64, max_bn=64, max_bk=16),
                     st.integers(0, 10**6), st.integers(0, 10**6), st.integers(0, 10**6)).filter(
        lambda p: Problem(*p).tiles <= max_tiles)


@st.composite
def schedules(draw, *, decompositions: list[str] | None = None, max_tiles: int = 48,
              max_iters: int = 40, weigh_reduce: bool = False, persistent_hybrid: bool = True) -> Schedule:
    """A schedule of a built-in decomposition with its options drawn in range; ``weigh_reduce``:
    auto may also get separate-reduce constants (and then pick that fixup, not owner-waits);
    ``persistent_hybrid``: dp-one-tile-sk may get a ``grid`` (its waves on persistent CTAs)."""
    shape, tile = draw(problems(max_tiles=max_tiles, max_iters=max_iters))
    machine = draw(machines())
    name = draw(st.sampled_from(decompositions or BUILT_IN))
    p = Problem(shape, tile)
    options = {}
    if name == "fixed-split":
        options["splits"] = draw(st.integers(1, p.iters_per_tile))
    elif name == "stream-k":
        options["grid"] = draw(st.integers(1, min(p.total_iters, 3 * machine.slots)))
    elif name == "data-parallel" and draw(st.booleans()):  # persistent: CTAs hold tiles c, c+grid, ...
        options["grid"] = draw(st.integers(1, p.tiles))
    elif name == "dp-one-tile-sk" and persistent_hybrid and draw(st.booleans()):  # persistent DP waves, then the SK share
        options["grid"] = draw(st.integers(1, min(p.total_iters, 3 * machine.slots)))
    elif name == "auto":
        if draw(st.booleans()):  # its constants, and separate-reduce weighed too
            options["model_costs"] = draw(costs())
            if weigh_reduce and draw(st.booleans()):
                options["reduce_costs"] = draw(costs())
        if draw(st.booleans()):  # the GPU backend's choice: SK CTAs walk backwards under turnstile
            options["sk_backward"] = True
        if draw(st.booleans()):  # and its DP picks on persistent CTAs (sm90 128x128x64)
            options["persistent_upto"] = draw(st.integers(1, 64))
        if draw(st.booleans()):  # below a tile per SM, tiles split at aligned k offsets (the sm90 tiles)
            options["split_costs"] = draw(costs())
    return make_schedule(name, shape, tile, machine, **options)


@st.composite
def costs(draw) -> Costs:
    """Appendix-model constants (a, b, d >= 0, c > 0) in a range that moves auto's choices."""
    cost = st.floats(0.0, 64.0, allow_nan=False)
    return Costs(draw(cost), draw(cost), draw(st.floats(0.25, 4.0)), draw(cost))


def all_decompositions() -> list[str]:
    return names()
