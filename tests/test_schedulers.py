"""The paper's decompositions: worked examples, balance, hybrid structure, auto's grid, the registry."""

from dataclasses import replace

import numpy as np
import pytest

from streamk import (AUTO_COSTS, GemmShape, Machine, Problem, Schedule, ScheduleError, TileShape,
                     make_schedule, register)
from streamk.costs import Costs, best_splits, model_grid
from streamk.sched import accepted_options, names

PAPER_4SM = Machine(4)


def build(name, shape, tile, machine=PAPER_4SM, **options):
    return make_schedule(name, GemmShape.parse(shape), TileShape.parse(tile), machine, **options)


def test_streamk_worked_example_gives_72_iterations_to_each_of_4_ctas():
    s = build("stream-k", "384x384x128", "128x128x4", grid=4)
    assert s.iters_per_cta.tolist() == [72, 72, 72, 72]
    assert [u[:3] for u in s.ctas[1]] == [(2, 8, 32), (3, 0, 32), (4, 0, 16)]


def test_data_parallel_is_one_whole_tile_per_cta():
    s = build("data-parallel", "384x384x128", "128x64x128")
    assert s.grid == 18
    assert s.units.tolist() == [[t, 0, 1] for t in range(18)]


def test_fixed_split_puts_a_tiles_splits_in_adjacent_ctas_within_one():
    s = build("fixed-split", "384x384x128", "128x128x4", splits=3)  # 32 iterations -> 11, 11, 10
    assert s.grid == 27
    assert s.units[:3].tolist() == [[0, 0, 11], [0, 11, 22], [0, 22, 32]]
    assert s.units[3:6, 0].tolist() == [1, 1, 1]


def test_dp_one_tile_sk_shares_the_leftover_tile_8_iterations_each():
    s = build("dp-one-tile-sk", "896x384x128", "128x128x4")  # 21 tiles, 4 SMs: 5 waves + 1 tile
    iters = s.iters_per_cta.tolist()
    assert iters == [32] * 20 + [8] * 4
    assert s.units[:20].tolist() == [[t, 0, 32] for t in range(20)]
    assert s.units[20:].tolist() == [[20, 0, 8], [20, 8, 16], [20, 16, 24], [20, 24, 32]]


def test_two_tile_sk_dp_gives_40_iterations_to_each_sk_cta_then_dp_waves():
    s = build("two-tile-sk-dp", "896x384x128", "128x128x4")  # one DP wave fewer: 5 tiles over 4 CTAs
    assert s.iters_per_cta.tolist() == [40] * 4 + [32] * 16
    assert s.units[s.cta_offsets[4]:].tolist() == [[t, 0, 32] for t in range(5, 21)]


@pytest.mark.parametrize("shape, grid", [("256x3584x8192", 108), ("1024x1024x1024", 64),
                                         ("128x128x16384", 8)])
def test_auto_reproduces_the_appendix_figure_8_grids(shape, grid):
    s = build("auto", shape, "128x128x32", Machine(108))
    assert s.grid == grid
    iters = s.iters_per_cta
    assert iters.max() - iters.min() <= 1


def test_auto_default_constants_sit_inside_the_region_that_reproduces_figure_8():
    # The region (c = 1): 7 <= d < 10 and 13 <= b + d < 123; a cancels out. See docs/auto-model.md.
    b, c, d = AUTO_COSTS.b, AUTO_COSTS.c, AUTO_COSTS.d
    assert 7 <= d / c < 10 and 13 <= (b + d) / c < 123
    problem = Problem(GemmShape(128, 128, 16384), TileShape(128, 128, 32))
    assert model_grid(problem, 108, AUTO_COSTS) == 8
    assert model_grid(problem, 108, replace(AUTO_COSTS, d=10.5)) == 7  # outside the region the choice moves


def test_auto_with_a_full_wave_of_tiles_is_the_two_tile_hybrid():
    s = build("auto", "896x384x128", "128x128x4")
    assert np.array_equal(s.units, build("two-tile-sk-dp", "896x384x128", "128x128x4").units)


def test_auto_walks_its_stream_k_ctas_backwards_under_turnstile_when_asked():
    s = build("auto", "896x384x128", "128x128x4", sk_backward=True)  # 21 tiles: 5 over the 4 SK CTAs
    forward = build("two-tile-sk-dp", "896x384x128", "128x128x4")
    assert np.array_equal(s.units, forward.walked_backward().units) and s.fixup == "turnstile"
    assert [u.k_begin for u in s.ctas[1]][0] == 0  # each SK CTA starts a tile's head
    assert build("auto", "256x128x128", "128x128x4", sk_backward=True).fixup == "owner-waits"  # < a wave: as before


@pytest.mark.parametrize("name, options, message", [
    ("stream-k", dict(grid=289), "--grid must be between 1 and the 288 MAC iterations"),
    ("fixed-split", dict(splits=33), "--splits must be between 1 and the 32 iterations per tile"),
    ("data-parallel", dict(splits=4), "data-parallel does not take --splits"),
    ("data-parallel", dict(grid=0), "--grid must be at least 1"),
    ("nope", {}, "unknown decomposition 'nope'"),
])
def test_bad_options_are_clear_errors(name, options, message):
    with pytest.raises(ScheduleError, match=message):
        build(name, "384x384x128", "128x128x4", **options)


def test_streamk_default_grid_is_every_slot_but_never_more_than_the_iterations():
    assert build("stream-k", "384x384x128", "128x128x4", Machine(4, 2)).grid == 8
    assert build("stream-k", "128x128x8", "128x128x4", Machine(108)).grid == 2


def test_builtin_names_and_options_are_the_cli_contract():
    assert names()[:6] == ["data-parallel", "fixed-split", "stream-k", "dp-one-tile-sk", "two-tile-sk-dp", "auto"]
    assert accepted_options("stream-k") == ["grid", "pair_rows"]
    assert accepted_options("fixed-split") == ["splits"]


def test_a_registered_user_scheduler_runs_like_a_builtin_one():
    @register("test-reverse-dp")
    def reverse_dp(shape, tile, machine):
        p = Problem(shape, tile)
        return Schedule.from_ctas("test-reverse-dp", shape, tile,
                                  [[(t, 0, p.iters_per_tile)] for t in reversed(range(p.tiles))], machine=machine)

    s = build("test-reverse-dp", "384x384x128", "128x128x4", fixup="turnstile")
    assert s.units[:, 0].tolist() == list(range(8, -1, -1))
    assert s.fixup == "turnstile"
    assert "test-reverse-dp" in names()


def test_registering_a_name_twice_is_refused():
    with pytest.raises(ScheduleError, match="already registered"):
        register("stream-k")(lambda shape, tile, machine: None)


def test_auto_keeps_data_parallel_where_the_model_says_sk_costs_more_than_a_wave():
    # 21 tiles on 4 SMs, 4 iterations per tile: one SK wave (b + d + c*1 = 41) costs more than
    # the DP wave it saves (a + c*4 = 36) under the default constants, so auto stays DP.
    s = build("auto", "896x384x128", "128x128x32")
    assert s.grid == 21 and (s.iters_per_cta == 4).all()
    cheap_fixup = AUTO_COSTS.__class__(32, 1, 1, 1)
    assert build("auto", "896x384x128", "128x128x32", model_costs=cheap_fixup).grid == 4 + 16


def test_two_tile_beats_dp_is_the_difference_of_modeled_waves():
    from streamk.costs import two_tile_beats_dp
    tiles, ipt = np.array([21, 21, 20, 3]), np.array([32, 4, 32, 32])
    assert two_tile_beats_dp(tiles, ipt, 4).tolist() == [True, False, False, False]  # no leftover; < a wave


def test_persistent_data_parallel_deals_tiles_round_robin():
    from streamk.sched import make_schedule
    from streamk.shapes import GemmShape, Machine, TileShape

    s = make_schedule("data-parallel", GemmShape(1000, 700, 300), TileShape(128, 128, 32), Machine(4, 1), grid=4)
    assert s.grid == 4 and s.problem.tiles == 48
    for cta in range(4):
        rows = s.units[s.cta_offsets[cta]:s.cta_offsets[cta + 1]]
        assert rows[:, 0].tolist() == list(range(cta, 48, 4))
        assert (rows[:, 1] == 0).all() and (rows[:, 2] == s.problem.iters_per_tile).all()
    assert make_schedule("data-parallel", GemmShape(1000, 700, 300), TileShape(128, 128, 32), Machine(4, 1),
                         grid=100).grid == 48  # a grid of at least the tile count is plain DP


def test_auto_plans_stream_k_over_sms_not_resident_slots():
    # Two resident CTAs per SM share its MAC throughput: below a tile per SM auto's Stream-K grid is
    # at most one CTA per SM (benchmarks/LOG.md v10); past SK_MAX_WAVES SM-waves it stays data-parallel.
    two_per_sm = Machine(4, 2)
    s = build("auto", "256x256x4096", "128x128x32", two_per_sm)  # 4 tiles of 128 iterations
    assert s.grid == build("auto", "256x256x4096", "128x128x32", Machine(4)).grid <= 4
    s = build("auto", "896x384x128", "128x128x4", two_per_sm)  # 21 tiles: 5 per SM
    assert s.grid == 21 and (s.iters_per_cta == 32).all()
    assert build("auto", "896x384x128", "128x128x4", Machine(4)).grid != 21  # one per SM: the hybrid


def test_auto_runs_stream_k_on_every_resident_slot_where_dp_leaves_the_busiest_sm_idle_longer_than_a_fixup():
    from streamk.costs import sk_beats_dp_resident
    from streamk.sched.auto import SK_MAX_WAVES

    two_per_sm = Machine(4, 2)
    # 5 tiles of 160 iterations on 4 SMs: DP's busiest SM runs 2 tiles (320 iterations), Stream-K
    # 200 each plus one fixup (b + d = 40): Stream-K on all 8 slots, walked backwards under turnstile
    s = build("auto", "640x128x5120", "128x128x32", two_per_sm, sk_backward=True)
    assert s.grid == 8 and s.fixup == "turnstile" and s.iters_per_cta.sum() == 800
    assert build("auto", "640x128x5120", "128x128x32", two_per_sm).fixup == "owner-waits"  # forwards by default
    assert build("auto", "640x128x128", "128x128x32", two_per_sm).grid == 5  # 4 iterations a tile: 8 - 5 < 40: DP
    assert build("auto", "1664x128x5120", "128x128x32", two_per_sm).grid == 13  # 4 SM-waves: DP
    tiles, ipt = np.array([5, 5, 13, 12, 3]), np.array([160, 4, 160, 160, 160])
    assert sk_beats_dp_resident(tiles, ipt, 4, AUTO_COSTS, SK_MAX_WAVES).tolist() == [True, False, False, False, False]


def test_auto_runs_its_data_parallel_picks_on_persistent_ctas_up_to_the_given_depth():
    # 21 tiles of 8 iterations on 4 SMs (one CTA each): the model picks plain DP; with
    # persistent_upto >= 8 the same tiles run on 4 CTAs, CTA c holding tiles c, c + 4, ...
    costs = Costs(32, 1000, 1, 8)  # a fixup too dear for any Stream-K: auto's pick is DP
    dp = build("auto", "896x384x256", "128x128x32", model_costs=costs)
    assert dp.grid == 21
    s = build("auto", "896x384x256", "128x128x32", model_costs=costs, persistent_upto=8)
    assert s.decomposition == "auto" and s.grid == 4 and s.iters_per_cta.tolist() == [48, 40, 40, 40]
    assert [u.tile for u in s.ctas[1]] == [1, 5, 9, 13, 17]
    assert sorted(s.units[:, 0].tolist()) == list(range(21)) and (s.units[:, 1:] == [0, 8]).all()
    assert build("auto", "896x384x256", "128x128x32", model_costs=costs, persistent_upto=7).grid == 21  # deeper
    assert build("auto", "384x128x256", "128x128x32", model_costs=costs, persistent_upto=8).grid == 3  # < a tile per SM
    hybrid = build("auto", "896x384x1024", "128x128x32", persistent_upto=32)  # the paper's constants: SK + DP
    assert hybrid.grid not in (4, 21) and hybrid == build("auto", "896x384x1024", "128x128x32")


def test_auto_weighs_the_separate_reduce_fixup_when_given_its_constants():
    # Few tiles split many ways: the reduce pass sums them on many SMs, where owner-waits reads
    # its peers one after another (the H100's constants, streamk.target's h100 preset).
    machine, owner, reduce = Machine(132, 2), Costs(32, 16, 1, 8), Costs(32, 24, 1, 0.5)
    deep = build("auto", "185x134x1362", "128x128x32", machine, model_costs=owner, reduce_costs=reduce)
    assert deep.fixup == "separate-reduce" and deep.grid > 4  # 4 tiles of 43 iterations
    assert (deep.iters_per_cta.max() - deep.iters_per_cta.min()) <= 1  # basic Stream-K over its grid
    without = build("auto", "185x134x1362", "128x128x32", machine, model_costs=owner)
    assert without.fixup == "owner-waits" and without.grid < deep.grid
    # Tiles split two ways: one peer read is cheaper than the extra pass, so owner-waits stays
    two_way = build("auto", "2743x325x1706", "128x128x32", machine, model_costs=owner, reduce_costs=reduce)
    assert two_way.fixup == "owner-waits" and two_way.grid == 132


def test_auto_with_split_costs_splits_few_tiles_at_aligned_k_offsets():
    # 42 tiles of 112 iterations on 132 SMs: every tile split s ways (fixed-split's ranges, so the
    # CTAs of a tile's j-th split start at the same k), s of least modeled time under the costs
    machine, shape, tile = Machine(132, 1), "783x750x7141", "128x128x64"
    costs = Costs(11.2, 12.0, 1, 2.2)  # the sm90 128x128x64 kernel's calibration, in MAC iterations
    s = build("auto", shape, tile, machine, split_costs=costs)
    split = build("fixed-split", shape, tile, machine, splits=3)
    assert s.grid == 126 and (s.units == split.units).all() and (s.cta_offsets == split.cta_offsets).all()
    assert best_splits([42], [112], 132, costs).tolist() == [3]
    # brute force over s: a + b + d (s - 1) + ceil(ipt / s) for s > 1, a + ipt for s = 1
    tiles, ipt = np.array([1, 5, 42, 60, 64, 131, 7]), np.array([3, 200, 112, 35, 51, 80, 1])
    want = [min(range(1, min(132 // t, i) + 1), key=lambda s: (11.2 + (s > 1) * (12 + 2.2 * (s - 1)) + -(-i // s), s))
            for t, i in zip(tiles.tolist(), ipt.tolist())]
    assert best_splits(tiles, ipt, 132, costs).tolist() == want
    # with a busy share, an iteration on g CTAs costs max(1, g / (share * 132))
    slow = lambda t, s: max(1.0, s * t / 66)  # noqa: E731
    want = [min(range(1, min(132 // t, i) + 1), key=lambda s: (11.2 + (s > 1) * (12 + 2.2 * (s - 1)) +
                                                               slow(t, s) * -(-i // s), s))
            for t, i in zip(tiles.tolist(), ipt.tolist())]
    assert best_splits(tiles, ipt, 132, costs, 0.5).tolist() == want
    assert want != best_splits(tiles, ipt, 132, costs).tolist()
    dear = Costs(11.2, 1000.0, 1, 2.2)  # a partial too dear: DP, one CTA per tile
    assert build("auto", shape, tile, machine, split_costs=dear) == build("auto", shape, tile, machine,
                                                                           model_costs=Costs(32, 1000, 1, 8))
    wave = build("auto", "8192x8192x1024", tile, machine, split_costs=costs)  # a wave or more: unchanged
    assert wave == build("auto", "8192x8192x1024", tile, machine)
