"""Properties that hold for every shape, tile, machine, grid and decomposition (Hypothesis).

Failures print the schedule's repr (shape, tile, grid, fixup) through Hypothesis' falsifying example.
"""

import numpy as np
from hypothesis import given, note
from hypothesis import strategies as st

from streamk import FIXUP_POLICIES, Action, Problem, plan_fixup
from streamk.sched import make_schedule
from strategies import machines, problems, schedules

HYBRIDS = ["dp-one-tile-sk", "two-tile-sk-dp"]


def whole_tile_ctas(s):
    """Per CTA: does every unit of it cover a whole tile (a data-parallel CTA, persistent ones too)?"""
    whole = (s.units[:, 1] == 0) & (s.units[:, 2] == s.problem.iters_per_tile)
    split = np.bincount(np.repeat(np.arange(s.grid), np.diff(s.cta_offsets)), weights=~whole, minlength=s.grid)
    return split == 0


def describe(s):
    note(f"{s!r} machine={s.machine} units={s.units.tolist()} offsets={s.cta_offsets.tolist()}")


@given(schedules(weigh_reduce=True))
def test_every_mac_iteration_covered_once(s):
    describe(s)
    p = s.problem
    visits = np.zeros((p.tiles, p.iters_per_tile), dtype=np.int64)
    for tile, kb, ke in s.units.tolist():  # counted independently of Schedule's own validation
        visits[tile, kb:ke] += 1
    assert (visits == 1).all()
    assert (s.units[:, 2] > s.units[:, 1]).all(), "no empty work unit"


@given(schedules(), st.sampled_from(FIXUP_POLICIES))
def test_every_tile_written_once_under_every_policy(s, policy):
    describe(s)
    plan = plan_fixup(s, policy)
    for tile in range(s.problem.tiles):
        units = plan.contributors(tile)
        acts = [Action(a) for a in plan.action[units]]
        if len(units) == 1:
            assert acts == [Action.WRITE]
            continue
        kb = s.units[units, 1]
        assert (np.diff(kb) > 0).all(), "contributors are in k order"
        expected = {
            "owner-waits": [Action.REDUCE] + [Action.PARTIAL] * (len(units) - 1),
            "turnstile": [Action.PARTIAL] + [Action.HANDOFF] * (len(units) - 2) + [Action.FINISH],
            "last-arrival": [Action.ARRIVE] * len(units),
            "atomic": [Action.ATOMIC] * len(units),
            "separate-reduce": [Action.DEFER] * len(units),
        }[policy]
        assert acts == expected
        if policy == "owner-waits":
            assert kb[0] == 0 and list(plan.waits(int(units[0]))) == list(units[1:])
        if policy == "turnstile":
            assert s.units[units[-1], 2] == s.problem.iters_per_tile


@given(schedules(), st.sampled_from(FIXUP_POLICIES))
def test_wait_graph_is_acyclic_and_slots_are_distinct(s, policy):
    describe(s)
    plan = plan_fixup(s, policy)
    assert plan.wait_cycle() is None
    stored = plan.slot[plan.slot >= 0]
    assert len(np.unique(stored)) == len(stored) == plan.num_slots


@given(schedules(), st.sampled_from(["owner-waits", "turnstile"]))
def test_turnstile_waits_point_only_at_lower_ctas_and_owner_waits_only_higher(s, policy):
    describe(s)
    edges = plan_fixup(s, policy).cta_wait_edges()
    if policy == "turnstile":
        assert (edges[:, 1] < edges[:, 0]).all()
        assert plan_fixup(s, policy).residency_needed() == 1
    else:
        assert (edges[:, 1] > edges[:, 0]).all()


@given(schedules(decompositions=["stream-k", "fixed-split", "auto"] + HYBRIDS, weigh_reduce=True))
def test_balance_within_one(s):
    describe(s)
    p = s.problem
    if s.decomposition == "fixed-split":
        lengths = s.units[:, 2] - s.units[:, 1]
        per_tile = lengths.reshape(p.tiles, -1)
        assert (per_tile.max(axis=1) - per_tile.min(axis=1) <= 1).all()
        return
    iters = s.iters_per_cta
    sk = np.ones(s.grid, dtype=bool)
    if s.decomposition != "stream-k":  # hybrids: only the SK CTAs are balanced; DP CTAs hold whole tiles
        sk = ~whole_tile_ctas(s)
    if sk.any():
        assert iters[sk].max() - iters[sk].min() <= 1


@given(schedules(decompositions=HYBRIDS, persistent_hybrid=False))
def test_hybrids_have_the_papers_structure(s):
    describe(s)
    p, slots = s.problem, s.machine.slots
    waves, leftover = divmod(p.tiles, slots)
    whole = whole_tile_ctas(s)
    if leftover == 0:
        assert whole.all() and s.grid == p.tiles
        return
    two_tile = s.decomposition == "two-tile-sk-dp" and waves >= 1
    dp_ctas = (waves - 1 if two_tile else waves) * slots
    sk_tiles = p.tiles - dp_ctas
    sk_ctas = min(slots, sk_tiles * p.iters_per_tile)
    assert s.grid == dp_ctas + sk_ctas
    if two_tile:  # SK first, then full DP waves over the remaining tiles
        sk_iters = s.iters_per_cta[:sk_ctas]
        assert whole[sk_ctas:].all()
        assert (sk_iters >= p.iters_per_tile).all() and (sk_iters <= 2 * p.iters_per_tile).all()
        assert sk_iters.sum() < 2 * p.iters_per_tile * sk_ctas, "more than one tile each, fewer than two"
        counts = np.bincount(s.units[:, 0], minlength=p.tiles)
        assert counts.max() <= 2, "each split tile has only two contributors"
    else:  # full DP waves, then SK over the leftover tiles, each under one tile of iterations
        assert whole[: dp_ctas].all()
        assert (s.iters_per_cta[dp_ctas:] <= p.iters_per_tile).all()


@given(problems(), machines(), st.integers(1, 200))
def test_persistent_dp_one_tile_sk_runs_the_waves_then_an_even_share(problem, machine, grid):
    """With a grid, dp-one-tile-sk's CTA c runs whole tiles c, c + grid, ... of the full waves, then a
    contiguous share of the leftover tiles' iterations: every CTA within one iteration of the others."""
    shape, tile = problem
    p = Problem(shape, tile)
    grid = min(grid, p.total_iters)
    s = make_schedule("dp-one-tile-sk", shape, tile, machine, grid=grid)
    describe(s)
    waves = p.tiles // grid
    assert s.grid == grid
    assert s.iters_per_cta.max() - s.iters_per_cta.min() <= 1
    for c, units in enumerate(s.ctas):
        assert [u.tile for u in units[:waves]] == list(range(c, waves * grid, grid))
        assert all(u.k_begin == 0 and u.k_end == p.iters_per_tile for u in units[:waves])
        ipt = p.iters_per_tile
        flat = [(u.tile * ipt + u.k_begin, u.tile * ipt + u.k_end) for u in units[waves:]]
        assert all(a[1] == b[0] for a, b in zip(flat, flat[1:])), "the share is contiguous"


@given(schedules(decompositions=["stream-k"]))
def test_streamk_ctas_are_contiguous_in_the_linear_iteration_order(s):
    ipt = s.problem.iters_per_tile
    starts = s.units[:, 0] * ipt + s.units[:, 1]
    ends = s.units[:, 0] * ipt + s.units[:, 2]
    assert starts[0] == 0 and ends[-1] == s.problem.total_iters
    assert (starts[1:] == ends[:-1]).all()


@given(schedules(decompositions=["stream-k", "fixed-split", "dp-one-tile-sk", "two-tile-sk-dp"], persistent_hybrid=False))
def test_owner_waits_residency_bound_is_safe_and_tight_for_streamk(s):
    describe(s)
    plan = plan_fixup(s, "owner-waits")
    need = plan.residency_needed()
    assert 1 <= need <= s.grid
    if s.decomposition in ("stream-k",) and len(plan.split_tiles):
        # a waiting chain through every CTA up to the last split tile's last contributor
        assert need >= 2
    if s.decomposition in ("dp-one-tile-sk", "two-tile-sk-dp"):
        assert need <= s.machine.slots, "the hybrids never wait beyond one wave"
    assert Problem(s.shape, s.tile).total_iters == int(s.iters_per_cta.sum())


@given(schedules(decompositions=["stream-k", "two-tile-sk-dp", "dp-one-tile-sk"], persistent_hybrid=False))
def test_backward_walk_reverses_each_cta_and_turnstile_then_never_waits_on_deep_ctas(s):
    from streamk.sim import simulate

    describe(s)
    back = s.walked_backward()
    for cta_fwd, cta_back in zip(s.ctas, back.ctas):
        assert cta_back == tuple(reversed(cta_fwd))
    turnstile = simulate(back.with_fixup("turnstile"))
    assert not turnstile.deadlock
    assert plan_fixup(back, "turnstile").residency_needed() == 1
    if s.iters_per_cta.min() >= s.problem.iters_per_tile:
        # Each tile has <= 2 contributors; the head (computed first by the lower CTA) is done no
        # later than the tail (computed last by the next CTA), iteration counts being within one.
        assert turnstile.total_wait == 0
        if s.grid <= s.machine.slots:  # all co-resident: forward owner-waits never waits either
            assert turnstile.makespan == simulate(s.with_fixup("owner-waits")).makespan
