"""``streamk.gpu.gemm``: C = alpha*A@B + beta*C on the GPU, executing exactly a Schedule.

A call: describe the operands (no CUDA), find the GemmPlan of their signature in the device's
plan cache (on a miss: check, resolve the schedule, select the kernels, refuse a launch that
could never finish, upload the table; streamk.gpu.plan), take the lane of the caller's stream
(streamk.gpu.lanes) and launch. A repeated call is a dictionary lookup, a few pointer stores and
the launches: no host-device synchronization.
"""

from __future__ import annotations

import sys
import threading
from collections import OrderedDict
from typing import Any

import numpy as np

from ..errors import CudaError, ScheduleError
from ..fixup import FixupPlan
from ..schedule import Schedule
from ..shapes import Machine, TileShape
from .device import Device, device, driver
from .lanes import Lane, Lanes
from .operands import Operand, check_operands, describe, padded
from .plan import DEFAULT_TUNING, GemmPlan, Tuning, build_plan

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

    def lane(self, plan: GemmPlan, stream: int, capturing: bool | None = None) -> tuple[Lane, bool]:
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
            return self.lanes.for_launch(stream, plan.needs, capture), capture is not None


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


# ---- operands ------------------------------------------------------------------------------
_TORCH: Any = None  # the torch module once seen (this module never imports it itself)
_TORCH_OUT: dict[str, Any] = {}
_TORCH_CALLS: dict[str, Any] = {}  # torch's fast C entries for the current device, stream, capture state


def _torch():
    global _TORCH
    if _TORCH is None and "torch" in sys.modules:
        torch = sys.modules["torch"]
        _TORCH_OUT.update(float32=torch.float32, float64=torch.float64)
        c = torch._C
        _TORCH_CALLS.update(
            device=getattr(c, "_cuda_getDevice", torch.cuda.current_device),
            stream=getattr(c, "_cuda_getCurrentRawStream", lambda i: torch.cuda.current_stream(i).cuda_stream),
            capturing=getattr(c, "_cuda_isCurrentStreamCapturing", torch.cuda.is_current_stream_capturing))
        from . import torch_op  # noqa: F401 - registers streamk::gemm with torch.library

        _TORCH = torch

    return _TORCH


def _compiling() -> bool:
    torch = _TORCH if _TORCH is not None else _torch()
    return torch is not None and torch.compiler.is_compiling()


class _Same:
    """A key part that matches only the very same object (a Schedule: equal by value, not hashable),
    holding it so its id is never reused while the key lives."""

    __slots__ = ("obj",)

    def __init__(self, obj: Any) -> None:
        self.obj = obj

    def __hash__(self) -> int:
        return id(self.obj)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, _Same) and other.obj is self.obj


def _options_key(schedule, fixup, tile, machine, options: dict, tuning: Tuning) -> tuple | None:
    """The part of a signature the caller's arguments give; None where an option is unhashable
    (that call is planned afresh)."""
    if type(schedule) is not str:
        schedule = _Same(schedule)
    opts = ()
    if options:
        try:
            opts = tuple(sorted(options.items()))
            hash(opts)
        except TypeError:
            return None
    return (schedule, fixup, tile, machine, opts, None if tuning is DEFAULT_TUNING else tuning)


def _check_options(schedule, fixup, tile, machine) -> None:
    if not isinstance(schedule, (str, Schedule)):
        raise ScheduleError(f"schedule must be a scheduler's name or a Schedule (got {type(schedule).__name__})")
    if machine is not None and not isinstance(machine, Machine):
        raise ScheduleError(f"machine must be a streamk.Machine (got {type(machine).__name__})")
    if fixup is not None and not isinstance(fixup, str):
        raise ScheduleError(f"fixup must be a policy name (got {type(fixup).__name__})")
    if tile is not None and not isinstance(tile, (TileShape, int, str)):
        raise ScheduleError(f"tile must be a TileShape, an edge such as 64 or 'BMxBN' (got {type(tile).__name__})")


def _build(rt: _Runtime, a: Operand, b: Operand, c: Operand | None, schedule, fixup, tile, machine,
           options: dict, tuning: Tuning) -> GemmPlan | _Empty:
    _check_options(schedule, fixup, tile, machine)
    spec = check_operands(a, b, c)
    m, k, n = a.shape[0], a.shape[1], b.shape[1]
    if 0 in (m, n, k):
        return _Empty(m, n, k, spec.out_dtype)
    return build_plan(rt.dev, rt.lanes, a, b, c, schedule, fixup, tile, machine, options, tuning)


def _overlaps(plan: GemmPlan, a: int, b: int, c: int) -> None:
    ea, eb, ec = plan.extents
    if (c < a + ea and a < c + ec) or (c < b + eb and b < c + ec):
        raise ScheduleError("C overlaps A or B in memory: the kernels would read what they write; pass a C of its "
                            "own (or none)")


def _device_of(x: Any, name: str) -> int:
    """The CUDA device ordinal of a GPU operand (-1 for host data)."""
    if isinstance(x, np.ndarray):
        return -1
    dev = getattr(x, "device", None)
    ordinal = getattr(dev, "index", None) if dev is not None else None
    if ordinal is None:
        ordinal = getattr(dev, "id", None)
    if isinstance(ordinal, int):
        return ordinal
    if hasattr(x, "__cuda_array_interface__"):
        drv = driver()
        ptr = int(x.__cuda_array_interface__["data"][0])
        err, value = drv.cuPointerGetAttribute(drv.CUpointer_attribute.CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL, ptr)
        return int(value) if int(err) == 0 else 0
    return -1


# ---- the call ------------------------------------------------------------------------------
def gemm(A: Any, B: Any, C: Any = None, *, alpha: float = 1.0, beta: float = 0.0,
         schedule: str | Schedule = "auto", fixup: str | None = None, tile: TileShape | int | str | None = None,
         machine: Machine | None = None, stream: int | None = None, **options: Any) -> Any:
    """C = alpha * A @ B + beta * C on the GPU, executing ``schedule`` (a name or a Schedule).

    A (m x k) and B (k x n): float16, bfloat16 (float32 C) or float64 (float64 C). PyTorch and
    CuPy CUDA arrays (anything with ``__cuda_array_interface__``) are used in place, any strides
    (operands no copy width can read in place are packed on the device, inside the launch);
    NumPy arrays are copied in and out. C (m x n) is updated in place when given, else allocated
    like A; it must not overlap itself, A or B. m, n or k = 0 work as in torch (k = 0: beta*C).
    ``fixup`` overrides the schedule's policy; ``tile`` picks the CTA tile of a named schedule
    (a TileShape, 128 or 64, or "BMxBN"; by default the paper's, and ``auto`` picks one by
    problem size); ``machine`` replaces the device's Machine for a named scheduler; ``stream``:
    a CUDA stream handle (default: the current stream of PyTorch or CuPy, else the legacy
    stream). Other ``options`` go to the scheduler (``grid``, ``splits``, ``model_costs``,
    ``walk``, ...). Any number of calls may run at once on any streams, inside CUDA graphs and
    under ``torch.compile``; a schedule that could never finish is refused (DeadlockError).
    """
    if _compiling():
        from .torch_op import traced_gemm

        return traced_gemm(A, B, C, alpha, beta, schedule, fixup, tile, machine, options)
    tensor = _TORCH.Tensor if _TORCH is not None else (_torch() and _TORCH.Tensor)
    if tensor and type(A) is tensor and type(B) is tensor and (C is None or type(C) is tensor):
        ordinal = A.get_device()
        if ordinal >= 0:
            return _gemm_torch(A, B, C, alpha, beta, schedule, fixup, tile, machine, stream, options, ordinal)
    return _gemm_any(A, B, C, alpha, beta, schedule, fixup, tile, machine, stream, options, DEFAULT_TUNING)


def _gemm_torch(A, B, C, alpha, beta, schedule, fixup, tile, machine, stream, options, ordinal):
    """The eager PyTorch path, kept to a few attribute reads and one dictionary lookup."""
    pa, pb = A.data_ptr(), B.data_ptr()
    opts = _options_key(schedule, fixup, tile, machine, options, DEFAULT_TUNING)
    if C is None:
        pc = 0
        key = (A.dtype, A.shape, A.stride(), pa & 15, B.dtype, B.shape, B.stride(), pb & 15, B.get_device(), opts)
    else:
        pc = C.data_ptr()
        key = (A.dtype, A.shape, A.stride(), pa & 15, B.dtype, B.shape, B.stride(), pb & 15, B.get_device(),
               C.dtype, C.shape, C.stride(), pc & 15, C.get_device(), opts)
    rt = _RUNTIMES.get(ordinal) or _runtime(ordinal)
    if opts is None:
        key = None
    plan = rt.plan(key, lambda: _build(rt, *_described(A, B, C, ordinal), schedule, fixup, tile, machine, options,
                                       DEFAULT_TUNING))
    if isinstance(plan, _Empty):
        return plan.apply(C, beta, lambda: A.new_empty((plan.m, plan.n), dtype=_TORCH_OUT[plan.out_dtype]))
    if C is None:
        C = A.new_empty((plan.shape.m, plan.shape.n), dtype=_TORCH_OUT[plan.spec.out_dtype])
        pc, beta = C.data_ptr(), 0.0
    else:
        _overlaps(plan, pa, pb, pc)
    _launch_torch(rt, plan, pa, pb, pc, alpha, beta, stream)
    return C


def _described(A, B, C, ordinal: int) -> tuple[Operand, Operand, Operand | None]:
    a, b = describe(A, "A"), describe(B, "B")
    c = describe(C, "C") if C is not None else None
    for name, x in (("B", B), ("C", C)):
        if x is not None and not isinstance(x, np.ndarray) and _device_of(x, name) != ordinal:
            raise ScheduleError(f"A is on cuda:{ordinal} but {name} is on cuda:{_device_of(x, name)}: put A, B and C "
                                f"on one device")
    return a, b, c


_THREAD = threading.local()  # .contexts: the devices whose context this thread has checked


def _launch(rt: _Runtime, plan: GemmPlan, a: int, b: int, c: int, alpha: float, beta: float, stream: int,
            capture: bool | None = None, only=None) -> None:
    """Launch ``plan`` on ``stream`` in its device's context (restoring the caller's when it was
    another device's); ``capture``: whether the stream is being captured, if the caller knows."""
    drv = driver()
    err, prev = drv.cuCtxGetCurrent()
    switch = int(prev) != int(rt.dev.context)
    if switch:
        rt.dev.activate()
    try:
        lane, capturing = rt.lane(plan, stream, capture)
        plan.enqueue(lane, a, b, c, float(alpha), float(beta), stream, capturing, only)
    finally:
        if switch:
            drv.cuCtxSetCurrent(prev)


def _launch_torch(rt: _Runtime, plan: GemmPlan, a: int, b: int, c: int, alpha: float, beta: float,
                  stream: int | None) -> None:
    """``_launch`` for PyTorch tensors on torch's current device: the context and the capture
    state come from torch, with no driver call (the thread's context is checked once)."""
    calls, ordinal = _TORCH_CALLS, rt.dev.ordinal
    if stream is not None or calls["device"]() != ordinal:
        return _launch(rt, plan, a, b, c, alpha, beta, stream if stream is not None else calls["stream"](ordinal))
    checked = getattr(_THREAD, "contexts", None)
    if checked is None or ordinal not in checked:
        err, prev = driver().cuCtxGetCurrent()
        if int(prev) != int(rt.dev.context):
            return _launch(rt, plan, a, b, c, alpha, beta, calls["stream"](ordinal))
        _THREAD.contexts = (checked or set()) | {ordinal}
    stream = calls["stream"](ordinal)
    capturing = calls["capturing"]()
    lane, capturing = rt.lane(plan, stream, capturing)
    plan.enqueue(lane, a, b, c, float(alpha), float(beta), stream, capturing)


def _stream_of(x: Any, ordinal: int) -> int:
    module = type(x).__module__
    if module.startswith("torch"):
        return int(sys.modules["torch"].cuda.current_stream(ordinal).cuda_stream)
    if module.startswith("cupy"):
        import cupy

        with cupy.cuda.Device(ordinal):
            return int(cupy.cuda.get_current_stream().ptr)
    return 0


def _gemm_any(A, B, C, alpha, beta, schedule, fixup, tile, machine, stream, options, tuning: Tuning) -> Any:
    """Every other input: CuPy and other CUDA arrays, torch tensors on the CPU (refused), NumPy."""
    prepared = prepare(A, B, C, alpha=alpha, beta=beta, schedule=schedule, fixup=fixup, tile=tile, machine=machine,
                       _tuning=tuning, _allow_empty=True, **options)
    return prepared.run(stream)


class Prepared:
    """A GEMM bound to its operands: ``run(stream)`` launches it (and copies NumPy results out);
    ``launch.enqueue(stream)`` only launches, for timing and CUDA graphs."""

    def __init__(self, rt: _Runtime, plan: GemmPlan | _Empty, ops: tuple, output: Any, alpha: float, beta: float,
                 host: tuple | None, ordinal: int, C: Any) -> None:
        self._rt, self._plan, self._ops, self.output = rt, plan, ops, output
        self.alpha, self.beta, self._host, self._ordinal, self._C = alpha, beta, host, ordinal, C
        self.launch = Launch(self)

    @property
    def schedule(self) -> Schedule:
        return self._plan.schedule

    @property
    def plan(self) -> FixupPlan:
        return self._plan.plan

    @property
    def residency(self) -> int:
        return self._plan.residency

    def run(self, stream: int | None = None) -> Any:
        if isinstance(self._plan, _Empty):
            return self._plan.apply(self._C, self.beta, lambda: self.output)
        if stream is None:
            stream = _stream_of(self.output, self._ordinal) if self._host is None else 0
        if self._host is None:
            _launch(self._rt, self._plan, *self._ops, self.alpha, self.beta, stream)
            return self.output
        return self._run_host(stream)

    def _run_host(self, stream: int) -> np.ndarray:
        """NumPy operands: copy in (rows padded as the kernels read them), launch, copy out."""
        drv, rt, plan = driver(), self._rt, self._plan
        err, status = drv.cuStreamIsCapturing(stream)
        if int(status) != 0:
            raise ScheduleError("NumPy operands cannot be captured into a CUDA graph: pass GPU arrays")
        with rt.lock:
            lane = rt.lanes.for_launch(stream, plan.needs, None)
        A, B, C = self._host
        ptrs = []
        for name, x in (("host_a", A), ("host_b", B)):
            dense = np.zeros((x.shape[0], padded(x.shape[1], plan.spec)), dtype=x.dtype)
            dense[:, :x.shape[1]] = x
            ptrs.append(lane.ptr(name))
            _check(drv.cuMemcpyHtoDAsync(ptrs[-1], dense.ctypes.data, dense.nbytes, stream), "cuMemcpyHtoDAsync")
        out = np.ascontiguousarray(C)
        if self.beta != 0.0:
            _check(drv.cuMemcpyHtoDAsync(lane.ptr("host_c"), out.ctypes.data, out.nbytes, stream), "cuMemcpyHtoDAsync")
        _launch(rt, plan, ptrs[0], ptrs[1], lane.ptr("host_c"), self.alpha, self.beta, stream)
        _check(drv.cuMemcpyDtoHAsync(out.ctypes.data, lane.ptr("host_c"), out.nbytes, stream), "cuMemcpyDtoHAsync")
        _check(drv.cuStreamSynchronize(stream), "cuStreamSynchronize")
        if out is not C:
            C[...] = out
        return C


class Launch:
    """The kernels of a Prepared GEMM: ``steps`` (name, grid, block, smem, pdl, each with its own
    ``enqueue(stream)``), ``names`` and ``enqueue(stream)`` for all of them."""

    def __init__(self, prepared: Prepared) -> None:
        self._prepared = prepared
        plan = prepared._plan
        self.steps = [] if isinstance(plan, _Empty) else [_OneStep(prepared, st) for st in plan.steps if st.grid]

    @property
    def names(self) -> list[str]:
        return [st.name for st in self.steps]

    def enqueue(self, stream: int = 0) -> None:
        """The kernels alone: for NumPy operands on the copies the last ``run`` on this stream made
        (so a timing of it leaves the host copies out)."""
        p = self._prepared
        if p._host is None:
            _launch(p._rt, p._plan, *p._ops, p.alpha, p.beta, stream)
            return
        with p._rt.lock:
            lane = p._rt.lanes.for_launch(stream, p._plan.needs, None)
        _launch(p._rt, p._plan, lane.ptr("host_a"), lane.ptr("host_b"), lane.ptr("host_c"), p.alpha, p.beta, stream)


class _OneStep:
    def __init__(self, prepared: Prepared, step) -> None:
        self._prepared, self._step = prepared, step
        self.name, self.grid, self.grid_y, self.block = step.name, step.grid, step.grid_y, step.block
        self.smem, self.pdl = step.smem, step.pdl

    def enqueue(self, stream: int = 0) -> None:
        """This kernel alone (e.g. to time the pack pass), on the stream's lane."""
        p = self._prepared
        _launch(p._rt, p._plan, *p._ops, p.alpha, p.beta, stream, only=self._step)


def _check(result, what: str) -> None:
    err = result[0] if isinstance(result, tuple) else result
    if int(err):
        raise CudaError(f"{what} failed with {err.name}")


def prepare(A: Any, B: Any, C: Any = None, *, alpha: float = 1.0, beta: float = 0.0,
            schedule: str | Schedule = "auto", fixup: str | None = None, tile: TileShape | int | str | None = None,
            machine: Machine | None = None, _tuning: Tuning = DEFAULT_TUNING, _allow_empty: bool = False,
            **options: Any) -> Prepared:
    """Check and plan ``gemm``'s arguments (the same ones) without launching: the returned
    Prepared runs it, or enqueues it for timing and CUDA graphs. Raises what ``gemm`` would."""
    a, b = describe(A, "A"), describe(B, "B")
    c = describe(C, "C") if C is not None else None
    check_operands(a, b, c)  # every operand error before any CUDA call
    _check_options(schedule, fixup, tile, machine)
    ordinal = -1 if a.on_host else _device_of(A, "A")
    rt = _runtime(None if ordinal < 0 else ordinal)
    if not a.on_host:
        _described(A, B, C, rt.dev.ordinal)
    key = (_signature(a), _signature(b), _signature(c) if c is not None else None,
           _options_key(schedule, fixup, tile, machine, options, _tuning))
    plan = rt.plan(None if key[-1] is None else key,
                   lambda: _build(rt, a, b, c, schedule, fixup, tile, machine, options, _tuning))
    if isinstance(plan, _Empty):
        if not _allow_empty:
            raise ScheduleError(f"nothing to prepare: the GEMM is {plan.m}x{plan.n}x{plan.k}; call gemm() instead")
        output = _new_output(A, plan.m, plan.n, plan.out_dtype, rt.dev.ordinal) if C is None else C
        return Prepared(rt, plan, (), output, alpha, beta, None, rt.dev.ordinal, C)
    if C is None:
        beta = 0.0
    if a.on_host:
        out = C if C is not None else np.empty((plan.shape.m, plan.shape.n), dtype=plan.spec.out_dtype)
        return Prepared(rt, plan, (), out, alpha, beta, (A, B, out), rt.dev.ordinal, C)
    output = C if C is not None else _new_output(A, plan.shape.m, plan.shape.n, plan.spec.out_dtype, rt.dev.ordinal)
    pc = describe(output, "C").ptr
    if C is not None:
        _overlaps(plan, a.ptr, b.ptr, pc)
    return Prepared(rt, plan, (a.ptr, b.ptr, pc), output, alpha, beta, None, rt.dev.ordinal, C)


def _signature(op: Operand) -> tuple:
    return (op.kind, op.dtype, op.shape, op.strides, op.ptr & 15)


def _new_output(A: Any, m: int, n: int, dtype: str, ordinal: int) -> Any:
    module = type(A).__module__
    if isinstance(A, np.ndarray):
        return np.empty((m, n), dtype=dtype)
    if module.startswith("torch"):
        return A.new_empty((m, n), dtype=getattr(sys.modules["torch"], dtype))
    try:
        import cupy
    except ImportError:
        raise ScheduleError(f"pass C: streamk allocates a result only for PyTorch, CuPy and NumPy inputs "
                            f"(A is a {type(A).__name__})") from None
    with cupy.cuda.Device(ordinal):
        return cupy.empty((m, n), dtype=dtype)
