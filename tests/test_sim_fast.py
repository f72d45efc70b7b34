"""The fast path gives the event simulator's makespan, utilization and deadlock verdict."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from streamk import Costs, GemmShape, Machine, Problem, Schedule, TileShape, make_schedule, plan_fixup
from streamk.sim import simulate
from streamk.sim.fast import (contiguous_ranges, programs_from_ranges, programs_from_schedule,
                              ranges_makespans, wave_makespans)
from streamk.sched import names
from streamk.sched.registry import get_batch
from streamk.sim.sweep import sweep, sweep_options
from strategies import machines, problems, schedules

COSTS = st.builds(Costs, st.sampled_from([0.0, 0.5, 3.0, 40.0]), st.sampled_from([0.0, 1.0, 2.5, 30.0]),
                  st.sampled_from([1.0, 2.0]), st.sampled_from([0.0, 0.5, 4.0, 25.0]))
IDEAL_OR_ANY = st.one_of(st.just(Costs(0, 0, 1, 0)), COSTS)
BATCHED = tuple(name for name in names() if get_batch(name) is not None)  # every built-in
FIELDS = ("offsets", "reach", "signal", "owner", "peer_offsets", "peers", "fixup")


def describe(schedule: Schedule, costs: Costs) -> str:
    return f"{schedule!r} on {schedule.machine} with costs {costs}"


def ranges_of(schedule: Schedule) -> tuple[np.ndarray, ...]:
    ranges = contiguous_ranges(schedule)
    assert ranges is not None, f"{schedule!r} does not walk the iterations in order"
    starts, ends = ranges
    return (np.array([schedule.problem.iters_per_tile]), np.array([0, schedule.grid]), starts, ends)


def contiguous(s: Schedule) -> bool:
    return contiguous_ranges(s) is not None  # not persistent data-parallel (tiles c, c + grid, ...)


@settings(max_examples=150)
@given(schedules().filter(contiguous), IDEAL_OR_ANY)
def test_wave_engine_matches_event_simulator(schedule, costs):
    reference = simulate(schedule, costs)
    programs = programs_from_schedule(schedule, costs)
    assert programs is not None  # every built-in fits the pattern under owner-waits
    for makespan, ok in (wave_makespans(programs, schedule.machine.slots),
                         ranges_makespans(*ranges_of(schedule), costs, schedule.machine.slots)):
        if ok[0]:  # otherwise the sweep asks the event simulator
            assert not reference.deadlock, describe(schedule, costs)
            assert makespan[0] == pytest.approx(reference.makespan, rel=1e-12), describe(schedule, costs)
    if reference.deadlock:
        assert not wave_makespans(programs, schedule.machine.slots)[1][0]


@settings(max_examples=100)
@given(schedules().filter(contiguous), st.just(Costs(1, 2, 1, 3)))
def test_closed_form_owners_are_plan_fixups(schedule, costs):
    """The contiguous-range shortcut derives the same peers and costs as plan_fixup."""
    from_ranges = programs_from_ranges(*ranges_of(schedule), costs)
    from_plan = programs_from_schedule(schedule, costs)
    for name in FIELDS:
        assert np.array_equal(getattr(from_ranges, name), getattr(from_plan, name)), (name, schedule)


@settings(max_examples=60)
@given(st.lists(problems(max_tiles=300, max_iters=60), min_size=1, max_size=4), machines(max_sms=12, max_ctas_per_sm=2),
       st.sampled_from(BATCHED))
def test_batch_over_many_shapes_gives_each_shapes_schedule(problems_, machine, name):
    tile = problems_[0][1]
    shapes = [(s.m, s.n, s.k) for s, _ in problems_]
    ipt = np.array([Problem(GemmShape(*row), tile).iters_per_tile for row in shapes])
    ranges = get_batch(name)(np.array(shapes), tile, machine, **sweep_options(name, ipt))
    if ranges is None:  # cutlass2-sk with several CTAs per SM: built per shape instead
        return
    for i, row in enumerate(shapes):
        shape = GemmShape(*row)
        schedule = make_schedule(name, shape, tile, machine, **sweep_options(name, int(ipt[i])))
        mine = ranges.schedule(i, name, tile, machine)
        assert np.array_equal(mine.units, schedule.units) and np.array_equal(mine.cta_offsets, schedule.cta_offsets), (
            name, shape, tile, machine)
        assert ranges.plain()[i] == (contiguous_ranges(schedule) is not None and schedule.fixup == "owner-waits")


@st.composite
def corpora(draw):
    tile = TileShape(draw(st.sampled_from([16, 32])), draw(st.sampled_from([16, 32])), draw(st.sampled_from([8, 16])))
    rows = draw(st.lists(st.tuples(st.integers(1, 400), st.integers(1, 400), st.integers(1, 400)),
                         min_size=1, max_size=12))
    return np.array(rows, dtype=np.int64), tile, draw(machines(max_sms=9, max_ctas_per_sm=2))


@settings(max_examples=25)
@given(corpora(), IDEAL_OR_ANY, st.sampled_from(BATCHED))
def test_sweep_matches_event_simulator_shape_by_shape(corpus, costs, name):
    shapes, tile, machine = corpus
    result = sweep(shapes, tile, machine, [name], costs, workers=1)
    for i, row in enumerate(shapes.tolist()):
        shape = GemmShape(*row)
        schedule = make_schedule(name, shape, tile, machine,
                                 **sweep_options(name, Problem(shape, tile).iters_per_tile))
        reference = simulate(schedule, costs)
        assert result.grid[0, i] == schedule.grid
        assert result.deadlock[0, i] == reference.deadlock
        assert result.utilization[0, i] == pytest.approx(reference.utilization, rel=1e-12)
        if not reference.deadlock:
            assert result.makespan[0, i] == pytest.approx(reference.makespan, rel=1e-12), describe(schedule, costs)


def test_fast_path_times_the_paper_examples_itself():
    tile = TileShape(128, 128, 4)
    for name, shape in [("stream-k", GemmShape(384, 384, 128)), ("two-tile-sk-dp", GemmShape(896, 384, 128)),
                        ("dp-one-tile-sk", GemmShape(896, 384, 128)), ("data-parallel", GemmShape(896, 384, 128))]:
        schedule = make_schedule(name, shape, tile, Machine(4))
        makespan, ok = ranges_makespans(*ranges_of(schedule), Costs(0, 0, 1, 0), 4)
        assert ok[0] and makespan[0] == simulate(schedule).makespan


def test_possible_deadlock_is_left_to_the_event_simulator():
    schedule = make_schedule("stream-k", GemmShape(384, 384, 128), TileShape(128, 128, 4), Machine(1), grid=2)
    _, ok = wave_makespans(programs_from_schedule(schedule, Costs(0, 0, 1, 0)), 1)
    assert not ok[0] and simulate(schedule).deadlock


def test_owner_waiting_on_lower_ctas_is_timed_too():
    """Stream-K in reverse blockIdx order: owners come after their peers, still one pattern."""
    s = make_schedule("stream-k", GemmShape(300, 200, 500), TileShape(32, 32, 16), Machine(3), grid=7)
    ctas = list(reversed(s.ctas))
    rev = Schedule.from_ctas("reversed", s.shape, s.tile, ctas, machine=s.machine)
    costs = Costs(1, 2, 1, 3)
    makespan, ok = wave_makespans(programs_from_schedule(rev, costs), 3)
    assert ok[0] and makespan[0] == simulate(rev, costs).makespan


def test_schedules_outside_the_pattern_are_refused():
    # CTA 0 owns tile 0 and then stores a partial of tile 1; CTA 1 the reverse: a wait cycle.
    rev = Schedule.from_ctas("cross", GemmShape(64, 32, 64), TileShape(32, 32, 16),
                             [[(0, 0, 2), (1, 2, 4)], [(1, 0, 2), (0, 2, 4)]], machine=Machine(2))
    assert programs_from_schedule(rev, Costs(0, 0, 1, 0)) is None
    assert programs_from_schedule(rev.with_fixup("turnstile"), Costs(0, 0, 1, 0)) is None
    timeline = simulate(rev)
    assert timeline.deadlock and timeline.deadlock_reason.startswith("wait cycle")
    assert len(plan_fixup(rev).split_tiles) == 2 and math.isinf(timeline.makespan)
