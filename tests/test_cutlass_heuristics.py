"""CUTLASS's stream-K heuristics of record (cutlass2-sk, cutlass3-sk): coverage and the documented rules."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from streamk import GemmShape, Machine, Problem, TileShape, make_schedule
from streamk.sched.cutlass import (CUTLASS3_MIN_ITERS_PER_SK_UNIT, cutlass2_blocks, cutlass2_sk_blocks, cutlass_ranges,
                                   cutlass3_groups, cutlass3_sk_tiles)

from strategies import machines, problems

TILE = TileShape(128, 128, 32)


def shape_of(tiles_m: int, tiles_n: int, ipt: int, tile: TileShape = TILE) -> GemmShape:
    return GemmShape(tiles_m * tile.bm, tiles_n * tile.bn, ipt * tile.bk)


def scalars(arrays) -> tuple[int, ...]:
    """The one-shape answer of a rule that works on arrays of shapes."""
    return tuple(int(a[0]) for a in arrays)


def units_of(schedule) -> list[list[tuple[int, int, int]]]:
    return [[tuple(u) for u in cta] for cta in schedule.ctas]


def is_data_parallel(schedule) -> bool:
    p = schedule.problem
    whole = (schedule.units[:, 1] == 0) & (schedule.units[:, 2] == p.iters_per_tile)
    return bool(whole.all()) and schedule.grid == p.tiles


@pytest.mark.parametrize("name", ["cutlass2-sk", "cutlass3-sk"])
@given(problem=problems(max_tiles=300, max_iters=70), machine=machines(max_sms=24, max_ctas_per_sm=3))
def test_every_mac_iteration_covered_once(name, problem, machine):
    shape, tile = problem
    s = make_schedule(name, shape, tile, machine)  # Schedule validates coverage on construction
    p = Problem(shape, tile)
    assert int(s.iters_per_cta.sum()) == p.total_iters, (shape, tile, machine, s.grid)
    assert s.decomposition == name


# ---- CUTLASS 3.x ------------------------------------------------------------------------
@given(problem=problems(max_tiles=200, max_iters=CUTLASS3_MIN_ITERS_PER_SK_UNIT), machine=machines())
def test_cutlass3_no_stream_k_with_at_most_8_k_tiles(problem, machine):
    s = make_schedule("cutlass3-sk", *problem, machine)
    assert is_data_parallel(s), (problem, machine, s.grid)


@pytest.mark.parametrize("tail, data_parallel", [(54, True), (100, True), (53, False), (1, False)])
def test_cutlass3_tail_of_half_a_wave_or_more_is_data_parallel(tail, data_parallel):
    s = make_schedule("cutlass3-sk", shape_of(1, 2 * 108 + tail, 32), TILE, Machine(108))
    assert is_data_parallel(s) is data_parallel, (tail, s.grid)


def test_cutlass3_sk_region_is_last_full_wave_plus_partial():
    # 3 full waves of 108 tiles and a tail of 10: DP for the first 2 waves, SK over 108 + 10 tiles.
    tiles, ipt, wave = 3 * 108 + 10, 32, 108
    s = make_schedule("cutlass3-sk", shape_of(1, tiles, ipt), TILE, Machine(wave))
    assert cutlass3_sk_tiles(tiles, ipt, wave).tolist() == [118]
    sk_units = wave  # min(wave, 118 * 32 // 8)
    sk_ctas, dp_ctas = units_of(s)[:sk_units], units_of(s)[sk_units:]
    assert sorted({u[0] for cta in sk_ctas for u in cta}) == list(range(118))
    assert dp_ctas == [[(t, 0, ipt)] for t in range(118, tiles)]  # SK first, then DP in tile order
    assert s.grid == sk_units + tiles - 118


@given(problem=problems(max_tiles=300, max_iters=70), machine=machines(max_sms=24))
def test_cutlass3_no_split_under_8_k_tiles(problem, machine):
    s = make_schedule("cutlass3-sk", *problem, machine)
    lengths = s.units[:, 2] - s.units[:, 1]
    if not is_data_parallel(s):
        assert int(lengths.min()) >= CUTLASS3_MIN_ITERS_PER_SK_UNIT, (problem, machine, s.units.tolist())


def test_cutlass3_split_k_when_units_divide_tiles():
    # One 32-k-tile tile on 4 SMs: 4 units of 8 k-tiles each, one per split.
    s = make_schedule("cutlass3-sk", shape_of(1, 1, 32), TILE, Machine(4))
    assert units_of(s) == [[(0, 0, 8)], [(0, 8, 16)], [(0, 16, 24)], [(0, 24, 32)]]


def test_cutlass3_groups_divide_units_and_tiles():
    assert cutlass3_groups(sk_tiles=118, sk_units=108, ipt=32, max_groups=8).tolist() == [2]  # 118 = 2 x 59
    assert cutlass3_groups(sk_tiles=5, sk_units=4, ipt=32, max_groups=3).tolist() == [2]  # fallback: divides units only
    assert cutlass3_groups(sk_tiles=5, sk_units=4, ipt=32, max_groups=1).tolist() == [1]


# ---- CUTLASS 2.x ------------------------------------------------------------------------
def test_cutlass2_savings_model_by_hand():
    # 5 SK tiles of 32 iterations on 4 SMs, one full SK wave: 40 iterations per block, 2 peers,
    # fixup int(2 + 0.02*2*40 + 2*2) = 7, DP-equivalent 2 waves x 32 -> savings 64 - 40 - 7 = 17.
    assert scalars(cutlass2_sk_blocks(5, 32, 4, 1, False)) == (4, 17)
    # 2 tiles on 4 SMs: 4 blocks split both evenly (aligned, no skew charge): 32 - 16 - 6 = 10 beats 3 blocks.
    assert scalars(cutlass2_sk_blocks(2, 32, 4, 1, True)) == (4, 10)
    # 2 iterations per tile: never profitable.
    assert scalars(cutlass2_sk_blocks(5, 2, 4, 1, False))[1] < 0


def test_cutlass2_paper_example_is_two_tile_sk_plus_dp():
    shape, tile, machine = GemmShape(384, 384, 128), TileShape(128, 128, 4), Machine(4)
    s = make_schedule("cutlass2-sk", shape, tile, machine)
    ref = make_schedule("two-tile-sk-dp", shape, tile, machine)
    assert units_of(s) == units_of(ref)
    assert s.iters_per_cta.tolist() == [40, 40, 40, 40, 32, 32, 32, 32]


def test_cutlass2_one_region_per_tile_when_blocks_divide_tiles():
    s = make_schedule("cutlass2-sk", shape_of(1, 2, 32), TILE, Machine(4))
    assert units_of(s) == [[(0, 0, 16)], [(0, 16, 32)], [(1, 0, 16)], [(1, 16, 32)]]


@pytest.mark.parametrize("tiles, ipt, expect", [(8, 32, (8, 0)), (5, 2, (5, 0)), (9, 32, (4, 4))])
def test_cutlass2_dp_and_sk_regions(tiles, ipt, expect):
    assert scalars(cutlass2_blocks(tiles, ipt, 4, 1)) == expect
    s = make_schedule("cutlass2-sk", shape_of(1, tiles, ipt), TILE, Machine(4))
    assert is_data_parallel(s) is (expect[1] == 0)


@given(sms=st.integers(2, 16), occupancy=st.integers(2, 3), waves=st.integers(2, 6), tail=st.integers(1, 15),
       ipt=st.integers(1, 40))
def test_cutlass2_multi_occupancy_schedules_valid(sms, occupancy, waves, tail, ipt):
    tiles = waves * sms + tail % sms
    s = make_schedule("cutlass2-sk", shape_of(1, tiles, ipt), TILE, Machine(sms, occupancy))
    dp_tiles, _ = scalars(cutlass2_blocks(tiles, ipt, sms, occupancy))
    dp_units = s.units[(s.units[:, 0] >= tiles - dp_tiles)]
    assert np.all(dp_units[:, 1] == 0) and np.all(dp_units[:, 2] == ipt), (sms, occupancy, tiles, ipt)


@pytest.mark.parametrize("name", ["cutlass2-sk", "cutlass3-sk"])
@given(problem=problems(max_tiles=300, max_iters=70), sms=st.integers(1, 24))
def test_one_cta_per_sm_schedules_are_contiguous(name, problem, sms):
    """With one CTA per SM the CTAs walk the m -> n -> k linearization in blockIdx order (what
    the sweep's fast path needs): each unit starts where the previous one ended."""
    s = make_schedule(name, *problem, Machine(sms))
    ipt = s.problem.iters_per_tile
    lo = s.units[:, 0] * ipt + s.units[:, 1]
    hi = s.units[:, 0] * ipt + s.units[:, 2]
    assert lo[0] == 0 and np.array_equal(lo[1:], hi[:-1]), (problem, sms, s.units.tolist())


@pytest.mark.parametrize("name", ["cutlass2-sk", "cutlass3-sk"])
@given(shapes=st.lists(st.tuples(st.integers(1, 3000), st.integers(1, 3000), st.integers(1, 4000)),
                       min_size=1, max_size=12),
       sms=st.integers(1, 40), ctas_per_sm=st.integers(1, 2))
def test_batch_ranges_match_the_schedulers(name, shapes, sms, ctas_per_sm):
    """cutlass_ranges (many shapes at once, for the sweep) gives each shape's per-CTA ranges."""
    tile, machine = TileShape(64, 64, 16), Machine(sms, ctas_per_sm)
    got = cutlass_ranges(name, np.array(shapes), tile, machine)
    if name == "cutlass2-sk" and ctas_per_sm > 1:
        assert got is None  # not contiguous there: the sweep builds the schedules instead
        return
    ipt, offsets, (starts, ends) = got.ipt, got.cta_offsets, got.cta_ranges()
    for i, (m, n, k) in enumerate(shapes):
        s = make_schedule(name, GemmShape(m, n, k), tile, machine)
        u, p = s.units, s.problem.iters_per_tile
        assert ipt[i] == p
        assert (u[:, 0] * p + u[:, 1])[s.cta_offsets[:-1]].tolist() == starts[offsets[i]:offsets[i + 1]].tolist()
        assert (u[:, 0] * p + u[:, 2])[s.cta_offsets[1:] - 1].tolist() == ends[offsets[i]:offsets[i + 1]].tolist()
