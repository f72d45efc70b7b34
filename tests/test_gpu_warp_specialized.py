"""On a GPU: the warp-specialized test kernel, one warp group reading the table, waiting and
signalling, another computing, runs schedules under every in-kernel fixup policy (skipped without
a GPU). Proves the outer loop's work iterator and fixup primitives work per thread group."""

import numpy as np
import pytest
from gpu_support import GPU
from warp_specialized import KERNEL, POLICIES, run_warp_specialized

from streamk.fixup import plan_fixup
from streamk.sched import make_schedule
from streamk.shapes import GemmShape, Machine

pytestmark = GPU


@pytest.mark.parametrize("policy", POLICIES)
@pytest.mark.parametrize("decomp,options", [("stream-k", {"grid": 11}), ("fixed-split", {"splits": 3}),
                                            ("two-tile-sk-dp", {}), ("data-parallel", {})])
def test_warp_specialized_kernel_matches_float64_reference(decomp, options, policy):
    from streamk.gpu.runtime.device import current

    dev = current()
    rng = np.random.default_rng(7)
    A = rng.standard_normal((101, 203)).astype(np.float32)  # edge tiles in m, n and k
    B = rng.standard_normal((203, 77)).astype(np.float32)
    C0 = rng.standard_normal((101, 77)).astype(np.float32)
    inputs = [x.copy() for x in (A, B, C0)]
    shape = GemmShape(101, 77, 203)
    s = make_schedule(decomp, shape, KERNEL.tile, Machine(min(dev.sms, 16)), fixup=policy, **options)
    plan = plan_fixup(s)
    a, b, c0 = (x.astype(np.float64) for x in (A, B, C0))
    eps = np.finfo(np.float32).eps / 2
    # beta != 0 reads C; beta == 0 on a NaN-poisoned C: every element must be written, so a
    # kernel that never ran, or skipped a tile, fails here
    for alpha, beta, c_in in ((0.5, 2.0, C0), (1.5, 0.0, np.full_like(C0, np.nan))):
        C = run_warp_specialized(dev, plan, A, B, alpha=alpha, beta=beta, C=c_in)
        for x, before in zip((A, B, C0), inputs):
            assert np.array_equal(x, before), "the harness must leave its inputs as they were"
        ref = alpha * (a @ b) + beta * c0
        bound = 4 * np.sqrt(A.shape[1]) * eps * (alpha * (np.abs(a) @ np.abs(b)) + beta * np.abs(c0)) + eps * np.abs(ref)
        err = np.abs(C - ref)
        assert np.all(err <= bound), (decomp, policy, s.grid, alpha, beta, float(np.nanmax(err / bound)),
                                      int(np.isnan(C).sum()))
        again = run_warp_specialized(dev, plan, A, B, alpha=alpha, beta=beta, C=c_in)
        assert np.array_equal(C, again)  # deterministic policies: bitwise the same, epochs need no reset
