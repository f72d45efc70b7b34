"""The reference event simulator: the paper's numbers, waits, deadlocks, timeline invariants."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from streamk import Costs, GemmShape, Machine, TileShape, make_schedule, plan_fixup
from streamk.cli import main
from streamk.schedule import FIXUP_POLICIES
from streamk.sim import simulate
from strategies import schedules

PAPER = GemmShape(384, 384, 128)
HYBRID = GemmShape(896, 384, 128)


def cli_json(capsys, *argv: str) -> dict:
    assert main(["simulate", *argv, "--json"]) == 0
    return json.loads(capsys.readouterr().out)


@pytest.mark.parametrize("decomp, tile, extra, utilization", [
    ("data-parallel", "128x128x128", [], 0.75),
    ("data-parallel", "128x64x128", [], 0.90),
    ("fixed-split", "128x128x64", ["--splits", "2"], 0.90),
    ("stream-k", "128x128x4", ["--grid", "4"], 1.00),
])
def test_paper_utilizations_from_the_cli(capsys, decomp, tile, extra, utilization):
    out = cli_json(capsys, decomp, "--shape", "384x384x128", "--tile", tile, "--sms", "4", *extra)
    assert out["utilization"] == pytest.approx(utilization)
    assert out["deadlock"] is False
    assert out["makespan"] * 4 * out["utilization"] == pytest.approx(out["total_iters"])


def test_stream_k_gives_each_cta_72_iterations(capsys):
    out = cli_json(capsys, "stream-k", "--shape", "384x384x128", "--tile", "128x128x4", "--sms", "4")
    assert out["grid"] == 4 and out["makespan"] == 72.0
    assert [c["end"] for c in out["ctas"]] == [72.0] * 4


@pytest.mark.parametrize("decomp, grid", [("dp-one-tile-sk", 24), ("two-tile-sk-dp", 20)])
def test_hybrids_of_section_5_2_fill_every_sm(capsys, decomp, grid):
    # 896x384x128 with 128x128x4: 21 tiles of 32 iterations on 4 SMs; data-parallel leaves the
    # sixth wave one quarter full (21 / 24 = 0.875), both hybrids balance it away.
    dp = cli_json(capsys, "data-parallel", "--shape", "896x384x128", "--tile", "128x128x4", "--sms", "4")
    assert dp["utilization"] == pytest.approx(21 / 24)
    out = cli_json(capsys, decomp, "--shape", "896x384x128", "--tile", "128x128x4", "--sms", "4")
    assert out["grid"] == grid
    assert out["utilization"] == pytest.approx(1.0)
    assert out["makespan"] == 21 * 32 / 4


def test_two_tile_sk_dp_runs_its_stream_k_ctas_first():
    s = make_schedule("two-tile-sk-dp", HYBRID, TileShape(128, 128, 4), Machine(4))
    t = simulate(s)
    # SK CTAs 0-3 get 5 tiles' worth (160 iterations, 40 each), then 16 DP CTAs in 4 waves.
    assert t.cta_end[:4].tolist() == [40.0] * 4
    assert t.cta_start[4:8].tolist() == [40.0] * 4
    assert t.makespan == 40 + 4 * 32


def test_owner_waits_for_slow_peers():
    # One 4-iteration tile shared by 4 CTAs: the owner is done at 1, its peers signal at 1 + b.
    s = make_schedule("stream-k", GemmShape(128, 128, 128), TileShape(128, 128, 32), Machine(4))
    t = simulate(s, Costs(0, 2, 1, 1))
    assert t.total_wait == 2.0
    assert t.cta_end.tolist() == [1 + 2 + 3, 3, 3, 3]
    waits = [g for g in t.segments if g.kind == "wait"]
    assert [(g.cta, g.start, g.end) for g in waits] == [(0, 1.0, 3.0)]


def test_deadlock_is_reported_not_hung():
    s = make_schedule("stream-k", PAPER, TileShape(128, 128, 4), Machine(1), grid=2)
    t = simulate(s)
    assert t.deadlock and math.isinf(t.makespan) and t.utilization == 0.0
    assert "CTA 0 waits on CTA 1, which can never become resident" in t.deadlock_reason
    assert t.cta_start[0] == 0 and math.isnan(t.cta_start[1])
    assert t.to_json_dict()["makespan"] is None
    # The same schedule runs with a second slot, or with a policy whose waits point down.
    assert not simulate(make_schedule("stream-k", PAPER, TileShape(128, 128, 4), Machine(1, 2), grid=2)).deadlock
    assert simulate(s, fixup="turnstile").makespan == 288.0  # both CTAs, one slot


def test_separate_reduce_runs_after_the_grid():
    s = make_schedule("fixed-split", PAPER, TileShape(128, 128, 64), Machine(4), splits=2)
    t = simulate(s, Costs(0, 0, 1, 2), fixup="separate-reduce")
    main_end = float(t.cta_end.max())
    reduces = [g for g in t.segments if g.kind == "fixup" and g.cta >= s.grid]
    assert len(reduces) == 9 and min(g.start for g in reduces) == main_end
    # 9 reduce tasks of 2 partials x d=2 on 4 slots: three rounds of 4.
    assert t.makespan == main_end + 3 * 4


@st.composite
def cases(draw):
    costs = Costs(*(draw(st.sampled_from([0.0, 0.5, 1.0, 3.0])) for _ in range(2)), 1.0,
                  draw(st.sampled_from([0.0, 0.5, 2.0])))
    return draw(schedules()), costs, draw(st.sampled_from(FIXUP_POLICIES))


@settings(max_examples=80)
@given(cases())
def test_timeline_invariants(case):
    schedule, costs, policy = case
    t = simulate(schedule, costs, policy)
    plan = plan_fixup(schedule, policy)
    if policy in ("last-arrival", "atomic", "separate-reduce") or plan.residency_needed() <= t.slots:
        assert not t.deadlock, (schedule, policy, t.deadlock_reason)
    if t.deadlock:
        assert t.deadlock_reason and math.isinf(t.makespan)
        return
    work = schedule.problem.total_iters * costs.c
    mac = sum(g.end - g.start for g in t.segments if g.kind == "mac")
    assert mac == pytest.approx(work)
    assert t.utilization == pytest.approx(work / (t.slots * t.makespan))
    assert t.utilization <= 1 + 1e-12
    # Slots are exclusive: CTAs on one slot do not overlap, and each lies within [start, end].
    for slot in range(t.slots):
        on = np.flatnonzero(t.cta_slot == slot)
        spans = sorted(zip(t.cta_start[on], t.cta_end[on]))
        assert all(e1 <= s2 for (_, e1), (s2, _) in zip(spans, spans[1:]))
    for g in t.segments:
        if g.cta < schedule.grid:
            assert t.cta_start[g.cta] <= g.start <= g.end <= t.cta_end[g.cta] + 1e-9
    # Only units with waits ever wait, and the wait total adds up.
    waited = {g.unit for g in t.segments if g.kind == "wait"}
    assert all(len(plan.waits(u)) > 0 for u in waited)
    assert sum(g.end - g.start for g in t.segments if g.kind == "wait") == pytest.approx(t.total_wait)
    # Dispatch is in blockIdx order.
    assert np.all(np.diff(t.cta_start) >= 0)


# ---- deadlock advice, JSON numbers, many slots ------------------------------------------------

CROSSED = [[(0, 0, 2), (1, 2, 4)], [(1, 0, 2), (0, 2, 4)], [(2, 0, 4), (3, 0, 4)]]  # CTAs 0, 1 each own a tile


def crossed(machine: Machine, fixup: str = "owner-waits"):
    from streamk import Schedule

    return Schedule.from_ctas("crossed", GemmShape(256, 256, 64), TileShape(128, 128, 16), CROSSED,
                              machine=machine, fixup=fixup)


@pytest.mark.parametrize("machine, fixup, advice, advised", [
    # turnstile: CTA 0's tail of tile 1 waits on CTA 1, never resident on one slot; three slots fix it
    (Machine(1), "turnstile", "; use a larger --ctas-per-sm or the last-arrival, atomic or separate-reduce fixup",
     ["last-arrival", "atomic", "separate-reduce"]),
    # owner-waits: CTA 0 and CTA 1 wait on each other; no number of slots helps, turnstile's waits do
    (Machine(4), "owner-waits", "wait cycle: CTA 0 -> CTA 1 -> CTA 0 (each waits on the next); the schedule can "
     "never finish; use the turnstile, last-arrival, atomic or separate-reduce fixup",
     ["turnstile", "last-arrival", "atomic", "separate-reduce"]),
])
def test_deadlock_advice_fits_the_case_and_never_names_the_policy_in_use(machine, fixup, advice, advised):
    t = simulate(crossed(machine, fixup))
    assert t.deadlock and t.deadlock_reason.endswith(advice), t.deadlock_reason
    assert all(not simulate(crossed(machine, other)).deadlock for other in advised)  # each finishes here
    assert simulate(crossed(Machine(1, 3), fixup)).deadlock is (fixup == "owner-waits")  # more slots: a cycle stays


def test_timeline_json_has_null_where_a_number_is_not_finite():
    import dataclasses

    t = simulate(make_schedule("stream-k", PAPER, TileShape(128, 128, 4), Machine(4)))
    odd = dataclasses.replace(t, utilization=math.nan, total_wait=math.inf)
    obj = json.loads(json.dumps(odd.to_json_dict(), allow_nan=False))
    assert obj["utilization"] is None and obj["total_wait"] is None and obj["makespan"] == 72.0


def test_costs_too_large_for_a_simulation_are_refused():
    from streamk.costs import MAX_COST
    from streamk.errors import ScheduleError

    with pytest.raises(ScheduleError, match="at most 1e\\+100 each"):
        Costs(0, 0, 1e307, 0)
    s = make_schedule("stream-k", PAPER, TileShape(128, 128, 4), Machine(4))
    t = simulate(s, Costs(MAX_COST, MAX_COST, MAX_COST, MAX_COST))  # the largest costs still time, no overflow
    assert t.makespan == pytest.approx(MAX_COST * simulate(s, Costs(1, 1, 1, 1)).makespan, rel=1e-12)
    assert not t.deadlock and json.loads(json.dumps(t.to_json_dict(), allow_nan=False))["makespan"] == t.makespan


def test_many_slots_cost_only_the_slots_the_grid_uses():
    # 10^8 slots a SM: a free list of every slot would need gigabytes; 288 CTAs use the first 288
    t = simulate(make_schedule("stream-k", PAPER, TileShape(128, 128, 4), Machine(4, 10**8)))
    assert t.makespan == 1.0 and t.cta_slot.tolist() == list(range(288)) and set(t.cta_sm.tolist()) == {0}
    s = make_schedule("fixed-split", PAPER, TileShape(128, 128, 64), Machine(1, 10**8), splits=2)
    reduces = [g for g in simulate(s, Costs(0, 0, 1, 2), fixup="separate-reduce").segments if g.cta >= s.grid]
    assert sorted({g.slot for g in reduces}) == list(range(9))  # one reduce task per split tile, lowest slots
