"""c_row32: a MAC iteration whose A and B box rows start off a 32-byte boundary costs more (LOG.md v41d).

On the H200 fidelity runs the data-parallel launches below one wave of deep tiles were predicted
16% fast; what set them apart was k and n being odd multiples of 8 (every other row of A or B 16
bytes off a 32-byte sector), at every grid. These tests check the term on the CPU: its share, that
it stretches every MAC iteration by 1 + share c_row32 / c1 and nothing else, that a partial-wave
deep-k DP launch on such rows costs more per iteration than its aligned twin and the more the
deeper, and that the dp-row32 probes let the fit recover it.
"""

import numpy as np
import pytest

from streamk.calibrate.design import probes
from streamk.calibrate.fit import calibrate_with
from streamk.calibrate.predict import predict_from
from streamk.calibrate.traffic import row32_share
from streamk.sched import make_schedule
from streamk.shapes import GemmShape, Machine, TileShape

TILE = TileShape(128, 128, 64)  # the sm90 TMA tile the term was fitted on
SMS = 132
L2 = 62914560
# the shipped H200 FP16 128x128x64 entry's order of magnitude, chosen for the test, not read from it
TERMS = {"launch": 1.36, "a": 4.0, "c1": 0.31, "b": 3.8, "d": 0.9, "pass_launch": 3.5, "d_reduce": 0.0,
         "unit": 2.4, "dram_us_per_mb": 0.22, "atomic": 5.5, "c_free": 0.066, "c_l2": 0.062, "l2_us_per_mb": 0.1,
         "c_row32": 0.24}


def dp(shape: GemmShape):
    return make_schedule("data-parallel", shape, TILE, Machine(SMS, 1))


def per_iteration(shape: GemmShape, values: dict) -> float:
    """A one-wave DP launch's time less launch and a, per MAC iteration of a tile."""
    s = dp(shape)
    assert s.grid <= SMS, shape
    return (predict_from(s, values, SMS, 1, l2_bytes=L2) - values["launch"] - values["a"]) / s.problem.iters_per_tile


def test_row32_share_counts_the_box_rows_16_bytes_off_a_32_byte_sector():
    assert row32_share(GemmShape(231, 560, 7168), TILE, 2) == 0  # k, n multiples of 16: every row on a sector
    assert row32_share(GemmShape(213, 5624, 2488), TILE, 2) == 0.5  # both odd multiples of 8: half the rows
    assert row32_share(GemmShape(213, 5632, 2488), TILE, 2) == 0.25  # A's 128 rows half off, B's 2 x 64 on
    assert row32_share(GemmShape(213, 5624, 2496), TILE, 2) == 0.25
    assert row32_share(GemmShape(213, 5624, 2487), TILE, 2) == 0.25  # A not 16-byte aligned: packed, not counted
    # the wide tile reads 4 B boxes of 64 rows a step: B's share weighs 256 rows against A's 128
    assert row32_share(GemmShape(213, 5624, 2496), TileShape(128, 256, 64), 2) == pytest.approx(0.5 * 256 / 384)
    assert row32_share(GemmShape(200, 300, 500), TileShape(64, 64, 16), 8) == 0  # FP64 rows: 8-byte elements, k 500 -> 4000 B


@pytest.mark.parametrize("shape", [GemmShape(213, 5624, 2488), GemmShape(556, 328, 5736), GemmShape(3000, 4000, 1000)])
def test_the_term_stretches_each_mac_iteration_by_its_share_and_nothing_else(shape):
    off = dict(TERMS, c_row32=0.0)
    share = row32_share(shape, TILE, 2)
    for name in ("data-parallel", "stream-k"):
        s = make_schedule(name, shape, TILE, Machine(SMS, 1))
        with_term = predict_from(s, TERMS, SMS, 1, l2_bytes=L2)
        without = predict_from(s, off, SMS, 1, l2_bytes=L2)
        assert with_term >= without, (name, shape)
        if share == 0:
            assert with_term == without, (name, shape)
    # a one-wave DP launch: exactly the stretch 1 + share c_row32 / c1 on its per-iteration cost
    if dp(shape).grid <= SMS:
        ratio = per_iteration(shape, TERMS) / per_iteration(shape, off)
        assert ratio == pytest.approx(1 + share * TERMS["c_row32"] / TERMS["c1"], rel=1e-9), shape


def test_a_partial_wave_deep_dp_launch_on_rows_off_32_bytes_costs_more_per_iteration_the_deeper_it_is():
    """213x5624x2488 (88 tiles of 39 iterations: k and n odd multiples of 8) against its aligned twin
    of the same tiles and iterations (k and n 8 more): the per-iteration cost rises by the term, the
    launch's excess grows with k and with c_row32, and a full wave of aligned rows is not touched."""
    off, on = GemmShape(213, 5624, 2488), GemmShape(213, 5632, 2496)
    assert dp(off).grid == dp(on).grid == 88 and dp(off).problem.iters_per_tile == dp(on).problem.iters_per_tile == 39
    assert per_iteration(off, TERMS) > per_iteration(on, TERMS)
    assert per_iteration(on, TERMS) == per_iteration(on, dict(TERMS, c_row32=0.0))

    def excess(k: int, c_row32: float = TERMS["c_row32"]) -> float:
        values = dict(TERMS, c_row32=c_row32)
        return (predict_from(dp(GemmShape(213, 5624, k)), values, SMS, 1, l2_bytes=L2)
                - predict_from(dp(GemmShape(213, 5624, k)), dict(values, c_row32=0.0), SMS, 1, l2_bytes=L2))
    deeper = [excess(k) for k in (504, 1528, 2488, 4024, 8120)]  # 8 ... 127 iterations, k odd multiples of 8
    assert all(x > 0 for x in deeper) and np.all(np.diff(deeper) > 0), deeper
    growing = [excess(2488, c) for c in (0.0, 0.1, 0.2, 0.4)]
    assert growing[0] == 0 and np.all(np.diff(growing) > 0), growing


@pytest.mark.slow(4)
def test_the_dp_row32_probes_pin_c_row32_only_on_kernels_that_read_boxes_in_place():
    plain = probes(TILE, SMS, 1, L2, 2)
    design = probes(TILE, SMS, 1, L2, 2, row32=True)
    row32 = [p for p in design if p.family == "dp-row32"]
    assert len(design) == len(plain) + 3 and len(row32) == 3 and not any(p.family == "dp-row32" for p in plain)
    assert not any(row32_share(p.schedule.shape, TILE, 2) for p in plain)
    twins = {p.label: p.schedule for p in plain if p.family in ("dp-one-per-sm", "dp-partial")}
    for p in row32:  # the aligned probe of the same tiles and iterations, k and n 16 bytes short
        assert row32_share(p.schedule.shape, TILE, 2) == 0.5
        twin = twins["sms/4" if p.label.startswith("sms/4") else p.label]
        assert p.schedule.shape == GemmShape(twin.shape.m, twin.shape.n - 8, twin.shape.k - 8)
        assert (p.schedule.grid, p.schedule.problem.iters_per_tile) == (twin.grid, twin.problem.iters_per_tile)

    def timer(schedules, dtype):
        return np.array([predict_from(s, TERMS, SMS, 1, l2_bytes=L2) for s in schedules])
    _, result = calibrate_with(timer, "float16", TILE, SMS, 1, L2, row32=True)
    fitted = dict(zip(result.names, result.values))
    assert fitted["c_row32"] == pytest.approx(TERMS["c_row32"], rel=1e-3), fitted
    _, without = calibrate_with(timer, "float16", TILE, SMS, 1, L2)
    assert "c_row32" not in without.names


def test_a_pair_multicasting_b_requests_half_of_bs_off_sector_rows():
    shape = GemmShape(213, 5624, 2496)  # only B's rows off: B's part of the share halves, A's stays
    assert row32_share(shape, TILE, 2, b_requests=0.5) == pytest.approx(row32_share(shape, TILE, 2) / 2)
    both = GemmShape(213, 5624, 2488)
    assert row32_share(both, TILE, 2, b_requests=0.5) == pytest.approx(0.25 + 0.125)
    s = dp(GemmShape(1024, 5624, 2488))
    alone = predict_from(s, TERMS, SMS, 1, l2_bytes=L2)
    paired = predict_from(s, TERMS, SMS, 1, l2_bytes=L2, requests=(1.0, 0.5))
    half = predict_from(s, TERMS, SMS, 1, l2_bytes=L2, requests=(1.0, 0.75))
    quads = predict_from(s, TERMS, SMS, 1, l2_bytes=L2, requests=(0.5, 0.5))  # 2x2 clusters share A too
    assert quads < paired < half < alone
    aligned = dp(GemmShape(1024, 5632, 2496))  # no row off a sector: pairing changes nothing the model prices
    assert predict_from(aligned, TERMS, SMS, 1, l2_bytes=L2, requests=(0.5, 0.5)) == predict_from(aligned, TERMS, SMS,
                                                                                                   1, l2_bytes=L2)
