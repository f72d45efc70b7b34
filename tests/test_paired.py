"""Paired Stream-K (streamk/sched/paired.py) and the pairing of units that are not written alone
(streamk/gpu/clusters.py): coverage, twins, and that a launch whose clusters the rule pairs finishes
under lockstep, checked by a replay of the kernel's ring written here, unit by unit and iteration by
iteration. No GPU needed."""

from __future__ import annotations

import numpy as np
from hypothesis import given, note, settings
from hypothesis import strategies as st

from streamk import FIXUP_POLICIES, Action, Problem, plan_fixup
from streamk.dispatch import waits_only_backward
from streamk.gpu.clusters import CLUSTER, multicast_groups, twin_groups
from streamk.gpu.table import UNIT_FIELDS, build_table
from streamk.sched import make_schedule
from streamk.schedule import Schedule, tile_coordinates
from streamk.shapes import GemmShape, Machine, TileShape
from strategies import machines, problems, schedules

ORDERS = ["row-major", "column-major", "grouped-2", "grouped-3", "grouped-8"]
F = {f: i for i, f in enumerate(UNIT_FIELDS)}


@st.composite
def paired_schedules(draw, *, policies=FIXUP_POLICIES) -> Schedule:
    """Paired Stream-K (any grid) or auto asked to pair, in any tile order, fixup and walk."""
    shape, tile = draw(problems(max_tiles=40, max_iters=30))
    machine = draw(machines())
    p = Problem(shape, tile)
    order, fixup, walk = draw(st.sampled_from(ORDERS)), draw(st.sampled_from(policies)), draw(
        st.sampled_from(["forward", "backward"]))
    if draw(st.booleans()):
        grid = draw(st.integers(1, min(p.total_iters, 3 * machine.slots)))
        return make_schedule("stream-k", shape, tile, machine, grid=grid, pair_rows=True, tile_order=order,
                             fixup=fixup, walk=walk)
    return make_schedule("auto", shape, tile, machine, pair_rows=True, sk_backward=draw(st.booleans()),
                         tile_order=order)


def describe(s: Schedule) -> None:
    note(f"{s!r} order={s.tile_order} machine={s.machine} units={s.units.tolist()} offsets={s.cta_offsets.tolist()}")


def lockstep_finishes(s: Schedule, pairs: np.ndarray, clusters_resident: int | None = None, slack: int = 1,
                      size: int = CLUSTER) -> bool:
    """Replay ``s`` as the sm90 kernel runs it with the clusters flagged in ``pairs`` in lockstep: a
    paired CTA consumes its i-th MAC iteration only once its twin consumed i + 1 - ``slack`` (a stage
    is refilled once both CTAs freed it; slack 1 is the tightest ring). A PARTIAL unit's signal
    waits for the end of its CTA's next mainloop (outer_loop.cuh), HANDOFF's and a last PARTIAL's
    go out at once, REDUCE / HANDOFF / FINISH wait for theirs. Clusters are dispatched in order,
    ``clusters_resident`` at a time (None: all), and leave when all their CTAs are done; ``size``: CTAs a
    cluster (a paired CTA waits on every other one of its cluster)."""
    plan = plan_fixup(s)
    offsets = s.cta_offsets.tolist()
    grid = -(-s.grid // size) * size
    offsets += [offsets[-1]] * (grid - s.grid)
    lengths = (s.units[:, 2] - s.units[:, 1]).tolist()
    paired = [bool(pairs[c // size]) for c in range(grid)]
    peers = [[p for p in range(c - c % size, c - c % size + size) if p != c] for c in range(grid)]
    unit = offsets[:-1]  # each CTA's current unit row
    done_iters = [0] * grid  # MAC iterations consumed, over all its units
    in_unit = [0] * grid
    in_fixup = [False] * grid
    pending = [-1] * grid
    signalled = [False] * len(s.units)
    waits = [plan.waits(u).tolist() for u in range(len(s.units))]
    resident = grid // size if clusters_resident is None else clusters_resident
    dispatched = 0
    finished = lambda c: unit[c] == offsets[c + 1]  # noqa: E731
    while True:
        active = sum(1 for g in range(dispatched) if not all(finished(c) for c in range(size * g, size * g + size)))
        while dispatched < grid // size and active < resident:
            dispatched, active = dispatched + 1, active + 1
        moved = False
        for c in range(size * dispatched):
            while not finished(c):
                u = unit[c]
                if not in_fixup[c]:
                    if in_unit[c] < lengths[u]:
                        if paired[c] and any(done_iters[p] < done_iters[c] + 1 - slack for p in peers[c]):
                            break
                        in_unit[c] += 1
                        done_iters[c] += 1
                        moved = True
                        continue
                    if pending[c] >= 0:
                        signalled[pending[c]], pending[c] = True, -1
                    in_fixup[c], moved = True, True
                act = Action(plan.action[u])
                if act in (Action.REDUCE, Action.HANDOFF, Action.FINISH) and not all(signalled[w] for w in waits[u]):
                    break
                if act == Action.PARTIAL and u + 1 < offsets[c + 1]:
                    pending[c] = u
                elif act in (Action.PARTIAL, Action.HANDOFF):
                    signalled[u] = True
                unit[c], in_unit[c], in_fixup[c], moved = u + 1, 0, False, True
        if all(finished(c) for c in range(grid)):
            return True
        if not moved:  # nothing ran, so no cluster left and none can be dispatched
            return False


def _verdict(s: Schedule) -> tuple[np.ndarray, bool]:
    """The rule's pairs for ``s`` and whether its waits point upwards."""
    plan = plan_fixup(s)
    coresident = not waits_only_backward(plan)
    return multicast_groups(build_table(plan), coresident), coresident


@given(paired_schedules())
def test_paired_schedules_cover_every_mac_iteration_once_and_write_every_tile_once(s):
    describe(s)
    p = s.problem
    visits = np.zeros((p.tiles, p.iters_per_tile), dtype=np.int64)
    for tile, kb, ke in s.units.tolist():  # counted here, not by Schedule's own validation
        visits[tile, kb:ke] += 1
    assert (visits == 1).all() and (s.units[:, 2] > s.units[:, 1]).all()
    plan = plan_fixup(s)
    writes = np.isin(plan.action, [Action.WRITE, Action.REDUCE, Action.FINISH])
    later = np.isin(plan.action, [Action.ARRIVE, Action.ATOMIC, Action.DEFER])  # summed at run time or by a pass
    per_tile = np.bincount(s.units[:, 0], weights=writes, minlength=p.tiles)
    deferred = np.bincount(s.units[:, 0], weights=later, minlength=p.tiles) > 0
    assert ((per_tile == 1) | ((per_tile == 0) & deferred)).all()


@given(problems(max_tiles=40, max_iters=30), machines(), st.sampled_from(ORDERS),
       st.sampled_from(["forward", "backward"]), st.data())
def test_paired_stream_k_ctas_are_twins_on_two_tile_rows_of_one_column(problem, machine, order, walk, data):
    """CTAs 2i, 2i + 1 of the first 2S run unit j on tile rows 2r, 2r + 1 of one column over one k
    range; the rest run the odd last row only; each group's iterations within one of each other.
    Where no pair fits (one tile row, too small a grid) it is basic Stream-K."""
    shape, tile = problem
    p = Problem(shape, tile)
    grid = data.draw(st.integers(1, min(p.total_iters, 3 * machine.slots)), label="grid")
    s = make_schedule("stream-k", shape, tile, machine, grid=grid, pair_rows=True, tile_order=order, walk=walk)
    describe(s)
    odd = p.tiles_m % 2
    if p.tiles_m < 2 or grid < 2 + odd:
        assert s == make_schedule("stream-k", shape, tile, machine, grid=grid, tile_order=order, walk=walk)
        return
    tm, tn = tile_coordinates(order, p.tiles_m, p.tiles_n, s.units[:, 0])
    cta = s.unit_cta
    last_row = np.bincount(cta, weights=tm == p.tiles_m - 1, minlength=s.grid) == np.diff(s.cta_offsets)
    last_row &= bool(odd)  # CTAs that run the odd last row only
    pairs = int(np.argmax(np.append(last_row, True))) if odd else s.grid - s.grid % 2
    assert pairs >= 2 and pairs % 2 == 0 and last_row[pairs:].all() and not last_row[:pairs].any()
    for c in range(0, pairs, 2):
        up = slice(int(s.cta_offsets[c]), int(s.cta_offsets[c + 1]))
        down = slice(int(s.cta_offsets[c + 1]), int(s.cta_offsets[c + 2]))
        assert (tm[up] % 2 == 0).all() and np.array_equal(tm[down], tm[up] + 1) and np.array_equal(tn[up], tn[down])
        assert np.array_equal(s.units[up, 1:], s.units[down, 1:])
    iters = s.iters_per_cta
    for group in (iters[:pairs], iters[pairs:]):
        assert len(group) == 0 or group.max() - group.min() <= 1


def test_paired_stream_k_on_the_odd_tile_rows_of_2841x1448x6280():
    """23 x 6 tiles of 128x256x64 on 132 CTAs: 63 super CTAs over the 66 cluster tiles (103-104
    iterations each), the last row's 6 tiles on 6 CTAs after them; turnstile's waits point back."""
    s = make_schedule("stream-k", GemmShape(2841, 1448, 6280), TileShape(128, 256, 64), Machine(132, 1),
                      pair_rows=True, tile_order="grouped-8", fixup="turnstile", walk="backward")
    iters = s.iters_per_cta
    assert s.grid == 132 and iters[:126].min() == 103 and iters[:126].max() == 104 and (iters[126:] == 99).all()
    pairs, coresident = _verdict(s)
    assert not coresident and pairs.tolist() == [1] * 63 + [0] * 3


@settings(max_examples=150, deadline=None)
@given(paired_schedules())
def test_paired_stream_k_pairs_under_every_policy_and_walk(s):
    """Every twin pair of paired Stream-K is kept: turnstile's waits point back in the cluster
    programs, owner-waits' form no cycle (one resident wave), the other policies do not wait."""
    describe(s)
    pairs, coresident = _verdict(s)
    twins, _ = twin_groups(build_table(plan_fixup(s)))
    assert pairs.tolist() == twins.tolist()
    assert coresident == (s.fixup == "owner-waits" and len(plan_fixup(s).wait_units) > 0)


@settings(max_examples=150, deadline=None)
@given(st.one_of(paired_schedules(), schedules()), st.sampled_from(ORDERS), st.data())
def test_clusters_the_rule_pairs_finish_in_lockstep(s, order, data):
    """Replayed in lockstep (the tightest ring), a launch finishes with the clusters the rule pairs:
    every cluster resident at once where its waits point upwards, any number of resident clusters
    in order where they point back. Tiles renumbered in another order now and then (other twins)."""
    if data.draw(st.booleans(), label="renumber"):
        s = Schedule.proven(s.decomposition, s.shape, s.tile, s.units, s.cta_offsets, s.machine, order, s.fixup)
    describe(s)
    pairs, coresident = _verdict(s)
    clusters = -(-s.grid // CLUSTER)
    resident = None if coresident else data.draw(st.integers(1, clusters), label="resident clusters")
    assert lockstep_finishes(s, pairs, resident)


def _partner_waits_through_others() -> Schedule:
    """CTAs 0 and 1 are twins (tile rows 0 and 1, then 2 and 3, of one column; k ranges 8-16, then
    0-12), but under turnstile CTA 0's first unit waits on CTA 3, which waits on CTA 2's second unit,
    which comes after CTA 2's first, which waits on CTA 1's second unit: CTA 1 must run 12 iterations
    while CTA 0 waits, which lockstep forbids."""
    ctas = [[(0, 8, 16), (2, 0, 12)], [(1, 8, 16), (3, 0, 12)], [(3, 12, 16), (0, 0, 4)], [(0, 4, 8)],
            [(1, 0, 8)], [(2, 12, 16)]]
    return Schedule.from_ctas("user", GemmShape(4 * 128, 128, 16 * 64), TileShape(128, 128, 64), ctas,
                              fixup="turnstile")


def test_a_cta_never_pairs_with_one_it_transitively_waits_on():
    s = _partner_waits_through_others()
    twins, _ = twin_groups(build_table(plan_fixup(s)))
    assert twins.tolist() == [1, 0, 0]
    assert lockstep_finishes(s, np.zeros(3, np.int32)) and not lockstep_finishes(s, twins)  # the replay agrees
    assert lockstep_finishes(s, twins, slack=12)  # only a ring of 12 stages would hide it
    pairs, coresident = _verdict(s)
    assert coresident and not pairs.any()


def test_waiting_on_a_twins_earlier_unit_pairs():
    """CTA 1's second unit finishes the tile whose head is CTA 0's first unit, and CTA 0's second the
    one whose head is CTA 1's first (each its twin's earlier unit, before it in the cluster program):
    kept where every cluster is resident (CTA 0 waits on CTA 1: the waits point upwards)."""
    ctas = [[(0, 0, 4), (1, 4, 8)], [(1, 0, 4), (0, 4, 8)]]
    s = Schedule.from_ctas("user", GemmShape(2 * 128, 128, 8 * 64), TileShape(128, 128, 64), ctas, fixup="turnstile")
    pairs, coresident = _verdict(s)
    assert coresident and pairs.tolist() == [1] and lockstep_finishes(s, pairs)


def test_whole_tile_pairs_keep_todays_rule():
    """Grouped data-parallel CTAs pair as before."""
    s = make_schedule("data-parallel", GemmShape(2048, 1024, 512), TileShape(128, 128, 64), Machine(132, 1),
                      tile_order="grouped-8")
    pairs, coresident = _verdict(s)
    assert not coresident and pairs.all()


def _auto_on_h200(shape: GemmShape, dtype: str, **kw) -> Schedule:
    from streamk.gpu.decide.schedule import schedule_for
    from streamk.target import preset

    return schedule_for("auto", shape, dtype, preset("h200"), **kw)


@settings(max_examples=80, deadline=None)
@given(st.integers(128, 8192), st.integers(128, 8192), st.integers(128, 8192), st.sampled_from(["float16", "bfloat16"]))
def test_auto_pairs_only_where_clusters_share_b_and_then_every_stream_k_cta(m, n, k, dtype):
    """On an H200 auto changes only where launches.pair_stream_k holds (128x256x64 or 128x192x64, B's
    rows straddling L2 lines, 16+ iterations a tile) or its 2x2 clusters run (auto_quads,
    persistent_quads, persistent_in_place_of_dp, by_model.wide_persistent_pick), and where pairs hold the launch pairs every CTA that runs a
    partial tile of two paired tile rows."""
    from streamk.gpu.catalogue import spec_for_tile
    from streamk.gpu.clusters import launch_groups
    from streamk.gpu.decide.by_model import WIDE_PERSISTENT_MIN_ITERS
    from streamk.gpu.decide.launches import QUAD_ORDER, pair_stream_k, persistent_in_place_of_dp, persistent_quads_fit
    from streamk.gpu.decide.operands import contiguous_b_row_bytes

    shape = GemmShape(m, n, k)
    plain, s = _auto_on_h200(shape, dtype, multicast=False), _auto_on_h200(shape, dtype)
    note(f"{s!r} {plain!r}")
    spec = spec_for_tile(dtype, s.tile)
    rows, ipt = contiguous_b_row_bytes(k, n, spec), s.problem.iters_per_tile
    if s == plain or s.tile_order == QUAD_ORDER and s.with_tile_order(plain.tile_order) == plain:
        return  # the same, or short whole tiles read in 2x2 blocks (test_clusters_2d)
    if s.tile_order == QUAD_ORDER and (persistent_quads_fit(shape, spec, 132, low=WIDE_PERSISTENT_MIN_ITERS)
                                       or persistent_in_place_of_dp(plain, spec, 132)):
        return  # 128x256 tiles on persistent CTAs in 2x2 clusters, by rule or model (test_clusters_2d, test_by_model)
    assert pair_stream_k(True, spec, rows, ipt)
    plan = plan_fixup(s)
    coresident = not waits_only_backward(plan)
    pairs = launch_groups(build_table(plan), spec, coresident, True, rows, ipt)
    assert pairs is not None
    p = s.problem
    tm, _ = tile_coordinates(s.tile_order, p.tiles_m, p.tiles_n, s.units[:, 0])
    partial = (s.units[:, 1] > 0) | (s.units[:, 2] < ipt)
    on_pairs = np.flatnonzero(np.bincount(s.unit_cta, weights=partial & (tm < p.tiles_m - p.tiles_m % 2),
                                          minlength=s.grid))
    flags = np.repeat(pairs, CLUSTER)[:s.grid]
    assert flags[on_pairs].all()


def test_auto_pairs_the_large_stream_k_shapes():
    """The v41b losses (B rows straddling L2 lines) and aligned rows alike (v151): auto's Stream-K (and the
    hybrid's SK CTAs) paired, nothing else changed."""
    for m, n, k in ((2841, 1448, 6280), (3461, 3000, 6304), (1996, 2136, 7688), (2841, 1536, 6280)):
        s, plain = _auto_on_h200(GemmShape(m, n, k), "float16"), _auto_on_h200(GemmShape(m, n, k), "float16",
                                                                                multicast=False)
        assert s != plain and (s.tile, s.grid, s.fixup, s.tile_order) == (plain.tile, plain.grid, plain.fixup,
                                                                           plain.tile_order)
        pairs, coresident = _verdict(s)
        assert not coresident and pairs.sum() >= 63


def test_gemm_decides_paired_stream_k_by_the_rows_it_reads_b_by():
    """decide() (what gemm() runs) pairs as ``streamk schedule auto --target`` does, whatever B's rows
    (1448 elements apart: 16-byte aligned; 1536: on L2 lines; a host B copied in with padded rows), and
    not where the launch runs without clusters."""
    from streamk.gpu.decide import decide
    from streamk.gpu.decide.operands import Operand
    from streamk.gpu.request import Tuning, request
    from streamk.target import preset

    m, n, k = 2841, 1448, 6280
    target = preset("h200")

    def run(b_stride: int, kind: str = "cuda", tuning: Tuning = Tuning()) -> Schedule:
        a = Operand(None, kind, 0 if kind == "numpy" else 1 << 20, (m, k), (k, 1), "float16")
        b = Operand(None, kind, 0 if kind == "numpy" else 1 << 30, (k, n), (b_stride, 1), "float16")
        return decide(a, b, None, target, request(tuning=tuning)).schedule

    paired, plain = _auto_on_h200(GemmShape(m, n, k), "float16"), _auto_on_h200(GemmShape(m, n, k), "float16",
                                                                                 multicast=False)
    assert run(n) == paired != plain
    assert run(1536) == paired and run(n, "numpy") == paired
    assert run(n, tuning=Tuning(multicast=False)) == plain


@given(problems(max_tiles=40, max_iters=30), machines(), st.sampled_from(ORDERS), st.integers(2, 4))
def test_paired_splits_run_each_tiles_splits_on_twins_of_two_tile_rows(problem, machine, order, splits):
    """sched.paired_splits of a fixed-split: the same grid, policy and order, and CTAs 2i, 2i + 1 of
    the pairs (all but those of an odd last tile row, after them) run unit j on tile rows 2r, 2r + 1
    of one column over one k range; None where no pair fits (one tile row)."""
    from streamk.sched.paired import paired_splits

    shape, tile = problem
    p = Problem(shape, tile)
    s = make_schedule("fixed-split", shape, tile, machine, splits=min(splits, p.iters_per_tile), tile_order=order)
    twins = paired_splits(s)
    if p.tiles_m < 2 or s.grid == p.tiles:
        assert twins is None
        return
    assert twins is not None
    describe(twins)
    assert (twins.grid, twins.fixup, twins.tile_order) == (s.grid, s.fixup, s.tile_order)
    tm, tn = tile_coordinates(order, p.tiles_m, p.tiles_n, twins.units[:, 0])
    single = tm == p.tiles_m - 1 if p.tiles_m % 2 else np.zeros(len(tm), bool)
    lone = np.bincount(twins.unit_cta, weights=single, minlength=twins.grid) > 0
    pairs = int(np.argmax(np.append(lone, True)))  # the CTAs before the odd row's
    assert pairs >= 2 and pairs % 2 == 0 and lone[pairs:].all()
    for c in range(0, pairs, 2):
        up = slice(int(twins.cta_offsets[c]), int(twins.cta_offsets[c + 1]))
        down = slice(int(twins.cta_offsets[c + 1]), int(twins.cta_offsets[c + 2]))
        assert (tm[up] % 2 == 0).all() and np.array_equal(tm[down], tm[up] + 1) and np.array_equal(tn[up], tn[down])
        assert np.array_equal(twins.units[up, 1:], twins.units[down, 1:])


def test_aligned_splits_pair_where_b_rows_straddle_and_splits_are_long():
    """launches.pair_splits on an H200: fixed-split on 128x192x64 of 6531x152x3296 (B rows 304 bytes
    apart, 26 iterations a CTA) runs in twin pairs, nothing else changed; not on 4763x192x4120 (rows of
    384 bytes: whole sectors), nor where splits are shorter than PAIRED_SPLIT_MIN_ITERS."""
    from streamk.gpu.catalogue import spec_for_tile
    from streamk.gpu.decide.launches import PAIRED_SPLIT_MIN_ITERS, pair_splits

    shape = GemmShape(6531, 152, 3296)
    s, plain = (_auto_on_h200(shape, "float16", multicast=m) for m in (True, False))
    assert s != plain and (s.tile, s.grid, s.fixup, s.tile_order) == (plain.tile, plain.grid, plain.fixup,
                                                                       plain.tile_order)
    pairs, _ = _verdict(s)
    assert pairs.all()
    spec = spec_for_tile("float16", s.tile)
    short = make_schedule("fixed-split", shape, s.tile, Machine(132, 1), splits=3)
    assert short.problem.iters_per_tile // 3 < PAIRED_SPLIT_MIN_ITERS
    assert pair_splits(True, spec, 304, plain) and not pair_splits(True, spec, 384, plain)
    assert not pair_splits(True, spec, 304, short) and not pair_splits(False, spec, 304, plain)
    s, plain = (_auto_on_h200(GemmShape(4763, 192, 4120), "float16", multicast=m) for m in (True, False))
    assert s == plain and s.grid > s.problem.tiles
