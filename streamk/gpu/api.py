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
from typing import Any

from ..schedule import Schedule
from ..shapes import Machine, TileShape
from .device import driver
from .plan import GemmPlan
from .prepared import _build, _described, _overlaps, prepare
from .request import DEFAULT_TUNING, Tuning, request
from .runtime import _RUNTIMES, _Empty, _launch, _Runtime, _runtime

# ---- operands
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
    stream; a handle passed here must stay valid until ``clear_cache()``, as streamk may wait on
    it later). Other ``options`` go to the scheduler (``grid``, ``splits``, ``model_costs``,
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
    req = request(schedule, fixup, tile, machine, options)
    opts = req.key
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
    plan = rt.plan(key, lambda: _build(rt, *_described(A, B, C, ordinal), req))
    if isinstance(plan, _Empty):
        return plan.apply(C, beta, lambda: A.new_empty((plan.m, plan.n), dtype=_TORCH_OUT[plan.out_dtype]))
    if C is None:
        C = A.new_empty((plan.shape.m, plan.shape.n), dtype=_TORCH_OUT[plan.spec.out_dtype])
        pc, beta = C.data_ptr(), 0.0
    else:
        _overlaps(plan, pa, pb, pc)
    _launch_torch(rt, plan, pa, pb, pc, alpha, beta, stream)
    return C


_THREAD = threading.local()  # .contexts: the devices whose context this thread has checked


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


def _gemm_any(A, B, C, alpha, beta, schedule, fixup, tile, machine, stream, options, tuning: Tuning) -> Any:
    """Every other input: CuPy and other CUDA arrays, torch tensors on the CPU (refused), NumPy."""
    prepared = prepare(A, B, C, alpha=alpha, beta=beta, schedule=schedule, fixup=fixup, tile=tile, machine=machine,
                       _tuning=tuning, _allow_empty=True, **options)
    return prepared.run(stream)
