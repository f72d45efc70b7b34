"""c_scatter (LOG.md v66): a MAC iteration stretches by 1 + share c_scatter / c1, share the reads of A
and B slices that no CTA read in the steps just before, beyond data-parallel's (``traffic.scattered_share``).
Walked forwards, Stream-K starts each CTA at its own k offset; walked backwards every CTA starts its
first unit at k = 0 and ends its last at the tile's end, in step: the H200 measured the backward
turnstile 5-20% faster on grids of several tiles a CTA, which the model priced the same before. No
calibration probe scatters, so the fit never sees the term and leaves it out."""

from __future__ import annotations

import pytest

from streamk.calibrate.design import probes
from streamk.calibrate.fidelity import resolve
from streamk.calibrate.predict import predict_from, predict_us
from streamk.calibrate.traffic import scattered_share
from streamk.shapes import GemmShape, Machine, TileShape
from streamk.sched.registry import make_schedule
from streamk.target import preset

TILE = TileShape(128, 128, 64)
SMS = 132
SHAPE = GemmShape(1206, 3456, 1112)  # 270 tiles of 18 iterations: about two a CTA (seed 4267)


def test_no_probe_of_the_design_scatters() -> None:
    for probe in probes(TILE, SMS, 1, 50e6, 2, quick=True):
        assert scattered_share(probe.schedule, min(probe.schedule.grid, SMS)) == 0.0, probe.label


def test_forward_walk_scatters_more_than_backward() -> None:
    machine = Machine(SMS, 1)
    dp = make_schedule("data-parallel", SHAPE, TILE, machine)
    forward = make_schedule("stream-k", SHAPE, TILE, machine, grid=SMS)
    backward = make_schedule("stream-k", SHAPE, TILE, machine, grid=SMS, fixup="turnstile", walk="backward")
    assert scattered_share(dp, SMS) == 0.0
    assert scattered_share(forward, SMS) > scattered_share(backward, SMS) + 0.1 > 0.1


def test_term_absent_or_zero_predicts_as_before() -> None:
    cal = preset("h200").kernel("float16", TILE).calibration
    values = {t.name: t.us for t in cal.terms}
    s = make_schedule("stream-k", SHAPE, TILE, Machine(SMS, 1), grid=SMS)
    without = {k: v for k, v in values.items() if k != "c_scatter"}
    assert predict_from(s, {**values, "c_scatter": 0.0}, SMS, 1) == predict_from(s, without, SMS, 1)
    assert predict_from(s, values, SMS, 1) > predict_from(s, without, SMS, 1)


@pytest.mark.parametrize("tile", ["128x128x64", "128x192x64", "64x256x64"])
def test_shipped_h200_prices_the_backward_turnstile_faster(tile: str) -> None:
    target = preset("h200")
    forward = resolve(f"stream-k#{tile}", SHAPE, "float16", target)
    backward = resolve(f"stream-k!turnstile#{tile}+back", SHAPE, "float16", target)
    cal = target.kernel("float16", forward.tile).calibration
    assert cal.us("c_scatter") > 0
    # measured on seed 4267: 34.3 us forwards, 27.9 backwards on 128x128x64 (predicted 31.7 both before,
    # 33.7 and 32.6 now), 28.7 and 26.5 on 128x192x64, 31.0 and 29.0 on 64x256x64
    assert predict_us(backward, cal, target.sms) < predict_us(forward, cal, target.sms)
