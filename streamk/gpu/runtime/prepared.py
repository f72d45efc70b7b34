"""``prepare()``: a GEMM checked, planned and bound to its operands, run or enqueued later.

The general path of ``gemm`` too (CuPy and other CUDA arrays, NumPy). A ``Prepared`` owns what
its launches read: it holds its operands (a dropped temporary stays valid), and NumPy operands'
device copies are its own. A launch on a stream other than the current one tells PyTorch's caching
allocator that the tensors are in use there (``record_stream``), as torch's own ops do.
"""

from __future__ import annotations

import sys
from typing import Any

import numpy as np

from ...errors import ScheduleError
from ...fixup import FixupPlan
from ...schedule import Schedule
from ...shapes import Machine, TileShape
from .device import Buffer, device, driver
from ..errors import check
from ..decide.operands import Operand, c_dtype_of, check_operands, describe, padded
from .plan import GemmPlan, build_plan
from ..request import DEFAULT_TUNING, GemmRequest, Tuning, request
from .device_runtime import DeviceRuntime, EmptyPlan, runtime


def plan_of(rt: DeviceRuntime, a: Operand, b: Operand, c: Operand | None, req: GemmRequest) -> GemmPlan | EmptyPlan:
    """Check and build the plan of these operands and this request on ``rt``'s device."""
    spec = check_operands(a, b, c, req.out_dtype)
    m, k, n = a.shape[0], a.shape[1], b.shape[1]
    if 0 in (m, n, k):
        return EmptyPlan(m, n, k, c_dtype_of(c, req.out_dtype, spec))
    return build_plan(rt.dev, rt.lanes, a, b, c, req)


def refuse_overlap(plan: GemmPlan, a: int, b: int, c: int) -> None:
    ea, eb, ec = plan.extents
    if (c < a + ea and a < c + ec) or (c < b + eb and b < c + ec):
        raise ScheduleError("C overlaps A or B in memory: the kernels would read what they write; pass a C of its "
                            "own (or none)")


def device_of(x: Any) -> int:
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


def refuse_other_devices(B: Any, C: Any, ordinal: int) -> None:
    """ScheduleError where B or C is a GPU operand on another device than ``ordinal`` (A's)."""
    for name, x in (("B", B), ("C", C)):
        if x is not None and not isinstance(x, np.ndarray) and (where := device_of(x)) != ordinal:
            raise ScheduleError(f"A is on cuda:{ordinal} but {name} is on cuda:{where}: put A, B and C on one "
                                f"device (a GEMM runs on one GPU)")


def operands_of(A: Any, B: Any, C: Any, ordinal: int) -> tuple[Operand, Operand, Operand | None]:
    """A, B and C described, refusing GPU operands on another device than ``ordinal`` (A's)."""
    refuse_other_devices(B, C, ordinal)
    return describe(A, "A"), describe(B, "B"), describe(C, "C") if C is not None else None


def torch_current_stream(ordinal: int) -> int:
    """PyTorch's current stream handle on device ``ordinal`` (its C entry where it has one: this is
    asked on every launch of a Prepared)."""
    torch = sys.modules["torch"]
    raw = getattr(torch._C, "_cuda_getCurrentRawStream", None)
    return int(raw(ordinal)) if raw is not None else int(torch.cuda.current_stream(ordinal).cuda_stream)


def current_stream(x: Any, ordinal: int) -> tuple[int, object]:
    """The current stream of ``x``'s library: its handle, and the object that owns it where the
    library destroys streams (CuPy; PyTorch's current streams come from a pool it never frees)."""
    module = type(x).__module__
    if module.startswith("torch"):
        return torch_current_stream(ordinal), None
    if module.startswith("cupy"):
        import cupy

        with cupy.cuda.Device(ordinal):
            stream = cupy.cuda.get_current_stream()
            return int(stream.ptr), stream
    return 0, None


_TORCH_STREAMS: dict[tuple[int, int], Any] = {}  # (device, handle) -> torch.cuda.ExternalStream


def record_stream(tensors: tuple, stream: int, ordinal: int) -> None:
    """Tell PyTorch's caching allocator that ``tensors`` are used on ``stream`` where that is not
    the device's current stream, so their memory is not handed out again before the launch is done."""
    if stream == torch_current_stream(ordinal):
        return
    torch = sys.modules["torch"]
    external = _TORCH_STREAMS.get((ordinal, stream))
    if external is None:
        device(ordinal).refuse_foreign_stream(stream)
        if len(_TORCH_STREAMS) > 256:
            _TORCH_STREAMS.clear()
        external = _TORCH_STREAMS[(ordinal, stream)] = torch.cuda.ExternalStream(
            stream, device=torch.device("cuda", ordinal))
    for t in tensors:
        t.record_stream(external)


class Prepared:
    """A GEMM bound to its operands: ``run(stream)`` launches it (and copies NumPy results out);
    ``launch.enqueue(stream)`` only launches, for timing and CUDA graphs. It holds A, B and C for
    as long as it lives."""

    def __init__(self, rt: DeviceRuntime, plan: GemmPlan | EmptyPlan, operands: tuple, ptrs: tuple[int, int, int],
                 alpha: float, beta: float, C: Any) -> None:
        output = operands[2]
        self._rt, self._plan, self.output, self.alpha, self.beta, self._C = rt, plan, output, alpha, beta, C
        self._operands = operands  # (A, B, output): held, so their memory outlives every launch
        self._torch = tuple(x for x in operands if type(x).__module__.startswith("torch"))
        self._host = isinstance(operands[0], np.ndarray)
        self._staging: tuple[Buffer, ...] = ()
        if self._host and isinstance(plan, GemmPlan):  # this Prepared's own device copies of NumPy operands
            needs = plan.needs
            self._staging = tuple(rt.dev.alloc(n) for n in (needs.host_a, needs.host_b, needs.host_c))
            ptrs = tuple(buf.ptr for buf in self._staging)
        self._ptrs = ptrs  # where the kernels read A and B and write C
        self.launch = Launch(self)

    @property
    def schedule(self) -> Schedule:
        """What the kernels run: the transposed problem's schedule where ``transposed``."""
        return self._plan.schedule

    @property
    def transposed(self) -> bool:
        """Whether the kernels run C^T = B^T @ A^T (auto, for a decode-like GEMM whose transposed
        layout packs less, such as x @ W.t(): decide.orient.orient)."""
        return bool(getattr(self._plan, "transposed", False))

    @property
    def plan(self) -> FixupPlan:
        return self._plan.plan

    @property
    def residency(self) -> int:
        return self._plan.residency

    def run(self, stream: int | None = None) -> Any:
        if isinstance(self._plan, EmptyPlan):
            return self._plan.apply(self._C, self.beta, lambda: self.output)
        if self._host:
            return self._run_host(0 if stream is None else stream)
        keep = None
        if stream is None:
            stream, keep = current_stream(self.output, self._rt.dev.ordinal)
        self._enqueue(stream, keep=keep)
        return self.output

    def _enqueue(self, stream: int, only=None, keep: object = None) -> None:
        if self._torch:
            record_stream(self._torch, stream, self._rt.dev.ordinal)
        self._rt.launch(self._plan, *self._ptrs, self.alpha, self.beta, stream, only=only, keep=keep)

    def _run_host(self, stream: int) -> np.ndarray:
        """NumPy operands: copy in (rows padded as the kernels read them), launch, copy out."""
        drv, rt, plan = driver(), self._rt, self._plan
        A, B, C = self._operands
        out = np.ascontiguousarray(C)
        with rt.dev.entered():
            status = check(drv.cuStreamIsCapturing(stream), f"cuStreamIsCapturing({stream:#x})")
            if int(status) != 0:
                raise ScheduleError("NumPy operands cannot be captured into a CUDA graph: pass GPU arrays")
            for x, ptr in ((A, self._ptrs[0]), (B, self._ptrs[1])):
                dense = np.zeros((x.shape[0], padded(x.shape[1], plan.spec)), dtype=x.dtype)
                dense[:, :x.shape[1]] = x
                # from pageable memory: the copy has read ``dense`` when this returns
                check(drv.cuMemcpyHtoDAsync(ptr, dense.ctypes.data, dense.nbytes, stream), "cuMemcpyHtoDAsync")
            if self.beta != 0.0:
                check(drv.cuMemcpyHtoDAsync(self._ptrs[2], out.ctypes.data, out.nbytes, stream), "cuMemcpyHtoDAsync")
            self._enqueue(stream)
            check(drv.cuMemcpyDtoHAsync(out.ctypes.data, self._ptrs[2], out.nbytes, stream), "cuMemcpyDtoHAsync")
            check(drv.cuStreamSynchronize(stream), "cuStreamSynchronize")
        if out is not C:
            C[...] = out
        return C


class Launch:
    """The kernels of a Prepared GEMM: ``steps`` (name, grid, block, smem, pdl, cluster, each with its
    own ``enqueue(stream)``), ``names`` and ``enqueue(stream)`` for all of them."""

    def __init__(self, prepared: Prepared) -> None:
        self._prepared = prepared
        plan = prepared._plan
        self.steps = [] if isinstance(plan, EmptyPlan) else [_OneStep(prepared, st) for st in plan.steps if st.grid]

    @property
    def names(self) -> list[str]:
        return [st.name for st in self.steps]

    def enqueue(self, stream: int = 0) -> None:
        """The kernels alone: for NumPy operands on this Prepared's device copies as its last
        ``run`` left them (so a timing of it leaves the host copies out)."""
        if self.steps:
            self._prepared._enqueue(stream)


class _OneStep:
    def __init__(self, prepared: Prepared, step) -> None:
        self._prepared, self._step = prepared, step
        self.name, self.grid, self.grid_y, self.block = step.name, step.grid, step.grid_y, step.block
        self.smem, self.pdl, self.cluster = step.smem, step.pdl, step.cluster

    def enqueue(self, stream: int = 0) -> None:
        """This kernel alone (e.g. to time the pack pass), on the stream's lane."""
        self._prepared._enqueue(stream, only=self._step)


def prepare(A: Any, B: Any, C: Any = None, *, alpha: float = 1.0, beta: float = 0.0,
            schedule: str | Schedule = "auto", fixup: str | None = None, tile: TileShape | int | str | None = None,
            machine: Machine | None = None, _tuning: Tuning = DEFAULT_TUNING, _allow_empty: bool = False,
            **options: Any) -> Prepared:
    """Check and plan ``gemm``'s arguments (the same ones) without launching: the returned
    Prepared runs it, or enqueues it for timing and CUDA graphs. Raises what ``gemm`` would."""
    a, b = describe(A, "A"), describe(B, "B")
    c = describe(C, "C") if C is not None else None
    req = request(schedule, fixup, tile, machine, options, _tuning)
    check_operands(a, b, c, req.out_dtype)  # every operand error before any CUDA call
    rt = runtime(None if a.on_host else device_of(A))
    if not a.on_host:
        refuse_other_devices(B, C, rt.dev.ordinal)
    key = req.key
    if key is not None:
        key = signature_key(A, B, C, a, b, c, key)
    plan = rt.plan(key, lambda: plan_of(rt, a, b, c, req))
    if isinstance(plan, EmptyPlan):
        if not _allow_empty:
            raise ScheduleError(f"nothing to prepare: the GEMM is {plan.m}x{plan.n}x{plan.k}; call gemm() instead")
        output = _new_output(A, plan.m, plan.n, plan.out_dtype, rt.dev.ordinal) if C is None else C
        return Prepared(rt, plan, (A, B, output), (0, 0, 0), alpha, beta, C)
    if C is None:
        beta = 0.0
    output = C if C is not None else _new_output(A, plan.shape.m, plan.shape.n, plan.out_dtype, rt.dev.ordinal)
    pc = c.ptr if c is not None else describe(output, "C").ptr
    if C is not None and not a.on_host:
        refuse_overlap(plan, a.ptr, b.ptr, pc)
    return Prepared(rt, plan, (A, B, output), (a.ptr, b.ptr, pc), alpha, beta, C)


def signature_key(A: Any, B: Any, C: Any, a: Operand, b: Operand, c: Operand | None, request_key: tuple) -> tuple:
    """The plan-cache key of a call: what its plan depends on (shapes, dtypes, element strides and
    16-byte alignment of the operands, their device, the request). PyTorch tensors are keyed by
    ``tensor_key``, the fast path's own, so ``prepare`` and ``gemm`` share plans."""
    if a.kind == "torch" and b.kind == "torch" and (c is None or c.kind == "torch"):
        return tensor_key(A, B, C, a.ptr, b.ptr, c.ptr if c is not None else 0, request_key)
    return (a.kind, a.dtype, a.shape, a.strides, a.ptr & 15, b.kind, b.dtype, b.shape, b.strides, b.ptr & 15,
            None if c is None else (c.kind, c.dtype, c.shape, c.strides, c.ptr & 15), request_key)


def tensor_key(A: Any, B: Any, C: Any, pa: int, pb: int, pc: int, request_key: tuple) -> tuple:
    """``signature_key`` of PyTorch tensors from their attributes alone (the eager fast path)."""
    if C is None:
        return (A.dtype, A.shape, A.stride(), pa & 15, B.dtype, B.shape, B.stride(), pb & 15, B.get_device(),
                request_key)
    return (A.dtype, A.shape, A.stride(), pa & 15, B.dtype, B.shape, B.stride(), pb & 15, B.get_device(),
            C.dtype, C.shape, C.stride(), pc & 15, C.get_device(), request_key)


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
