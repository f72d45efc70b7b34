"""The launch-time verdict (streamk.dispatch) equals the event simulator's deadlock verdict."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from streamk import GemmShape, Machine, Schedule, TileShape
from streamk.costs import Costs
from streamk.dispatch import dispatch_verdict, waits_only_backward
from streamk.fixup import plan_fixup
from streamk.schedule import FIXUP_POLICIES
from streamk.sim.events import simulate_events


@st.composite
def user_schedules(draw) -> Schedule:
    """Any valid user schedule: every tile's iterations cut into ranges and dealt to CTAs in any
    order (self-waits, upward and downward waits, cycles through program order all occur)."""
    tiles, iters = draw(st.integers(1, 6)), draw(st.integers(1, 6))
    units = []
    for t in range(tiles):
        cuts = sorted(draw(st.sets(st.integers(1, iters - 1), max_size=iters - 1))) if iters > 1 else []
        bounds = [0, *cuts, iters]
        units += [(t, b, e) for b, e in zip(bounds, bounds[1:])]
    units = draw(st.permutations(units))
    grid = draw(st.integers(1, len(units)))
    cuts = sorted(draw(st.sets(st.integers(1, len(units) - 1), min_size=grid - 1, max_size=grid - 1))) \
        if grid > 1 else []
    bounds = [0, *cuts, len(units)]
    ctas = [units[b:e] for b, e in zip(bounds, bounds[1:])]
    return Schedule.from_ctas("user", GemmShape(tiles * 8, 8, iters * 4), TileShape(8, 8, 4), ctas)


@given(user_schedules(), st.sampled_from(FIXUP_POLICIES), st.integers(1, 4),
       st.sampled_from([Costs(0, 0, 1, 0), Costs(3, 2, 1, 5)]))
def test_launch_verdict_equals_simulator_deadlock_verdict(schedule, policy, slots, costs):
    plan = plan_fixup(schedule, policy)
    verdict = dispatch_verdict(plan, slots)
    on = Schedule(schedule.decomposition, schedule.shape, schedule.tile, schedule.units, schedule.cta_offsets,
                  Machine(slots, 1), fixup=policy)
    timeline = simulate_events(on, costs)
    assert verdict.finishes == (not timeline.deadlock), (schedule.ctas, policy, slots, verdict, timeline.reason)
    if not verdict.finishes:
        assert verdict.reason


def test_a_cta_waiting_on_its_own_later_unit_never_finishes():
    s = Schedule.from_ctas("x", GemmShape(128, 128, 64), TileShape(128, 128, 32), [[(0, 0, 1), (0, 1, 2)]])
    verdict = dispatch_verdict(plan_fixup(s, "owner-waits"), 4)
    assert not verdict.finishes and "its own later unit" in verdict.reason
    assert dispatch_verdict(plan_fixup(s, "turnstile"), 1).finishes  # waits on its own earlier unit


def test_upward_waits_need_every_awaited_cta_resident():
    # owners 0..2 wait on peers 3..5: three slots hold the waiting owners, the peers never run
    ctas = [[(t, 0, 1)] for t in range(3)] + [[(t, 1, 2)] for t in range(3)]
    s = Schedule.from_ctas("x", GemmShape(384, 128, 64), TileShape(128, 128, 32), ctas)
    plan = plan_fixup(s, "owner-waits")
    assert not waits_only_backward(plan)
    assert not dispatch_verdict(plan, 3).finishes
    assert dispatch_verdict(plan, 4).finishes
    assert waits_only_backward(plan_fixup(s, "turnstile")) and dispatch_verdict(plan_fixup(s, "turnstile"), 1).finishes


def test_wait_cycle_through_program_order_is_named():
    # CTA 0 owns tile 0 then is a peer of tile 1; CTA 1 owns tile 1 then is a peer of tile 0
    s = Schedule.from_ctas("x", GemmShape(256, 128, 64), TileShape(128, 128, 32),
                           [[(0, 0, 1), (1, 1, 2)], [(1, 0, 1), (0, 1, 2)]])
    verdict = dispatch_verdict(plan_fixup(s, "owner-waits"), 4)
    assert not verdict.finishes and "cycle" in verdict.reason
