"""handoff (LOG.md v51): a turnstile handoff (a middle contributor's wait, read, store and release)
costs ``handoff`` in place of d + b, being one CTA alone on its chain; an entry without the term
predicts exactly as before, and the shipped H200 entries carry it."""

from __future__ import annotations

import json

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
