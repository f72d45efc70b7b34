"""The measuring side (GPU and PyTorch only): time Schedules with CUDA events, and run a calibration.

``time_schedules`` is the one interface between the design, the fit and the hardware: the CPU
tests substitute the calibrated simulator for it. Each Schedule runs through ``streamk.gpu.prepare``
exactly as a user's would, is checked against ``torch.mm`` once, and is timed alone after a pause
by ``bench.harness.time_interleaved`` (CUDA-graph replays, median of its repetitions): timed round-robin
with the others, the long probes (ms at the 700 W cap) lowered the clocks the short ones ran at
(SM clock p10 1575 MHz during a calibration, 1965 during a fidelity run; LOG.md v21). The pause
lasts as long as the previous probe kept the GPU busy (at most 0.5 s), and a probe of long
replays runs fewer of them (``pacing``: the rules, and the wall-time estimate; LOG.md v44).
"""

from __future__ import annotations

import importlib.util
import math
import time
from typing import Callable, Sequence

import numpy as np

from ..errors import CudaError, StreamkError
from ..schedule import Schedule
from ..target import family_for
from ..shapes import TileShape
from .design import Probe
from .fit import Fit, calibrate_with
from .model import Calibration
from .pacing import CLOCK_WARM_S, Pacing, pause_s, reps_for

MAX_REL_ERROR = 1e-2  # a probe whose result is this far from torch.mm is a broken kernel, not a time


def require_gpu() -> None:
    """CudaError in one line where there is no usable GPU or no PyTorch."""
    from ..gpu import available

    ok, why = available()
    if not ok:
        raise CudaError(f"needs a CUDA GPU: {why}")
    if importlib.util.find_spec("torch") is None:
        raise CudaError("needs PyTorch for CUDA events and inputs: pip install 'streamk[torch]'")


def time_schedules(schedules: Sequence[Schedule], dtype: str = "float16", pacing: Pacing | None = None) -> np.ndarray:
    """Median microseconds of each Schedule on the current GPU, random inputs of ``dtype``, paced
    by ``pacing`` (default this version's rules: ``pacing.pause_s``, ``pacing.reps_for``)."""
    import torch

    from ..gpu import prepare
    from ..bench.harness import time_interleaved

    stream = torch.cuda.Stream()
    out_dtype = torch.float64 if dtype == "float64" else torch.float32
    fns, held = {}, []
    for i, s in enumerate(schedules):
        m, n, k = s.shape.m, s.shape.n, s.shape.k
        A = torch.randn(m, k, device="cuda").to(getattr(torch, dtype))
        B = torch.randn(k, n, device="cuda").to(getattr(torch, dtype))
        C = torch.full((m, n), float("nan"), device="cuda", dtype=out_dtype)
        p = prepare(A, B, C, schedule=s, fixup=s.fixup)
        torch.cuda.synchronize()  # the inputs are made on the default stream; the probe runs on ours
        p.run(stream.cuda_stream)
        torch.cuda.synchronize()
        ref = A.double() @ B.double()
        err = float((C.double() - ref).norm() / ref.norm())
        if not err <= MAX_REL_ERROR:
            raise StreamkError(f"probe {s.decomposition} ({s.shape}) computed a wrong C (relative error {err:.1e}); "
                               f"its time would mean nothing: run the GPU tests")
        held.append((A, B, C, p))
        fns[str(i)] = lambda launch=p.launch: launch.enqueue(stream.cuda_stream)
    times, busy = {}, None  # busy: how long the previous probe kept the GPU busy (s)
    for name, fn in fns.items():
        time.sleep(pause_s(busy, pacing))
        start = time.perf_counter()
        warm_clocks(fn, stream)
        times.update(time_interleaved({name: fn}, stream, reps=lambda replay_ms: reps_for(replay_ms / 1e3, pacing)))
        busy = time.perf_counter() - start
    return np.array([times[str(i)][0] * 1e3 for i in range(len(schedules))])


def warm_clocks(fn: Callable[[], None], stream) -> None:
    """Run ``fn`` for CLOCK_WARM_S: the pause lets the SM clock fall to idle, and a short probe's
    few milliseconds of timing could otherwise run during its climb back."""
    deadline = time.perf_counter() + CLOCK_WARM_S
    while time.perf_counter() < deadline:
        fn()
        stream.synchronize()


def calibrate(dtype: str, tile: TileShape, quick: bool = False, pacing: Pacing | None = None,
              pool=None, timing: list[float] | None = None, tpc: bool = False
              ) -> tuple[tuple[Probe, ...], Fit, Calibration, str]:
    """Probe, time and fit one kernel on the current GPU: the probes, the fit, its Calibration and
    the device family whose file it belongs in; ``pacing``: how the probes are paced (default
    this version's), ``pool``: worker processes for the fit (``parallel.worker_pool``),
    ``timing``: where given, the seconds each call of the timer took are appended to it; ``tpc``: with
    the dp-tpc probes, which price c_tpc (design.probes; not yet run on a GPU, LOG.md v49)."""
    from ..gpu.runtime.device import current
    from ..gpu.catalogue import spec_for_tile
    from ..gpu.decide.tiles import packed_bytes

    dev = current()
    family = family_for(dev.arch, dev.name)
    if family is None:
        raise CudaError(f"{dev.name} ({dev.arch}) is no preset's GPU; calibration files are kept per preset")
    ctas = dev.target.kernel(dtype, tile).ctas_per_sm
    def timer(schedules: Sequence[Schedule], dtype: str) -> np.ndarray:
        start = time.monotonic()
        out = time_schedules(schedules, dtype, pacing)
        if timing is not None:
            timing.append(time.monotonic() - start)
        return out
    design, result = calibrate_with(timer, dtype, tile, dev.sms, ctas, dev.l2_bytes, quick,
                                    packed_mb=lambda shape: packed_bytes(shape, dtype, tile) / 1e6,
                                    row32=spec_for_tile(dtype, tile).tma, tpc=tpc, pool=pool)
    return design, result, result.calibration(dtype, tile, ctas, dev.name, dev.sms, dev.l2_bytes), family


def measure_fidelity(shapes: Sequence[tuple[int, int, int]], variant_texts: Sequence[str], dtype: str,
                     seconds: float = math.inf, on_shape: Callable[[int, list[dict]], None] = lambda i, rows: None
                     ) -> list[dict]:
    """One row per (shape, variant): the GPU's median time of the variant (``bench.harness``'s
    interleaved CUDA-graph timing), its grid, policy and Schedule fingerprint. A variant whose
    launch is another's (auto running DP's schedule) is timed once and shares that time; one the
    backend refuses is a row with its ``error``. No new shape starts after ``seconds``."""
    import torch

    from ..gpu import prepare
    from ..bench.harness import time_interleaved
    from ..gpu.runtime.device import current
    from ..gpu.runtime.device_runtime import clear_cache
    from ..bench.variants import launch_key, variant
    from .fidelity import fingerprint

    dev, stream = current(), torch.cuda.Stream()
    out_dtype = torch.float64 if dtype == "float64" else torch.float32
    rows: list[dict] = []
    start = time.monotonic()
    for i, (m, n, k) in enumerate(shapes):
        if time.monotonic() - start > seconds:
            break
        A = torch.randn(m, k, device="cuda").to(getattr(torch, dtype))
        B = torch.randn(k, n, device="cuda").to(getattr(torch, dtype))
        C = torch.full((m, n), float("nan"), device="cuda", dtype=out_dtype)
        ref = A.double() @ B.double()
        shape_rows, fns, first = [], {}, {}
        for text in variant_texts:
            row = {"m": m, "n": n, "k": k, "dtype": dtype, "variant": text, "error": "", "same_as": ""}
            shape_rows.append(row)
            try:
                p = prepare(A, B, C, **variant(text, lambda: dev.sms))
            except StreamkError as exc:  # a policy this residency refuses: a row that says so
                row["error"] = " ".join(str(exc).split())
                continue
            s = p.schedule
            row.update(tile=str(s.tile), grid=s.grid, fixup=p.plan.policy, fingerprint=fingerprint(s))
            C.fill_(float("nan"))
            torch.cuda.synchronize()  # the poison is written on the default stream; the run is on ours
            p.run(stream.cuda_stream)
            torch.cuda.synchronize()
            row["relerr"] = float((C.double() - ref).norm() / ref.norm())
            if not row["relerr"] <= MAX_REL_ERROR:  # timed anyway, but no prediction is held against it
                row["error"] = f"wrong C (relative error {row['relerr']:.1e})"
            key = launch_key(p)
            if key in first:
                row["same_as"] = first[key]
                continue
            first[key] = text
            fns[text] = lambda launch=p.launch: launch.enqueue(stream.cuda_stream)
        times = time_interleaved(fns, stream) if fns else {}
        for row in shape_rows:
            timed = times.get(row["same_as"] or row["variant"])
            if timed is not None:
                row["measured_us"], row["p20_us"], row["p80_us"] = (x * 1e3 for x in timed)
        rows.extend(shape_rows)
        torch.cuda.synchronize()
        clear_cache()  # this shape's graphs are gone: their lanes go as the driver releases them
        on_shape(i, shape_rows)
    return rows
