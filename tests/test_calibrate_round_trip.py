"""A partial's round trip as the GPU runs it (LOG.md v58). Under the calibrated model, whose ``a``
includes writing the output tile, a CTA whose every unit is a PARTIAL (fixed-split's peers) writes
no tile: its store takes that time, so it frees its SM with its mainloop while the owner still
sees the partial ``b`` later. A last arrival that finds every other contributor arrived stores
and reads back its own partial alone, at ``handoff`` in place of b + d. The paper's model and
every calibration probe predict as before."""

from __future__ import annotations

from dataclasses import replace

import pytest

import streamk.calibrate.predict as predict
from streamk.calibrate.predict import predict_from
from streamk.costs import Costs
from streamk.schedule import Schedule
from streamk.sched import make_schedule
from streamk.shapes import GemmShape, Machine, TileShape
from streamk.sim import simulate
from streamk.target import preset, stores_apart

TILE = TileShape(128, 128, 64)
COSTS = Costs(a=4.0, b=4.7, c=0.34, d=1.0)
VALUES = {"launch": 1.0, "a": 4.0, "c1": 0.34, "b": 4.7, "d": 1.0, "pass_launch": 1.0, "d_reduce": 1.0}


def fixed_split(tiles: int, sms: int, iters: int = 8) -> Schedule:
    """``tiles`` tiles of ``iters`` MAC iterations in one row, each split two ways, on ``sms`` SMs."""
    return make_schedule("fixed-split", GemmShape(TILE.bm, TILE.bn * tiles, TILE.bk * iters), TILE,
                         Machine(sms, 1), splits=2)


def test_split_peer_frees_its_sm_with_its_mainloop_and_its_partial_lands_b_later() -> None:
    s = fixed_split(3, 4)  # 6 CTAs on 4 SMs: the third pair runs where the first wave's peers ran
    t = simulate(s, COSTS, a_writes_c=True)
    mainloop = COSTS.a + 4 * COSTS.c
    peers, owners = [1, 3, 5], [0, 2, 4]
    for p in peers:
        assert t.cta_end[p] == pytest.approx(t.cta_start[p] + mainloop), (p, t.cta_start[p], t.cta_end[p])
    for o in owners:  # its peer started with it: waits b past their mainloops, then reads
        assert t.cta_end[o] == pytest.approx(t.cta_start[o] + mainloop + COSTS.b + COSTS.d), o
    assert t.cta_start[4] == pytest.approx(mainloop)  # on a first-wave peer's SM
    # before: the peers held their SMs for b, and the third pair started b later
    before = simulate(s, COSTS)
    assert before.makespan - t.makespan == pytest.approx(COSTS.b)
    assert not t.deadlock


@pytest.mark.parametrize("tiles", [1, 2, 66])
def test_one_wave_is_timed_by_its_owners_as_before(tiles: int) -> None:
    s = fixed_split(tiles, 132)
    assert simulate(s, COSTS, a_writes_c=True).makespan == pytest.approx(simulate(s, COSTS).makespan)


def uneven_pair(first: int, second: int) -> Schedule:
    """One tile split in two under last-arrival: ``first`` iterations, then ``second``."""
    shape = GemmShape(TILE.bm, TILE.bn, TILE.bk * (first + second))
    ctas = [[(0, 0, first)], [(0, first, first + second)]]
    return Schedule.from_ctas("pair", shape, TILE, ctas, machine=Machine(132, 1), fixup="last-arrival")


def test_last_arrival_alone_pays_handoff_for_its_own_partial() -> None:
    s = uneven_pair(4, 40)  # the first arrives (a + 4c + b) long before the second's mainloop ends
    h = 2.2
    gain = predict_from(s, VALUES, 132, 1) - predict_from(s, {**VALUES, "handoff": h}, 132, 1)
    # before: store b, then read both partials; alone: handoff (its own, stored and read back) + d
    assert gain == pytest.approx(VALUES["b"] + VALUES["d"] - h, abs=1e-9)


def test_contributors_that_arrive_together_keep_b_and_d() -> None:
    s = uneven_pair(20, 20)
    assert predict_from(s, {**VALUES, "handoff": 2.2}, 132, 1) == predict_from(s, VALUES, 132, 1)


@pytest.mark.parametrize("tile", [TileShape(128, 128, 64), TileShape(64, 128, 64), TileShape(128, 128, 32)])
def test_no_calibration_probe_moves(tile: TileShape, monkeypatch: pytest.MonkeyPatch) -> None:
    from streamk.calibrate.design import probes
    from streamk.calibrate.predict import predict_us

    target = preset("h200")
    cal = target.kernel("float16", tile).calibration
    design = probes(tile, target.sms, cal.ctas_per_sm, cal.l2_bytes, 2, quick=True)
    now = [predict_us(p.schedule, cal, target.sms) for p in design]
    plain = predict.simulate
    monkeypatch.setattr(predict, "simulate", lambda *args, **kw: plain(*args, **{**kw, "a_writes_c": False}))
    assert [predict_us(p.schedule, cal, target.sms) for p in design] == now


def test_a_separate_reduce_partial_before_the_ctas_next_unit_drains_under_that_units_mainloop() -> None:
    """Under separate-reduce no CTA of the grid waits on a partial (DEFER), so a CTA's store before its
    next unit drains under that unit's mainloop and its next store waits for it: the CTA pays what of
    b the mainloop does not cover; its last store is on its path, as the reduce pass reads every
    partial (LOG.md v105). The paper's model keeps both stores in series."""
    shape = GemmShape(TILE.bm, TILE.bn * 3, TILE.bk * 32)  # three tiles of 32 iterations
    ctas = [[(0, 0, 24)], [(0, 24, 32), (1, 0, 16)], [(1, 16, 32), (2, 0, 8)], [(2, 8, 32)]]
    s = Schedule.from_ctas("stream-k", shape, TILE, ctas, machine=Machine(132, 1), fixup="separate-reduce")
    a, b, c = COSTS.a, COSTS.b, COSTS.c
    t = simulate(s, COSTS, a_writes_c=True)
    assert 16 * c > b > 8 * c  # CTA 1's second mainloop covers its first store, CTA 2's does not
    assert t.cta_end[1] == pytest.approx(a + 8 * c + 16 * c + b)
    assert t.cta_end[2] == pytest.approx(a + 16 * c + b + b)
    before = simulate(s, COSTS)
    assert before.cta_end[1] == pytest.approx(a + 24 * c + 2 * b)
    assert before.cta_end[2] == pytest.approx(a + 24 * c + 2 * b)
    shared = simulate(replace(s, machine=Machine(132, 2)), COSTS, a_writes_c=True)  # co-resident CTAs: in series
    assert shared.cta_end[1] - shared.cta_start[1] == pytest.approx(a + 24 * c + 2 * b)


def test_an_sm90_separate_reduce_partial_before_the_ctas_next_unit_leaves_its_path() -> None:
    """On the sm90 kernels the producer warp issues the next unit's loads while the consumers store, so a
    CTA's separate-reduce partial before its next unit costs its path nothing, however short that unit;
    the sm80 kernels keep what the next mainloop does not cover (auto's 128x128x64 separate-reduce runs
    were predicted ~20% slow with it; LOG.md v111). The calibrated model knows which by the tile."""
    ctas = [[(0, 0, 24)], [(0, 24, 32), (1, 0, 16)], [(1, 16, 32), (2, 0, 8)], [(2, 8, 32)]]

    def stream_k(tile: TileShape) -> Schedule:
        shape = GemmShape(tile.bm, tile.bn * 3, tile.bk * 32)  # three tiles of 32 iterations
        return Schedule.from_ctas("stream-k", shape, tile, ctas, machine=Machine(132, 1), fixup="separate-reduce")

    s = stream_k(TILE)
    a, b, c = COSTS.a, COSTS.b, COSTS.c
    assert b > 8 * c  # CTA 2's second mainloop does not cover its first store
    apart = simulate(s, COSTS, a_writes_c=True, stores_apart=True)
    assert apart.cta_end[2] == pytest.approx(a + 24 * c + b)
    assert simulate(s, COSTS, a_writes_c=True).cta_end[2] == pytest.approx(a + 16 * c + 2 * b)
    shared = simulate(replace(s, machine=Machine(132, 2)), COSTS, a_writes_c=True, stores_apart=True)
    assert shared.cta_end[2] - shared.cta_start[2] == pytest.approx(a + 24 * c + 2 * b)  # co-resident: in series
    sm80 = stream_k(TileShape(128, 128, 32))  # the same CTAs on the paper's sm80 tile, priced by the same terms
    assert stores_apart(TILE) and not stores_apart(sm80.tile)
    assert predict_from(sm80, VALUES, 132, 1) - predict_from(s, VALUES, 132, 1) == pytest.approx(b - 8 * c)


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_the_h200_reduce_pass_costs_a_chain_of_its_partials_and_no_launch(dtype: str) -> None:
    """Each block of the sliced reduce pass reads its tile's partials two at a time, a chain of L2 round
    trips, and PDL launches it under the main kernel: auto's 128x128x64 runs of 4-6 tiles split 22-46 ways
    were predicted 16% fast and those of 13-26 tiles split 6-11 ways 13% slow at 3.6 us a pass and 0.03 us a
    partial (LOG.md v116). The two dtypes' passes sum the same FP32 partials."""
    cal = preset("h200").kernel(dtype, TILE).calibration
    terms = {t.name: t.us for t in cal.terms}

    def reduce_pass(tiles: int, ways: int) -> float:
        """The pass's price behind 132 CTAs of one unit each: ``tiles`` tiles of 132 iterations split ``ways`` ways."""
        iters = 132
        ctas = [[(t, i * iters // ways, (i + 1) * iters // ways)] for t in range(tiles) for i in range(ways)]
        s = Schedule.from_ctas("split", GemmShape(TILE.bm, TILE.bn * tiles, TILE.bk * iters), TILE, ctas,
                               machine=Machine(132, 1), fixup="separate-reduce")
        timeline, _ = predict.calibrated_timeline(s, cal, 132)
        assert predict.predict_us(s, cal, 132) == pytest.approx(terms["launch"] + timeline.makespan)  # no pass launch
        return timeline.makespan - float(timeline.cta_end.max())

    assert reduce_pass(4, 33) == pytest.approx(33 * terms["d_reduce"])
    assert reduce_pass(33, 4) == pytest.approx(4 * terms["d_reduce"])
    assert reduce_pass(4, 33) - reduce_pass(33, 4) > 5.0  # the chain of 33 partials, against 4
