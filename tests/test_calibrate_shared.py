"""Kernels of two CTAs an SM on partial waves (LOG.md v53).

The H200's 64x128x64 (two CTAs an SM) data-parallel launches of 133-263 CTAs were predicted 20-24%
fast: the L2 floor was taken at the wave's CTAs, as if each had an SM's share of the L2, where the SMs
holding two CTAs pace the wave. These tests check on the CPU that a wave past one CTA an SM is floored
at the full residency's pace, and that one of at most one CTA an SM is priced as before.
"""

import pytest

from streamk.calibrate.predict import floor_ctas, predict_from
from streamk.sched import make_schedule
from streamk.shapes import GemmShape, Machine, TileShape

TILE = TileShape(64, 128, 64)
SMS = 132
IPT = 16
BOX_MB = (TILE.bm + TILE.bn) * TILE.bk * 2 / 1e6
# the shipped H200 FP16 64x128x64 entry's order of magnitude, chosen for the test: the floor binds
# past about 132 CTAs (132 x 0.0246 MB x 0.1 us/MB = 0.32 us >= c1)
TERMS = {"launch": 2.0, "a": 1.0, "c1": 0.31, "c_shared": 0.31, "b": 3.0, "d": 0.8, "pass_launch": 0.0,
         "d_reduce": 0.1, "c_free": 0.15, "l2_us_per_mb": 0.1}


def dp(tiles: int) -> float:
    s = make_schedule("data-parallel", GemmShape(TILE.bm * tiles, TILE.bn, TILE.bk * IPT), TILE, Machine(SMS, 2))
    return predict_from(s, TERMS, SMS, 2)


def test_floor_ctas_counts_the_busiest_sms_past_one_cta_an_sm():
    assert [floor_ctas(b, SMS) for b in (1, 66, SMS)] == [1, 66, SMS]
    assert [floor_ctas(b, SMS) for b in (SMS + 1, 200, 2 * SMS, 2 * SMS + 1)] == [2 * SMS] * 3 + [3 * SMS]


@pytest.mark.parametrize("tiles", [SMS + 1, 200, 2 * SMS - 1])
def test_a_partial_shared_wave_runs_at_the_full_residencys_pace(tiles):
    full = 2 * SMS * BOX_MB * TERMS["l2_us_per_mb"]
    assert dp(tiles) == pytest.approx(TERMS["launch"] + TERMS["a"] + IPT * full)
    assert dp(tiles) == pytest.approx(dp(2 * SMS))


def test_a_wave_of_one_cta_an_sm_is_priced_as_before():
    for tiles in (8, 100, SMS):
        c = max(TERMS["c1"] - TERMS["c_free"] * (1 - tiles / SMS), tiles * BOX_MB * TERMS["l2_us_per_mb"])
        assert dp(tiles) == pytest.approx(TERMS["launch"] + TERMS["a"] + IPT * c)
