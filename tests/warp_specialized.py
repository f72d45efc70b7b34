"""Host side of the warp-specialized test kernel (kernels/testing/warp_specialized.cuh): launch it
on a Schedule of 32x32x8 tiles under a FixupPlan and return C. For GPU tests; needs a Device."""

from __future__ import annotations

import ctypes

import numpy as np

from streamk.fixup import FixupPlan
from streamk.gpu.catalogue import VARIANTS
from streamk.gpu.runtime.launch import Step, gemm_params
from streamk.gpu.table import TABLE_VERSION, build_table

KERNEL = next(v for v in VARIANTS if v.role == "test" and v.mainloop == "ws_test")
POLICIES = ("owner-waits", "turnstile", "last-arrival")  # the ones it runs without a pass


def run_warp_specialized(dev, plan: FixupPlan, A: np.ndarray, B: np.ndarray, *, alpha: float = 1.0,
                         beta: float = 0.0, C: np.ndarray | None = None) -> np.ndarray:
    """alpha*A@B + beta*C (FP32, row-major NumPy arrays) by the warp-specialized kernel on
    ``dev`` (a streamk.gpu.runtime.device.Device) executing ``plan``'s schedule, as a new array; the
    arguments are left as they were."""
    s = plan.schedule
    if s.tile != KERNEL.tile:
        raise ValueError(f"the schedule's tile must be {KERNEL.tile} (got {s.tile})")
    if plan.policy not in POLICIES:
        raise ValueError(f"policy must be one of {', '.join(POLICIES)} (got {plan.policy!r})")
    if plan.residency_needed() > dev.sms:
        raise ValueError(f"the schedule needs {plan.residency_needed()} co-resident CTAs; keep it under {dev.sms}")
    m, k = A.shape
    n = B.shape[1]
    A, B = (np.ascontiguousarray(x, dtype=np.float32) for x in (A, B))
    # a new array, never the caller's C: the result is copied into it below (copying into the
    # caller's C0 made the test's reference read the result as its input: err/bound 1.3e5)
    C = np.zeros((m, n), np.float32) if C is None else np.array(C, dtype=np.float32, order="C", copy=True)
    t = build_table(plan)
    host = {"a": A, "b": B, "c": C, "cta_offsets": t.cta_offsets, "units": t.units, "reads": t.reads,
            "waits": t.waits, "items": t.items,
            "workspace": np.zeros(max(t.num_slots, 1) * KERNEL.tile.bm * KERNEL.tile.bn, np.float32),
            "flags": np.zeros(max(len(t.units), 1), np.uint32), "counters": np.zeros(max(t.tiles, 1), np.uint64)}
    bufs = {name: dev.upload(array) for name, array in host.items()}  # zero-size ones get 16 bytes
    state = dev.upload(np.array([1, 0], np.uint32))  # epoch 1, done 0
    params = gemm_params(**{name: buf.ptr for name, buf in bufs.items()}, lda=k, ldb=n, c_rs=n, c_cs=1,
                         alpha=alpha, beta=beta, state=state.ptr, m=m, n=n, k=k, table_version=TABLE_VERSION)
    argv = (ctypes.c_void_p * 1)(ctypes.addressof(params))
    smem = dev.smem_bytes(KERNEL.name)
    step = Step(KERNEL.name, dev.function(KERNEL.name, smem), s.grid, dev.block_size(KERNEL.name), smem)
    step.enqueue(ctypes.addressof(argv), 0)
    dev.synchronize()
    from cuda.bindings import driver

    err, = driver.cuMemcpyDtoH(C.ctypes.data, bufs["c"].ptr, C.nbytes)
    assert int(err) == 0, err
    return C
