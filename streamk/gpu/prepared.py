"""``prepare()``: a GEMM checked, planned and bound to its operands, run or enqueued later.

The general path of ``gemm`` too (CuPy and other CUDA arrays, NumPy); the signature key, the
operand checks that need no CUDA, and the NumPy copies in and out live here.
"""

from __future__ import annotations

import sys
from typing import Any

import numpy as np

from ..errors import ScheduleError
from ..fixup import FixupPlan
from ..schedule import Schedule
from ..shapes import Machine, TileShape
from .device import driver
from .operands import Operand, check_operands, describe, padded
from .plan import GemmPlan, build_plan
from .request import DEFAULT_TUNING, GemmRequest, Tuning, request
from .runtime import _check, _Empty, _launch, _Runtime, _runtime

def _build(rt: _Runtime, a: Operand, b: Operand, c: Operand | None, req: GemmRequest) -> GemmPlan | _Empty:
    spec = check_operands(a, b, c)
    m, k, n = a.shape[0], a.shape[1], b.shape[1]
    if 0 in (m, n, k):
        return _Empty(m, n, k, spec.out_dtype)
    return build_plan(rt.dev, rt.lanes, a, b, c, req)


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


def _described(A, B, C, ordinal: int) -> tuple[Operand, Operand, Operand | None]:
    a, b = describe(A, "A"), describe(B, "B")
    c = describe(C, "C") if C is not None else None
    for name, x in (("B", B), ("C", C)):
        if x is not None and not isinstance(x, np.ndarray) and _device_of(x, name) != ordinal:
            raise ScheduleError(f"A is on cuda:{ordinal} but {name} is on cuda:{_device_of(x, name)}: put A, B and C "
                                f"on one device")
    return a, b, c


def _stream_of(x: Any, ordinal: int) -> tuple[int, object]:
    """The current stream of ``x``'s library: its handle, and the object that owns it where the
    library destroys streams (CuPy; PyTorch's current streams come from a pool it never frees)."""
    module = type(x).__module__
    if module.startswith("torch"):
        return int(sys.modules["torch"].cuda.current_stream(ordinal).cuda_stream), None
    if module.startswith("cupy"):
        import cupy

        with cupy.cuda.Device(ordinal):
            stream = cupy.cuda.get_current_stream()
            return int(stream.ptr), stream
    return 0, None


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
        """What the kernels run: the transposed problem's schedule where ``transposed``."""
        return self._plan.schedule

    @property
    def transposed(self) -> bool:
        """Whether the kernels run C^T = B^T @ A^T (auto, for a decode-like GEMM whose transposed
        layout packs less, such as x @ W.t(): select.runs_transposed)."""
        return bool(getattr(self._plan, "transposed", False))

    @property
    def plan(self) -> FixupPlan:
        return self._plan.plan

    @property
    def residency(self) -> int:
        return self._plan.residency

    def run(self, stream: int | None = None) -> Any:
        if isinstance(self._plan, _Empty):
            return self._plan.apply(self._C, self.beta, lambda: self.output)
        keep = None
        if stream is None:
            stream, keep = _stream_of(self.output, self._ordinal) if self._host is None else (0, None)
        if self._host is None:
            _launch(self._rt, self._plan, *self._ops, self.alpha, self.beta, stream, keep=keep)
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
    """The kernels of a Prepared GEMM: ``steps`` (name, grid, block, smem, pdl, cluster, each with its
    own ``enqueue(stream)``), ``names`` and ``enqueue(stream)`` for all of them."""

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
        self.smem, self.pdl, self.cluster = step.smem, step.pdl, step.cluster

    def enqueue(self, stream: int = 0) -> None:
        """This kernel alone (e.g. to time the pack pass), on the stream's lane."""
        p = self._prepared
        _launch(p._rt, p._plan, *p._ops, p.alpha, p.beta, stream, only=self._step)


def prepare(A: Any, B: Any, C: Any = None, *, alpha: float = 1.0, beta: float = 0.0,
            schedule: str | Schedule = "auto", fixup: str | None = None, tile: TileShape | int | str | None = None,
            machine: Machine | None = None, _tuning: Tuning = DEFAULT_TUNING, _allow_empty: bool = False,
            **options: Any) -> Prepared:
    """Check and plan ``gemm``'s arguments (the same ones) without launching: the returned
    Prepared runs it, or enqueues it for timing and CUDA graphs. Raises what ``gemm`` would."""
    a, b = describe(A, "A"), describe(B, "B")
    c = describe(C, "C") if C is not None else None
    check_operands(a, b, c)  # every operand error before any CUDA call
    req = request(schedule, fixup, tile, machine, options, _tuning)
    ordinal = -1 if a.on_host else _device_of(A, "A")
    rt = _runtime(None if ordinal < 0 else ordinal)
    if not a.on_host:
        _described(A, B, C, rt.dev.ordinal)
    key = (_signature(a), _signature(b), _signature(c) if c is not None else None,
           req.key)
    plan = rt.plan(None if key[-1] is None else key, lambda: _build(rt, a, b, c, req))
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
