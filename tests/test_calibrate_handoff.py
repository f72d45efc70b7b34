"""handoff (LOG.md v51): a turnstile handoff (a middle contributor's wait, read, store and release)
costs ``handoff`` in place of d + b, being one CTA alone on its chain; an entry without the term
predicts exactly as before, and the shipped H200 entries carry it. The turnstile-chain probes
(LOG.md v52) finish on every kernel and let the fit recover it; a design without them leaves it out."""

from __future__ import annotations

import json
import math

import pytest

from streamk.calibrate.model import Calibration
from streamk.calibrate.predict import predict_from
from streamk.fixup import Action, plan_fixup
from streamk.schedule import Schedule
from streamk.shapes import GemmShape, Machine, TileShape
from streamk.target import preset

TILE = TileShape(128, 128, 64)
SMS = 132
VALUES = {"launch": 1.0, "a": 4.0, "c1": 0.34, "b": 4.7, "d": 1.0, "pass_launch": 1.0, "d_reduce": 1.0}


def chain(contributors: int, iters: int = 4, policy: str = "turnstile") -> Schedule:
    """One tile split evenly over ``contributors`` CTAs: a turnstile chain of contributors - 2 handoffs."""
    shape = GemmShape(TILE.bm, TILE.bn, TILE.bk * iters * contributors)
    ctas = [[(0, i * iters, (i + 1) * iters)] for i in range(contributors)]
    return Schedule.from_ctas("chain", shape, TILE, ctas, machine=Machine(SMS, 1), fixup=policy)


@pytest.mark.parametrize("policy", ["turnstile", "owner-waits", "last-arrival"])
def test_term_absent_or_zero_predicts_as_before(policy: str) -> None:
    s = chain(8, policy=policy)
    assert predict_from(s, {**VALUES, "handoff": 0.0}, SMS, 1) == predict_from(s, VALUES, SMS, 1)


@pytest.mark.parametrize("contributors", [2, 3, 8, 16])
def test_each_handoff_costs_the_term_in_place_of_d_plus_b(contributors: int) -> None:
    s = chain(contributors)
    handoffs = int((plan_fixup(s, "turnstile").action == Action.HANDOFF).sum())
    assert handoffs == contributors - 2
    h = 2.2  # below d + b = 5.7: the chain runs faster, by (d + b - h) a link
    gain = predict_from(s, VALUES, SMS, 1) - predict_from(s, {**VALUES, "handoff": h}, SMS, 1)
    assert gain == pytest.approx(handoffs * (VALUES["d"] + VALUES["b"] - h), abs=1e-9)


def test_other_policies_are_not_priced_by_it() -> None:
    for policy in ("owner-waits", "last-arrival"):
        s = chain(8, policy=policy)
        assert predict_from(s, {**VALUES, "handoff": 2.2}, SMS, 1) == predict_from(s, VALUES, SMS, 1)


def test_shipped_h200_entries_round_trip_with_the_term() -> None:
    cal = preset("h200").kernel("float16", TILE).calibration
    assert cal is not None and 0 < cal.us("handoff") < cal.us("b") + cal.us("d")
    again = Calibration.from_json_dict(json.loads(json.dumps(cal.to_json_dict())))
    assert again == cal and again.us("handoff") == cal.us("handoff")


# The turnstile-chain probes (LOG.md v52): the calibration's own way to price handoff on a GPU.
H200_L2 = 62914560


def test_chain_probes_hold_handoffs_and_finish_on_every_kernel_calibrate_all_fits() -> None:
    from streamk.calibrate.design import CHAIN_SPLITS
    from streamk.calibrate.predict import predict_us
    from streamk.cli.calibrate_cmd import kernels_to_fit
    from streamk.dispatch import waits_only_backward
    from streamk.gpu.runtime.bind import refuse_unfinishable
    from streamk.shapes import ITEMSIZE

    target = preset("h200")
    for dtype, tile in kernels_to_fit(target):
        kernel = target.kernel(dtype, tile)
        chains = _chain_probes(tile, target.sms, kernel.ctas_per_sm, ITEMSIZE[dtype])
        assert [p.label for p in chains] == [f"p={p}" for p in CHAIN_SPLITS], (dtype, tile)
        for p in chains:
            s, plan = p.schedule, plan_fixup(p.schedule)
            # one CTA an SM, each waiting only on a lower CTA: finishes at any residency (no deadlock)
            assert s.fixup == "turnstile" and s.grid <= target.sms and waits_only_backward(plan), (dtype, tile, p.label)
            refuse_unfinishable(plan, 1)
            links = int(p.label[2:]) - 2
            assert int((plan.action == Action.HANDOFF).sum()) == links * (target.sms // int(p.label[2:]))
            assert math.isfinite(predict_us(s, kernel.calibration, target.sms)), (dtype, tile, p.label)


def _chain_probes(tile: TileShape, sms: int, ctas_per_sm: int, element_bytes: int) -> list:
    from streamk.calibrate.design import probes

    return [p for p in probes(tile, sms, ctas_per_sm, H200_L2, element_bytes) if p.family == "turnstile-chain"]


def _h200_device(sms: int, noise: float, seed: int):
    """The calibrated simulator under the shipped H200 FP16 128x128x64 terms as the GPU, times (1 + noise N(0, 1))."""
    import numpy as np

    cal = preset("h200").kernel("float16", TILE).calibration
    truth = {t.name: t.us for t in cal.terms}
    rng = np.random.default_rng(seed)

    def timer(schedules, dtype):
        exact = np.array([predict_from(s, truth, sms, 1, l2_bytes=H200_L2) for s in schedules])
        return exact * (1 + noise * rng.standard_normal(len(exact)))
    return truth, timer


@pytest.mark.slow(5)
def test_fit_recovers_handoff_from_the_chain_probes_and_leaves_it_out_without_them() -> None:
    import numpy as np

    from streamk.calibrate.fit import calibrate_with, fit

    sms = 32  # every probe is one wave or whole waves: the terms do not depend on the SM count; 32 is fast
    truth, timer = _h200_device(sms, 0.02, seed=7)
    design, result = calibrate_with(timer, "float16", TILE, sms, 1, H200_L2, quick=True)
    fitted = dict(zip(result.names, result.values))
    se = dict(zip(result.names, result.errors))
    assert [p.label for p in design if p.family == "turnstile-chain"] == ["p=8", "p=32"]
    assert fitted["handoff"] == pytest.approx(truth["handoff"], rel=0.1) and se["handoff"] < 0.1, (fitted, se)
    for name in ("a", "c1", "b", "d"):  # the terms the chain probes share stay where they were
        assert abs(fitted[name] - truth[name]) < 4 * se[name], (name, fitted[name], truth[name], se[name])

    # without the chain probes no probe holds a handoff: the term is left out, and the entry predicts d + b a link
    plain = [p for p in design if p.family != "turnstile-chain"]
    measured = timer([p.schedule for p in plain], "float16")
    without = fit([p.schedule for p in plain], measured, sms, 1, l2_bytes=H200_L2, element_bytes=2)
    assert "handoff" not in without.names
    cal = without.calibration("float16", TILE, 1, "test", sms, H200_L2)
    (chain8,) = [p.schedule for p in design if p.label == "p=8" and p.family == "turnstile-chain"]
    values = {t.name: t.us for t in cal.terms}
    assert cal.us("handoff") == 0.0
    assert predict_from(chain8, values, sms, 1) == predict_from(chain8, {**values, "handoff": 0.0}, sms, 1)
    assert np.isfinite(without.rms_rel_residual)
