"""c_tpc (LOG.md v49): a wave of at most half the SMs, one CTA an SM, runs each MAC iteration c_tpc
faster (each CTA alone on its TPC); an entry without the term predicts exactly as before."""

from __future__ import annotations

import pytest

from streamk.calibrate.design import TPC_PREFIX, probes
from streamk.calibrate.predict import predict_from
from streamk.schedule import Schedule
from streamk.shapes import GemmShape, Machine, TileShape

TILE = TileShape(128, 128, 64)
SMS = 132
VALUES = {"launch": 1.0, "a": 4.0, "c1": 0.34, "b": 2.0, "d": 2.0, "pass_launch": 1.0, "d_reduce": 1.0,
          "c_free": 0.10, "l2_us_per_mb": 0.079}


def dp(tiles: int, iters: int) -> Schedule:
    shape = GemmShape(TILE.bm, TILE.bn * tiles, TILE.bk * iters)
    return Schedule.from_ctas("dp", shape, TILE, [[(t, 0, iters)] for t in range(tiles)], machine=Machine(SMS, 1))


@pytest.mark.parametrize("tiles", [16, 33, 66, 67, 99, 132, 200])
def test_term_absent_or_zero_predicts_as_before(tiles: int) -> None:
    s = dp(tiles, 32)
    assert predict_from(s, {**VALUES, "c_tpc": 0.0}, SMS, 1) == predict_from(s, VALUES, SMS, 1)


@pytest.mark.parametrize("tiles,faster", [(16, True), (33, True), (66, True), (67, False), (99, False),
                                          (132, False)])
def test_only_waves_of_at_most_half_the_sms_run_faster(tiles: int, faster: bool) -> None:
    iters, c_tpc = 32, 0.05
    s = dp(tiles, iters)
    gain = predict_from(s, VALUES, SMS, 1) - predict_from(s, {**VALUES, "c_tpc": c_tpc}, SMS, 1)
    assert gain == pytest.approx(c_tpc * iters if faster else 0.0, abs=1e-9), f"{tiles} CTAs on {SMS} SMs"


def test_small_last_wave_gets_the_relief_for_its_steps() -> None:
    iters, c_tpc = 32, 0.05
    s = dp(SMS + 20, iters)  # a full wave, then 20 CTAs alone on their TPCs
    gain = predict_from(s, VALUES, SMS, 1) - predict_from(s, {**VALUES, "c_tpc": c_tpc}, SMS, 1)
    assert gain == pytest.approx(c_tpc * iters, abs=1e-9)


def test_shared_residency_is_untouched() -> None:
    s = Schedule.from_ctas("dp", GemmShape(TILE.bm, TILE.bn * 264, TILE.bk * 8), TILE,
                           [[(t, 0, 8)] for t in range(264)], machine=Machine(SMS, 2))
    vals = {**VALUES, "c_shared": 0.6}
    assert predict_from(s, {**vals, "c_tpc": 0.05}, SMS, 2) == predict_from(s, vals, SMS, 2)


def test_tpc_probes_run_quarters_of_the_sms_at_equal_work() -> None:
    design = [p for p in probes(TILE, SMS, 1, 50e6, 2, tpc=True) if p.family == "dp-tpc"]
    assert [p.schedule.grid for p in design] == [33, 66, 99, 132]
    assert {p.schedule.problem.iters_per_tile for p in design} == {128}
    assert all(p.schedule.decomposition.startswith(TPC_PREFIX) for p in design)
    assert not [p for p in probes(TILE, SMS, 1, 50e6, 2) if p.family == "dp-tpc"]


def test_fit_recovers_c_tpc_from_the_tpc_probes_and_prices_it_only_with_them() -> None:
    # the calibrated simulator under known terms as the device (tests/test_calibrate.py's way)
    from streamk.calibrate.fit import calibrate_with

    sms, l2 = 32, 12e6
    truth = {**VALUES, "c_free": 0.06, "c_tpc": 0.04, "unit": 1.0, "atomic": 3.0, "dram_us_per_mb": 1.5,
             "c_l2": 0.05}

    def device(schedules, dtype, pacing=None):
        return [predict_from(s, truth, sms, 1, l2_bytes=l2) for s in schedules]

    _, with_probes = calibrate_with(device, "float16", TILE, sms, 1, l2, quick=True, tpc=True)
    fitted = dict(zip(with_probes.names, with_probes.values))
    assert fitted["c_tpc"] == pytest.approx(0.04, abs=1e-6) and fitted["c_free"] == pytest.approx(0.06, abs=1e-6)
    _, without = calibrate_with(device, "float16", TILE, sms, 1, l2, quick=True)
    assert "c_tpc" not in without.names
