"""The front door of ``streamk.gpu``: one ``DeviceRuntime`` per device owns that device's state.

A DeviceRuntime holds the Device (its context, modules and private setup stream), the plan cache
(every GEMM signature's GemmPlan built once; least recently used out, an evicted plan's table freed
only once every stream that may use it is done) and the lanes (``streamk.gpu.runtime.lanes``: eager ones
per stream, and those CUDA graphs hold). ``gemm``, ``prepare``, ``Launch.enqueue``, graph capture
and ``torch.ops.streamk.gemm`` all plan and launch through it, in its device's context, restoring
the caller's: a call runs on its operands' device whatever device is current.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from typing import Any, Callable

from ...errors import CudaError
from .device import Device, device, driver
from .lanes import Lane, Lanes
from .plan import GemmPlan

PLAN_CACHE_ENTRIES = 512  # signatures kept per device; tables are a few KB each
GRAVEYARD_ENTRIES = 256  # evicted plans kept until every stream that may use them is done


class EmptyPlan:
    """The plan of a GEMM with m, n or k = 0: no kernels (torch's answers: an empty C, or
    beta*C when k = 0)."""

    def __init__(self, m: int, n: int, k: int, out_dtype: str) -> None:
        self.m, self.n, self.k, self.out_dtype = m, n, k, out_dtype

    def apply(self, C: Any, beta: float, new: Callable[[], Any]) -> Any:
        out = new() if C is None else C
        if self.k == 0 and self.m and self.n:
            if C is None or beta == 0.0:
                out[...] = 0
            elif beta != 1.0:
                out[...] = out * beta
        return out


class DeviceRuntime:
    """One device's context, plan cache and lanes, and the one way to launch on it."""

    def __init__(self, dev: Device) -> None:
        self.dev = dev
        self.lanes = Lanes(dev)
        self.plans: OrderedDict[tuple, GemmPlan | EmptyPlan] = OrderedDict()
        self.graveyard: list[GemmPlan] = []
        self.hits = self.misses = 0
        self.lock = dev.lock

    def plan(self, key: tuple | None, build: Callable[[], GemmPlan | EmptyPlan]) -> GemmPlan | EmptyPlan:
        """The cached plan of ``key``, else ``build()``'s (in this device's context; kept under
        ``key`` unless it is None)."""
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
        with self.lock, self.dev.entered():
            self.misses += 1
            plan = build()
            if key is not None:
                plans[key] = plan
                if len(plans) > PLAN_CACHE_ENTRIES:
                    self._evict(plans.popitem(last=False)[1])
        return plan

    def _evict(self, plan: GemmPlan | EmptyPlan) -> None:
        if isinstance(plan, GemmPlan):
            self.graveyard.append(plan)
        if len(self.graveyard) > GRAVEYARD_ENTRIES and self.lanes.synchronize():
            self.graveyard.clear()

    def lane(self, plan: GemmPlan, stream: int, capturing: bool | None = None, keep: object = None) -> tuple[Lane, bool]:
        """The lane of ``stream`` for ``plan`` and whether the stream is being captured (asked of
        the driver unless the caller knows). Call in this device's context."""
        drv = driver()
        if capturing is None:
            err, status = drv.cuStreamIsCapturing(stream)
            if err:
                raise CudaError(f"cuStreamIsCapturing({stream:#x}) failed with {err.name}: is the stream on "
                                f"{self.dev.name} (device {self.dev.ordinal}) and alive?")
            capturing = int(status) != 0
        capture = None
        if capturing:
            err, status, capture_id, graph, *_ = drv.cuStreamGetCaptureInfo(stream)
            if err or int(status) != 1:
                raise CudaError(f"the capture on stream {stream:#x} is invalidated ({err.name}, {status.name})")
            capture = (int(capture_id), graph)
        with self.lock:
            return self.lanes.for_launch(stream, plan.needs, capture, keep, plan), capture is not None

    def launch(self, plan: GemmPlan, a: int, b: int, c: int, alpha: float, beta: float, stream: int,
               capturing: bool | None = None, only=None, keep: object = None) -> None:
        """Launch ``plan`` on ``stream`` with the operands at ``a``, ``b``, ``c``, in this device's
        context; ``capturing``: whether the stream is being captured, if the caller knows;
        ``only``: one step of the plan; ``keep``: the stream's owning object (Lanes.for_launch)."""
        with self.dev.entered():
            lane, capturing = self.lane(plan, stream, capturing, keep)
            plan.enqueue(lane, a, b, c, float(alpha), float(beta), stream, capturing, only)

    def clear(self, *, captured: bool) -> None:
        """Drop the cached plans and the eager lanes once their streams are done, and what destroyed
        graphs held; with ``captured``, refuse while a live graph still holds lanes of this device."""
        with self.lock, self.dev.entered():
            if not self.lanes.synchronize():
                raise CudaError("clear_cache() cannot run while a stream it used is being captured")
            self.plans.clear()
            self.graveyard.clear()
            self.lanes.retire_all()
            self.hits = self.misses = 0
            alive = self.lanes.reap_captured()
        if captured and alive:
            raise CudaError(f"clear_cache(captured=True): {alive} CUDA graph(s) captured with streamk launches on "
                            f"cuda:{self.dev.ordinal} are alive and would replay on the {self.lanes.captured_lanes} "
                            f"lane(s) they hold ({self.lanes.nbytes} B in all); their memory is freed when the graphs "
                            f"are (del the torch.cuda.CUDAGraph, or cuGraphExecDestroy and cuGraphDestroy)")

    def info(self) -> dict[str, Any]:
        with self.lock:
            graphs = self.lanes.reap_captured()
            return {"device": self.dev.name, "plans": len(self.plans), "hits": self.hits, "misses": self.misses,
                    "graphs": graphs, "lanes": len(self.lanes.by_stream),
                    "captured_lanes": self.lanes.captured_lanes, "lane_bytes": self.lanes.nbytes}


_RUNTIMES: dict[int, DeviceRuntime] = {}
_RUNTIMES_LOCK = threading.Lock()


def runtime(ordinal: int | None = None) -> DeviceRuntime:
    """The DeviceRuntime of ``ordinal`` (default ``STREAMK_DEVICE`` or 0), made on first use."""
    rt = _RUNTIMES.get(ordinal) if ordinal is not None else None
    if rt is None:
        dev = device(ordinal)
        with _RUNTIMES_LOCK:
            rt = _RUNTIMES.get(dev.ordinal)
            if rt is None:
                rt = _RUNTIMES[dev.ordinal] = DeviceRuntime(dev)
    return rt


def cache_info() -> dict[int, dict[str, Any]]:
    """Per device: cached plans, hits and misses, live CUDA graphs holding streamk launches, lanes
    (eager and captured) and their bytes."""
    return {ordinal: rt.info() for ordinal, rt in list(_RUNTIMES.items())}


def clear_cache(*, captured: bool = False) -> None:
    """Drop every cached plan and eager lane once their streams are done, and the lanes of CUDA
    graphs that are gone: the memory comes back, the next calls rebuild. A live ``Prepared`` keeps
    its plan, and a live graph its lanes, so nothing they will still run is freed. ``captured``:
    also check that no live graph holds streamk lanes (CudaError naming them if one does)."""
    for rt in list(_RUNTIMES.values()):
        rt.clear(captured=captured)
