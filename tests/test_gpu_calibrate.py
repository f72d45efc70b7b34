"""On a GPU: a reduced calibration fits the hardware, and a fidelity run times and checks a few
shapes (``python -m pytest -m gpu tests/test_gpu_calibrate.py``; skipped without a GPU)."""

import math

import numpy as np

from gpu_support import GPU

pytestmark = GPU

# The model has no wave tails, L2 reuse or bandwidth roofline (docs/simulator.md): on the design's
# whole waves it should still be within this of every probe; more means a term is mispriced.
MAX_RMS_RESIDUAL = 0.10
MAX_PROBE_RESIDUAL = 0.25


def test_a_reduced_calibration_fits_the_gpu_with_small_residuals():
    from streamk.calibrate.device import calibrate
    from streamk.calibrate.fit import table
    from streamk.shapes import TileShape

    design, result, cal, family = calibrate("float16", TileShape(128, 128, 32), quick=True)
    print(table(result, [f"{p.family} {p.label}" for p in design]))
    assert family in ("h100", "h200", "a100")
    assert np.all(np.isfinite(result.errors)) and cal.us("c1") > 0
    assert result.rms_rel_residual < MAX_RMS_RESIDUAL, result.rms_rel_residual
    assert np.max(np.abs(result.rel_residuals)) < MAX_PROBE_RESIDUAL
    if cal.ctas_per_sm > 1:  # two co-resident CTAs share the SM's tensor cores (docs/auto-model.md)
        assert cal.us("c_shared") > 1.5 * cal.us("c1")


def test_fidelity_times_every_variant_and_checks_its_result():
    from streamk.calibrate import fidelity
    from streamk.calibrate.device import measure_fidelity
    from streamk.shapes import TileShape

    texts = fidelity.default_variants(TileShape(128, 128, 32))
    rows = measure_fidelity([(256, 512, 4096), (1000, 1000, 1000)], texts, "float16")
    assert len(rows) == 2 * len(texts)
    for r in rows:
        assert not r["error"], r
        assert r["measured_us"] > 0 and math.isfinite(r["p80_us"]) and r["relerr"] < 1e-2, r
