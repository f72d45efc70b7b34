"""The Schedule value: construction by hand and from JSON, and the coverage check that guards it."""

import json

import numpy as np
import pytest

from streamk import GemmShape, Machine, Schedule, ScheduleError, TileShape, WorkUnit, make_schedule
from streamk.sched.ranges import schedule_from_ranges

SHAPE, TILE = GemmShape(256, 128, 64), TileShape(128, 128, 16)  # 2 tiles x 4 iterations


def by_hand(ctas):
    return Schedule.from_ctas("custom", SHAPE, TILE, ctas)


def test_hand_built_schedule_is_accepted_and_viewed_back():
    s = by_hand([[(0, 0, 4), (1, 0, 2)], [WorkUnit(1, 2, 4)]])
    assert s.grid == 2
    assert s.ctas == ((WorkUnit(0, 0, 4), WorkUnit(1, 0, 2)), (WorkUnit(1, 2, 4),))
    assert s.iters_per_cta.tolist() == [6, 2]
    assert s.unit_cta.tolist() == [0, 0, 1]


@pytest.mark.parametrize("ctas, message", [
    ([[(0, 0, 4), (1, 0, 2)], [(1, 1, 4)]], "tile 1: iteration 1 is covered twice"),
    ([[(0, 0, 4), (1, 0, 2)], [(1, 3, 4)]], "tile 1: iteration 2 is not covered"),  # only 2 of [2, 3)
    ([[(0, 0, 4), (1, 0, 1)], [(1, 3, 4)]], "tile 1: iterations 1..2 are not covered"),  # both ends inclusive
    ([[(0, 0, 4), (1, 0, 3)]], "tile 1: iteration 3 is not covered"),
    ([[(0, 0, 4)]], "tile 1: iterations 0..3 are not covered by any unit"),
    ([[(0, 0, 4), (1, 2, 2)], [(1, 0, 4)]], "CTA 0 unit 1 is (1, 2, 2)"),
    ([[(0, 0, 5), (1, 0, 4)]], "CTA 0 unit 0 is (0, 0, 5)"),
    ([[(2, 0, 4), (1, 0, 4)]], "need 0 <= tile < 2"),
    ([[(0, 0, 4), (1, 0, 4)], []], "every CTA needs at least one work unit (CTA 1"),
])
def test_bad_coverage_names_first_bad_tile_and_iteration(ctas, message):
    with pytest.raises(ScheduleError) as info:
        by_hand(ctas)
    assert message in str(info.value)


@pytest.mark.parametrize("starts, ends, message", [
    ([0, 3], [4, 8], "iteration 3 is covered twice"),  # overlap
    ([0, 5], [4, 8], "tile 1: iteration 0 is not covered"),  # gap
    ([0, 4], [4, 7], "tile 1: iteration 3 is not covered"),  # short of the total
    ([0, 4, 4], [4, 8, 4], "every CTA needs at least one work unit"),  # an empty range
])
def test_ranges_that_do_not_tile_the_iterations_in_order_are_checked_in_full(starts, ends, message):
    # only ranges tiling [0, total) in order skip the per-unit validation (Schedule.proven)
    with pytest.raises(ScheduleError) as info:
        schedule_from_ranges("custom", SHAPE, TILE, Machine(2), np.array(starts), np.array(ends))
    assert message in str(info.value)


def test_ranges_out_of_order_that_cover_once_are_a_schedule():
    s = schedule_from_ranges("custom", SHAPE, TILE, Machine(2), np.array([4, 0]), np.array([8, 4]))
    assert s.ctas == ((WorkUnit(1, 0, 4),), (WorkUnit(0, 0, 4),))


def test_units_are_read_only():
    s = by_hand([[(0, 0, 4), (1, 0, 4)]])
    with pytest.raises(ValueError):
        s.units[0, 0] = 1


def test_json_round_trip_keeps_everything():
    s = make_schedule("stream-k", GemmShape(384, 384, 128), TileShape(128, 128, 4), Machine(4), fixup="turnstile")
    text = s.to_json()
    back = Schedule.from_json(text)
    assert back == s
    assert json.loads(text)["ctas"][0] == [{"tile": 0, "k_begin": 0, "k_end": 32},
                                           {"tile": 1, "k_begin": 0, "k_end": 32},
                                           {"tile": 2, "k_begin": 0, "k_end": 8}]


def test_json_written_by_hand_needs_only_shape_tile_and_ctas():
    obj = {"shape": [256, 128, 64], "tile": [128, 128, 16],
           "ctas": [[{"tile": 0, "k_begin": 0, "k_end": 4}], [{"tile": 1, "k_begin": 0, "k_end": 4}]]}
    s = Schedule.from_json(obj)
    assert (s.decomposition, s.grid, s.fixup, s.machine) == ("custom", 2, "owner-waits", None)


def test_malformed_json_is_a_schedule_error():
    with pytest.raises(ScheduleError, match="shape, tile and ctas"):
        Schedule.from_json({"shape": [1, 2, 3], "ctas": []})


@pytest.mark.parametrize("bad", [dict(tile_order="hilbert"), dict(fixup="hope")])
def test_unknown_order_or_policy_is_refused(bad):
    with pytest.raises(ScheduleError, match="must be one of|tile order must be"):
        Schedule("custom", SHAPE, TILE, np.array([[0, 0, 4], [1, 0, 4]]), np.array([0, 2]), **bad)


def test_tile_coords_follow_the_rasterization():
    s = make_schedule("data-parallel", GemmShape(300, 500, 8), TileShape(100, 100, 8), Machine(2))
    assert s.tile_coords(7) == (1, 2)  # row-major, 5 tiles per row
    col = make_schedule("data-parallel", GemmShape(300, 500, 8), TileShape(100, 100, 8), Machine(2),
                        tile_order="column-major")
    assert col.tile_coords(7) == (1, 2)  # column-major, 3 tiles per column


@pytest.mark.parametrize("kwargs, message", [
    (dict(m=0, n=1, k=1), "GemmShape.m must be >= 1"),
    (dict(m=1, n=-3, k=1), "GemmShape.n must be >= 1"),
    (dict(m=1, n=1, k=2.5), "GemmShape.k must be an int"),
])
def test_bad_shapes_raise_clear_errors(kwargs, message):
    with pytest.raises(ScheduleError, match=message):
        GemmShape(**kwargs)


@pytest.mark.parametrize("order", ["row-major", "column-major", "grouped-1", "grouped-3", "grouped-8"])
@pytest.mark.parametrize("tiles_m, tiles_n", [(1, 1), (7, 5), (16, 3), (2, 9)])
def test_every_tile_order_is_a_bijection_onto_the_tile_grid(order, tiles_m, tiles_n):
    from streamk.schedule import tile_coordinates

    tm, tn = tile_coordinates(order, tiles_m, tiles_n, np.arange(tiles_m * tiles_n))
    assert sorted(zip(tm.tolist(), tn.tolist())) == [(i, j) for i in range(tiles_m) for j in range(tiles_n)]


def test_grouped_order_walks_g_rows_column_by_column():
    from streamk.schedule import tile_coordinates

    tm, tn = tile_coordinates("grouped-2", 3, 3, np.arange(9))
    assert list(zip(tm.tolist(), tn.tolist())) == [(0, 0), (1, 0), (0, 1), (1, 1), (0, 2), (1, 2),
                                                   (2, 0), (2, 1), (2, 2)]  # the last group has one row
    assert tile_coordinates("grouped-1", 3, 3, 5) == tile_coordinates("row-major", 3, 3, 5)


@pytest.mark.parametrize("order", ["grouped-0", "grouped", "hilbert", "grouped-x", "quads-3"])
def test_bad_tile_orders_are_refused(order):
    with pytest.raises(ScheduleError, match="tile order must be row-major, column-major, grouped-G"):
        make_schedule("data-parallel", SHAPE, TILE, Machine(1), tile_order=order)
