"""``streamk.gpu.gemm``: C = alpha*A@B + beta*C on the GPU, executing exactly a Schedule.

A thin PyTorch fast path over the device's runtime (``streamk.gpu.runtime.device_runtime``): describe the
operands (no CUDA), find the GemmPlan of their signature in the plan cache of their device (on a
miss: check, decide, refuse a launch that could never finish, upload the table), take the lane of
the caller's stream and launch. A repeated call is a dictionary lookup, a few pointer stores and
the launches: no host-device synchronization. Everything else goes through ``prepare``.
"""

from __future__ import annotations

import sys
import threading
from typing import Any

from ...schedule import Schedule
from ...shapes import Machine, TileShape
from .plan import GemmPlan
from .prepared import operands_of, plan_of, prepare, record_stream, refuse_overlap, tensor_key
from ..request import DEFAULT_TUNING, OUT_DTYPE, dtype_name, key_of, request
from .device_runtime import DeviceRuntime, EmptyPlan, runtime

# ---- operands
_TORCH: Any = None  # the torch module once seen (this module never imports it itself)
_TORCH_OUT: dict[str, Any] = {}
_TORCH_CALLS: dict[str, Any] = {}  # torch's fast C entries for the current device, stream, capture state


def _torch():
    global _TORCH
    if _TORCH is None and "torch" in sys.modules:
        torch = sys.modules["torch"]
        _TORCH_OUT.update(float32=torch.float32, float64=torch.float64, float16=torch.float16, bfloat16=torch.bfloat16)
        c = torch._C
        _TORCH_CALLS.update(
            device=getattr(c, "_cuda_getDevice", torch.cuda.current_device),
            stream=getattr(c, "_cuda_getCurrentRawStream", lambda i: torch.cuda.current_stream(i).cuda_stream),
            capturing=getattr(c, "_cuda_isCurrentStreamCapturing", torch.cuda.is_current_stream_capturing))
        from .torch_op import register

        register(gemm)  # streamk::gemm with torch.library, its eager body this function
        _TORCH = torch

    return _TORCH


def _compiling() -> bool:
    torch = _TORCH if _TORCH is not None else _torch()
    return torch is not None and torch.compiler.is_compiling()


def gemm(A: Any, B: Any, C: Any = None, *, alpha: float = 1.0, beta: float = 0.0,
         schedule: str | Schedule = "auto", fixup: str | None = None, tile: TileShape | int | str | None = None,
         machine: Machine | None = None, stream: int | None = None, out_dtype: Any = None, **options: Any) -> Any:
    """C = alpha * A @ B + beta * C on the GPU, executing ``schedule`` (a name or a Schedule).

    A (m x k) and B (k x n): float16 or bfloat16 (float32 C, or C in the inputs' dtype: a C given
    so, or ``out_dtype``), or float64 (float64 C). Accumulation is FP32 either way; a 16-bit C is
    rounded once, as it is written (the atomic fixup needs a float32 C). PyTorch and
    CuPy CUDA arrays (anything with ``__cuda_array_interface__``) are used in place, any strides
    (operands no copy width can read in place are packed on the device, inside the launch);
    NumPy arrays are copied in and out. C (m x n) is updated in place when given, else allocated
    like A; it must not overlap itself, A or B. m, n or k = 0 work as in torch (k = 0: beta*C).
    The GEMM runs on the operands' device, whatever device is current (all three on one device).
    ``fixup`` overrides the schedule's policy; ``tile`` picks the CTA tile of a named schedule
    (a TileShape, 128 or 64, or "BMxBN"; by default the paper's, and ``auto`` picks one by
    problem size); ``machine`` replaces the device's Machine for a named scheduler; ``stream``:
    a CUDA stream handle of the operands' device (default: the current stream of PyTorch or
    CuPy, else the legacy stream; PyTorch tensors used on another stream than their device's
    current one are recorded on it, as torch's ops do; a handle passed here must stay valid until
    ``clear_cache()``, as streamk may wait on it later). Other ``options`` go to the scheduler
    (``grid``, ``splits``, ``model_costs``, ``walk``, ...). Any number of calls may run at once on
    any streams, threads and devices, inside CUDA graphs and under ``torch.compile``; a schedule
    that could never finish is refused (DeadlockError).
    """
    if out_dtype is not None:  # keyed and checked with the options (request.OUT_DTYPE)
        options[OUT_DTYPE] = dtype_name(out_dtype)
    if _compiling():
        from .torch_op import traced_gemm

        return traced_gemm(A, B, C, alpha, beta, schedule, fixup, tile, machine, options)
    tensor = _TORCH.Tensor if _TORCH is not None else (_torch() and _TORCH.Tensor)
    if tensor and type(A) is tensor and type(B) is tensor and (C is None or type(C) is tensor):
        ordinal = A.get_device()
        if ordinal >= 0:
            key = key_of(schedule, fixup, tile, machine, options, DEFAULT_TUNING)
            if key is not None:  # (an unhashable option is planned afresh, below)
                return _gemm_torch(A, B, C, alpha, beta, stream, ordinal, key,
                                   lambda: request(schedule, fixup, tile, machine, options))
    # every other input: CuPy and other CUDA arrays, torch tensors on the CPU (refused), NumPy
    return prepare(A, B, C, alpha=alpha, beta=beta, schedule=schedule, fixup=fixup, tile=tile, machine=machine,
                   _allow_empty=True, **options).run(stream)


def _gemm_torch(A, B, C, alpha: float, beta: float, stream: int | None, ordinal: int, opts: tuple, req) -> Any:
    """The eager PyTorch path, kept to a few attribute reads and one dictionary lookup (``req``
    makes the checked GemmRequest on a cache miss)."""
    pa, pb, pc = A.data_ptr(), B.data_ptr(), 0 if C is None else C.data_ptr()
    key = tensor_key(A, B, C, pa, pb, pc, opts)
    rt = runtime(ordinal)
    plan = rt.plan(key, lambda: plan_of(rt, *operands_of(A, B, C, ordinal), req()))
    if isinstance(plan, EmptyPlan):
        return plan.apply(C, beta, lambda: A.new_empty((plan.m, plan.n), dtype=_TORCH_OUT[plan.out_dtype]))
    if C is None:
        C = A.new_empty((plan.shape.m, plan.shape.n), dtype=_TORCH_OUT[plan.out_dtype])
        pc, beta = C.data_ptr(), 0.0
    else:
        refuse_overlap(plan, pa, pb, pc)
    if stream is not None:
        record_stream((A, B, C), stream, ordinal)
    _launch_torch(rt, plan, pa, pb, pc, alpha, beta, stream)
    return C


_THREAD = threading.local()  # .contexts: the devices whose context this thread has seen current under torch


def _launch_torch(rt: DeviceRuntime, plan: GemmPlan, a: int, b: int, c: int, alpha: float, beta: float,
                  stream: int | None) -> None:
    """``rt.launch`` for PyTorch tensors of torch's current device: the capture state comes from
    torch, and the context needs no driver call once this thread has seen it current (streamk
    restores the caller's context after each call, and torch makes a device's context current
    with the device)."""
    calls, ordinal = _TORCH_CALLS, rt.dev.ordinal
    if stream is not None or calls["device"]() != ordinal:
        return rt.launch(plan, a, b, c, alpha, beta, stream if stream is not None else calls["stream"](ordinal))
    checked = getattr(_THREAD, "contexts", None)
    if checked is None or ordinal not in checked:
        if not rt.dev.is_current():
            return rt.launch(plan, a, b, c, alpha, beta, calls["stream"](ordinal))
        _THREAD.contexts = (checked or set()) | {ordinal}
    stream = calls["stream"](ordinal)
    lane, capturing = rt.lane(plan, stream, calls["capturing"]())
    plan.enqueue(lane, a, b, c, float(alpha), float(beta), stream, capturing)
