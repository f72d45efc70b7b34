"""CUDA-event timing on the driver API (no framework needed): median, p20, p80 milliseconds."""

from __future__ import annotations

import statistics
from typing import Callable

from .device import Device, current
from ..errors import check


def time_launch(enqueue: Callable[[int], None], *, reps: int = 50, warmup: int = 3, stream: int = 0,
                dev: Device | None = None) -> tuple[float, float, float]:
    """Median, p20, p80 of ``reps`` timed calls of ``enqueue(stream)`` after ``warmup`` untimed ones,
    on ``dev`` (default: ``STREAMK_DEVICE``'s)."""
    with (dev or current()).entered():
        return _timed(enqueue, reps, warmup, stream)


def _timed(enqueue: Callable[[int], None], reps: int, warmup: int, stream: int) -> tuple[float, float, float]:
    from cuda.bindings import driver

    for _ in range(warmup):
        enqueue(stream)
    events = []
    for _ in range(reps):
        start = check(driver.cuEventCreate(0), "cuEventCreate")
        end = check(driver.cuEventCreate(0), "cuEventCreate")
        check(driver.cuEventRecord(start, driver.CUstream(stream)), "cuEventRecord")
        enqueue(stream)
        check(driver.cuEventRecord(end, driver.CUstream(stream)), "cuEventRecord")
        events.append((start, end))
    check(driver.cuStreamSynchronize(driver.CUstream(stream)), "cuStreamSynchronize")
    ms = [float(check(driver.cuEventElapsedTime(s, e), "cuEventElapsedTime")) for s, e in events]
    for s, e in events:
        driver.cuEventDestroy(s)
        driver.cuEventDestroy(e)
    q = statistics.quantiles(ms, n=5) if len(ms) > 1 else [ms[0]] * 4
    return statistics.median(ms), q[0], q[3]
