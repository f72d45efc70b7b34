"""The per-device runtime of ``streamk.gpu``: the plan cache, the lanes, and the launch itself.

Every GEMM signature's GemmPlan is built once and kept (least recently used out; an evicted plan's
table is freed only once every stream that may use it is done); each stream's launches use its
lane (``streamk.gpu.lanes``). ``cache_info()`` and ``clear_cache()`` are public.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from typing import Any

from ..errors import CudaError
from .device import Device, device, driver
from .lanes import Lane, Lanes
from .plan import GemmPlan

PLAN_CACHE_ENTRIES = 512  # signatures kept per device; tables are a few KB each
GRAVEYARD_ENTRIES = 256  # evicted plans kept until every stream that may use them is done


class _Runtime:
    """One device's plan cache and lanes."""

    def __init__(self, dev: Device) -> None:
        self.dev = dev
        self.lanes = Lanes(dev)
        self.plans: OrderedDict[tuple, GemmPlan | _Empty] = OrderedDict()
        self.graveyard: list[GemmPlan] = []
        self.pinned: dict[int, GemmPlan] = {}  # plans captured into graphs: kept until release_captured()
        self.hits = self.misses = 0
        self.lock = dev.lock

    def plan(self, key: tuple | None, build) -> GemmPlan | _Empty:
        plans = self.plans
        if key is not None:
            plan = plans.get(key)
            if plan is not None:
                self.hits += 1
                if len(plans) > 1:
                    with self.lock:
                        if key in plans:
                            plans.move_to_end(key)
                return plan
        with self.lock:
            self.misses += 1
            plan = build()
            if key is not None:
                plans[key] = plan
                if len(plans) > PLAN_CACHE_ENTRIES:
                    self._evict(plans.popitem(last=False)[1])
        return plan

    def _evict(self, plan) -> None:
        if isinstance(plan, GemmPlan):
            self.graveyard.append(plan)
        if len(self.graveyard) > GRAVEYARD_ENTRIES and self.lanes.synchronize():
            self.graveyard.clear()

    def lane(self, plan: GemmPlan, stream: int, capturing: bool | None = None, keep: object = None) -> tuple[Lane, bool]:
        """The lane of ``stream`` for ``plan`` and whether the stream is being captured (asked of
        the driver unless the caller knows)."""
        drv = driver()
        if capturing is None:
            err, status = drv.cuStreamIsCapturing(stream)
            if err:
                raise CudaError(f"cuStreamIsCapturing({stream:#x}) failed with {err.name}: is the stream on "
                                f"{self.dev.name} (device {self.dev.ordinal}) and alive?")
            capturing = int(status) != 0
        capture = None
        if capturing:
            err, status, capture, *_ = drv.cuStreamGetCaptureInfo(stream)
            if err or int(status) != 1:
                raise CudaError(f"the capture on stream {stream:#x} is invalidated ({err.name}, {status.name})")
            capture = int(capture)
        with self.lock:
            if capture is not None:
                self.pinned[id(plan)] = plan
            return self.lanes.for_launch(stream, plan.needs, capture, keep), capture is not None


_RUNTIMES: dict[int, _Runtime] = {}
_RUNTIMES_LOCK = threading.Lock()


def _runtime(ordinal: int | None = None) -> _Runtime:
    dev = device(ordinal)
    rt = _RUNTIMES.get(dev.ordinal)
    if rt is None:
        with _RUNTIMES_LOCK:
            rt = _RUNTIMES.setdefault(dev.ordinal, _Runtime(dev))
    return rt


def cache_info() -> dict[str, Any]:
    """Per device: cached plans, hits and misses, lanes (eager and captured) and their bytes."""
    return {rt.dev.ordinal: {"device": rt.dev.name, "plans": len(rt.plans), "hits": rt.hits, "misses": rt.misses,
                             "pinned_plans": len(rt.pinned), "lanes": len(rt.lanes.by_stream),
                             "captured_lanes": sum(map(len, rt.lanes.captured.values())), "lane_bytes": rt.lanes.nbytes}
            for rt in _RUNTIMES.values()}


def clear_cache(*, captured: bool = False) -> None:
    """Drop every cached plan and eager lane once their streams are done: the memory comes back,
    the next calls rebuild. Launches captured into CUDA graphs keep theirs, unless ``captured``
    (only when none of those graphs will be replayed again)."""
    for rt in _RUNTIMES.values():
        with rt.lock:
            if not rt.lanes.synchronize():
                raise CudaError("clear_cache() cannot run while a stream it used is being captured")
            rt.plans.clear()
            rt.graveyard.clear()
            for stream in list(rt.lanes.by_stream):
                rt.lanes._retire(rt.lanes.by_stream.pop(stream))
            rt.hits = rt.misses = 0
            if captured:
                rt.pinned.clear()
                rt.lanes.release_captured()


class _Empty:
    """The plan of a GEMM with m, n or k = 0: no kernels (torch's answers: an empty C, or
    beta*C when k = 0)."""

    def __init__(self, m: int, n: int, k: int, out_dtype: str) -> None:
        self.m, self.n, self.k, self.out_dtype = m, n, k, out_dtype

    def apply(self, C: Any, beta: float, new) -> Any:
        out = new() if C is None else C
        if self.k == 0 and self.m and self.n:
            if C is None or beta == 0.0:
                out[...] = 0
            elif beta != 1.0:
                out[...] = out * beta
        return out


def _launch(rt: _Runtime, plan: GemmPlan, a: int, b: int, c: int, alpha: float, beta: float, stream: int,
            capture: bool | None = None, only=None, keep: object = None) -> None:
    """Launch ``plan`` on ``stream`` in its device's context (restoring the caller's when it was
    another device's); ``capture``: whether the stream is being captured, if the caller knows;
    ``keep``: the stream's owning object (Lanes.for_launch)."""
    drv = driver()
    err, prev = drv.cuCtxGetCurrent()
    switch = int(prev) != int(rt.dev.context)
    if switch:
        rt.dev.activate()
    try:
        lane, capturing = rt.lane(plan, stream, capture, keep)
        plan.enqueue(lane, a, b, c, float(alpha), float(beta), stream, capturing, only)
    finally:
        if switch:
            drv.cuCtxSetCurrent(prev)


def _check(result, what: str) -> None:
    err = result[0] if isinstance(result, tuple) else result
    if int(err):
        raise CudaError(f"{what} failed with {err.name}")
