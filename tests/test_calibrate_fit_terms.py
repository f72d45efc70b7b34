"""benchmarks/fidelity_terms.py's joint fit (``fit_terms``): relative least squares of several
terms at once over fidelity runs' Schedules, each kept >= 0 (LOG.md v26, v78's refits)."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))  # benchmarks/ is not a package

from fidelity_terms import fit_terms, predict  # noqa: E402

from streamk.calibrate.fidelity import resolve  # noqa: E402
from streamk.shapes import GemmShape, TileShape  # noqa: E402
from streamk.target import preset  # noqa: E402

TILE = TileShape(64, 192, 64)
RUNS = [(f"{v}#{TILE}", GemmShape(*s)) for v in ("data-parallel", "fixed-split", "stream-k", "stream-k!last-arrival")
        for s in ((384, 960, 1024), (1200, 800, 256), (256, 576, 4096))]


@pytest.fixture(scope="module")
def runs():
    target = preset("h200")
    schedules = [resolve(text, shape, "float16", target) for text, shape in RUNS]
    shipped = {t.name: t.us for t in target.kernel("float16", TILE).calibration.terms}
    return target, schedules, shipped


def test_joint_fit_recovers_the_terms_that_made_the_times(runs) -> None:
    target, schedules, shipped = runs
    truth = dict(shipped, b=1.4, d=1.1, c1=0.30)
    measured = predict(schedules, truth, target, "float16")
    fitted, se = fit_terms(schedules, measured, shipped, ["b", "d", "c1"], target, "float16")
    for term in ("b", "d", "c1"):
        assert fitted[term] == pytest.approx(truth[term], rel=1e-3), term
        assert se[term] < 1e-3 * truth[term], term  # exact times: no residual left


def test_a_term_pushed_below_zero_is_held_at_zero(runs) -> None:
    target, schedules, shipped = runs
    measured = predict(schedules, dict(shipped, b=0.0), target, "float16") * 0.9  # faster than any b prices
    fitted, se = fit_terms(schedules, measured, shipped, ["b"], target, "float16")
    assert fitted["b"] == 0.0 and se["b"] == 0.0
    assert np.isfinite(list(fitted.values())).all()
