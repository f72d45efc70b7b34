"""CPU-parallel work (sweeps, fidelity predictions) on worker processes that Ctrl-C stops.

Workers are forked (a scheduler registered before the work is seen by them), or spawned where
this process has initialized CUDA through PyTorch: a forked child must never touch CUDA, and
freeing a tensor it inherited can (PyTorch's allocator records an event for a tensor that was used
on another stream, as streamk's launches tell it to). Workers ignore SIGINT:
Ctrl-C interrupts only the parent, which then terminates them at once instead of waiting for the
tasks they run, so an interrupted sweep stops within a second and prints no worker tracebacks.
"""

from __future__ import annotations

import signal
import sys
from contextlib import contextmanager
from multiprocessing import get_context
from multiprocessing.pool import Pool
from typing import Any, Callable, Iterator, Sequence

from .env import sweep_workers


def workers_available() -> int:
    """Processes for CPU-parallel work: STREAMK_SWEEP_WORKERS (capped at the CPUs), or every CPU."""
    return sweep_workers()


def start_method() -> str:
    """``fork``, or ``spawn`` where PyTorch has initialized CUDA in this process (see the module doc)."""
    torch = sys.modules.get("torch")
    return "spawn" if torch is not None and torch.cuda.is_initialized() else "fork"


def _ignore_sigint() -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)


def _call(item: tuple[int, Callable[..., Any], tuple]) -> tuple[int, Any]:
    index, func, args = item
    return index, func(*args)


def run_unordered(func: Callable[..., Any], tasks: Sequence[tuple], workers: int) -> Iterator[tuple[int, Any]]:
    """``(i, func(*tasks[i]))`` as each task finishes, on at most ``workers`` processes (in this
    one where that is 1 or there is one task). Any exception, Ctrl-C's included, terminates the
    workers before it propagates."""
    workers = min(workers, len(tasks))
    if workers <= 1:
        for i, args in enumerate(tasks):
            yield i, func(*args)
        return
    pool = get_context(start_method()).Pool(workers, initializer=_ignore_sigint)
    try:
        yield from pool.imap_unordered(_call, [(i, func, args) for i, args in enumerate(tasks)])
        pool.close()
    finally:
        pool.terminate()
        pool.join()


def run_ordered(func: Callable[..., Any], tasks: Sequence[tuple], workers: int) -> list[Any]:
    """``[func(*t) for t in tasks]``, spread as ``run_unordered`` spreads it."""
    out: list[Any] = [None] * len(tasks)
    for i, value in run_unordered(func, tasks, workers):
        out[i] = value
    return out


@contextmanager
def worker_pool(workers: int) -> Iterator[Pool | None]:
    """A pool of ``workers`` processes kept for many batches of work (one calibration fit after
    another), or None where ``workers`` <= 1 (the caller then works in this process). Started as
    ``run_unordered``'s are, terminated on leaving, Ctrl-C's exception included."""
    if workers <= 1:
        yield None
        return
    pool = get_context(start_method()).Pool(workers, initializer=_ignore_sigint)
    try:
        yield pool
        pool.close()
    finally:
        pool.terminate()
        pool.join()
