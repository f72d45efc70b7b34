"""Kernels of two CTAs an SM: partial waves' L2 floor, and the pair's fixed costs (LOG.md v53).

The H200's 64x128x64 (then two CTAs an SM; one since LOG.md v75) data-parallel launches of 133-263
CTAs were predicted 20-24% fast: the L2 floor was taken at the wave's CTAs, as if each had an SM's share of the L2, where the SMs
holding two CTAs pace the wave. These tests check on the CPU that a wave past one CTA an SM is floored
at the full residency's pace, and that one of at most one CTA an SM is priced as before. The same
tile's and the sm80 128x128x32's launches at shared residency were predicted fast by 1.5-2 us a wave
at shallow k (both tiles, every variant): ``a_shared``, once per CTA while two share an SM. The fit
prices it from the dp-waves probes (shared residency) against the one-CTA probes' launch + a (LOG.md v54).
"""

import json

import pytest

from streamk.calibrate.model import Calibration, term_names
from streamk.calibrate.predict import floor_ctas, predict_from
from streamk.sched import make_schedule
from streamk.schedule import Schedule
from streamk.shapes import GemmShape, Machine, TileShape
from streamk.target import preset

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


# a_shared: the pair's fixed costs on one SM (LOG.md v53), on the shipped kernel of two CTAs an SM that has it
SHARED_TILE = TileShape(128, 128, 32)
SHIPPED = preset("h200").kernel("float16", SHARED_TILE).calibration


def sk(grid: int) -> Schedule:
    """A Stream-K launch of ``grid`` CTAs on a shape of many shallow tiles."""
    return make_schedule("stream-k", GemmShape(128 * 20, 128 * 20, 32 * 12), SHARED_TILE, Machine(SMS, 2), grid=grid)


def test_a_shared_round_trips_and_only_a_kernel_of_shared_ctas_has_it():
    assert "a_shared" in term_names(2) and "a_shared" not in term_names(1)
    assert SHIPPED.us("a_shared") > 0
    again = Calibration.from_json_dict(json.loads(json.dumps(SHIPPED.to_json_dict())))
    assert again == SHIPPED and again.us("a_shared") == SHIPPED.us("a_shared")


def test_a_shared_slows_each_shared_cta_and_leaves_a_cta_alone_on_its_sm_and_absent_as_before():
    values = {t.name: t.us for t in SHIPPED.terms}
    without = {**values, "a_shared": 0.0}
    absent = {n: v for n, v in values.items() if n != "a_shared"}
    for grid in (2 * SMS, SMS):
        s = sk(grid)
        with_it, zero, gone = (predict_from(s, v, SMS, 2, l2_bytes=SHIPPED.l2_bytes) for v in (values, without, absent))
        assert zero == gone
        if grid > SMS:  # every CTA pays it once, in parallel: the makespan grows by about it
            assert with_it - zero == pytest.approx(values["a_shared"], rel=0.2)
        else:
            assert with_it == zero
    # data-parallel waves of two CTAs an SM: a_shared once a wave
    for tiles, waves in ((200, 1), (2 * SMS, 1), (3 * SMS, 2)):
        s = make_schedule("data-parallel", GemmShape(SHARED_TILE.bm * tiles, SHARED_TILE.bn, SHARED_TILE.bk * IPT),
                          SHARED_TILE, Machine(SMS, 2))
        gap = predict_from(s, values, SMS, 2) - predict_from(s, without, SMS, 2)
        assert gap == pytest.approx(waves * values["a_shared"])


# The fit's own a_shared (LOG.md v54): the dp-waves' intercept, above the one-CTA probes' launch + a
H200_L2 = 62914560
FIT_SMS = 32  # every probe is whole waves: the terms do not depend on the SM count; 32 is fast


def _h200_device(tile: TileShape, ctas_per_sm: int, noise: float, seed: int, **extra: float):
    """The calibrated simulator under the shipped H200 FP16 ``tile`` entry (with ``extra`` terms) as the GPU,
    the pack pass first where it packs, times (1 + noise N(0, 1))."""
    import numpy as np

    from streamk.gpu.decide.tiles import packed_bytes

    truth = {**{t.name: t.us for t in preset("h200").kernel("float16", tile).calibration.terms}, **extra}
    packs = lambda shape: packed_bytes(shape, "float16", tile) / 1e6  # noqa: E731
    rng = np.random.default_rng(seed)

    def timer(schedules, dtype):
        exact = np.array([predict_from(s, truth, FIT_SMS, ctas_per_sm, l2_bytes=H200_L2, packed_mb=packs(s.shape))
                          for s in schedules])
        return exact * (1 + noise * rng.standard_normal(len(exact)))
    return truth, timer, packs


@pytest.mark.slow(9)
@pytest.mark.parametrize("tile", [TileShape(128, 64, 64), SHARED_TILE])
def test_fit_recovers_a_shared_from_the_shared_waves_and_the_one_cta_probes(tile: TileShape) -> None:
    """On the shipped TMA tile of two CTAs an SM (whose fit left a_shared out) and on 128x128x32, a
    device charging 1.5 us a shared CTA (128x128x32's shipped value)."""
    from streamk.calibrate.fit import calibrate_with
    from streamk.gpu.catalogue import spec_for_tile

    truth, timer, packs = _h200_device(tile, 2, 0.02, seed=1, a_shared=1.5)
    _, result = calibrate_with(timer, "float16", tile, FIT_SMS, 2, H200_L2, quick=True, packed_mb=packs,
                               row32=spec_for_tile("float16", tile).tma)
    fitted, se = dict(zip(result.names, result.values)), dict(zip(result.names, result.errors))
    # se 0.12-0.27 us at 2% noise (full design 0.15-0.34; LOG.md v54): 3 se, and informative (< 20% of 1.5 us)
    assert abs(fitted["a_shared"] - truth["a_shared"]) < 3 * se["a_shared"] and se["a_shared"] < 0.3, (fitted, se)
    for name in ("launch", "a", "c1", "c_shared"):  # the terms the same probes pin stay where they were
        assert abs(fitted[name] - truth[name]) < 3.5 * se[name], (name, fitted[name], truth[name], se[name])


def test_a_one_cta_kernels_fit_never_prices_a_shared() -> None:
    from streamk.calibrate.fit import calibrate_with

    tile = TileShape(128, 128, 64)
    # a device that would charge it at shared residency: a kernel of one CTA an SM never runs there
    truth, timer, packs = _h200_device(tile, 1, 0.0, seed=0, a_shared=1.5)
    design, result = calibrate_with(timer, "float16", tile, FIT_SMS, 1, H200_L2, quick=True, packed_mb=packs)
    assert any(p.schedule.grid > FIT_SMS for p in design)  # its dp-waves run several waves of one CTA an SM
    assert "a_shared" not in result.names and "c_shared" not in result.names
    assert result.rms_rel_residual < 0.02, result.rms_rel_residual
