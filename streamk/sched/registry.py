"""Schedulers by CLI name: built-in ones and a user's own, all called the same way."""

from __future__ import annotations

import functools
import inspect
from typing import Any, Callable, Protocol

from ..errors import ScheduleError
from ..schedule import DEFAULT_FIXUP, FIXUP_POLICIES, Schedule, check_tile_order
from ..shapes import GemmShape, Machine, TileShape
from .ranges import BatchScheduler


class Scheduler(Protocol):
    def __call__(self, shape: GemmShape, tile: TileShape, machine: Machine, **options: Any) -> Schedule: ...


_REGISTRY: dict[str, Scheduler] = {}
_BATCH: dict[str, BatchScheduler] = {}
WALKS = ("forward", "backward")  # order of each CTA's units: as the scheduler made them, or reversed


def register(name: str, *, batch: BatchScheduler | None = None) -> Callable[[Scheduler], Scheduler]:
    """Register a pure function ``(shape, tile, machine, **options) -> Schedule`` by name.

    The keyword options it declares (``grid``, ``splits``, ...) become the ones it accepts; a
    registered scheduler works in the CLI, the simulator, the executor and on the GPU. ``batch``
    is the same decomposition over an array of shapes (``sched.ranges``), which sweeps use.
    """

    def decorate(fn: Scheduler) -> Scheduler:
        if name in _REGISTRY and _REGISTRY[name] is not fn:
            raise ScheduleError(f"a scheduler named {name!r} is already registered")
        _REGISTRY[name] = fn
        if batch is not None:
            _BATCH[name] = batch
        return fn

    return decorate


def names() -> list[str]:
    return list(_REGISTRY)


def get(name: str) -> Scheduler:
    try:
        return _REGISTRY[name]
    except KeyError:
        raise ScheduleError(f"unknown decomposition {name!r}; choose one of: {', '.join(_REGISTRY)}") from None


def get_batch(name: str) -> BatchScheduler | None:
    """The batch form of scheduler ``name``, if it has one."""
    return _BATCH.get(name)


def accepted_options(name: str) -> list[str]:
    return list(_keyword_options(get(name)))


@functools.lru_cache(maxsize=None)
def _keyword_options(fn: Scheduler) -> tuple[str, ...]:
    """A scheduler's keyword-only options (inspect.signature costs ~0.4 ms: read once per function)."""
    params = inspect.signature(fn).parameters.values()
    return tuple(p.name for p in params if p.kind is inspect.Parameter.KEYWORD_ONLY)


def make_schedule(
    name: str,
    shape: GemmShape,
    tile: TileShape,
    machine: Machine,
    *,
    fixup: str | None = None,
    tile_order: str = "row-major",
    walk: str = "forward",
    **options: Any,
) -> Schedule:
    """Run scheduler ``name``; options it does not take must be None (else a clear error).

    ``fixup``, ``tile_order`` and ``walk`` (``backward`` reverses each CTA's units) apply to
    any scheduler's result, a user's too.
    """
    fn = get(name)
    allowed = accepted_options(name)
    given = {k: v for k, v in options.items() if v is not None}
    extra = sorted(set(given) - set(allowed))
    if extra:
        flag = lambda option: "--" + option.replace("_", "-")  # noqa: E731 (as the CLI spells it)
        takes = ", ".join(flag(a) for a in allowed) or "no options"
        raise ScheduleError(f"{name} does not take {flag(extra[0])} (it takes {takes})")
    if fixup is not None and fixup not in FIXUP_POLICIES:
        raise ScheduleError(f"fixup policy must be one of {', '.join(FIXUP_POLICIES)} (got {fixup!r})")
    check_tile_order(tile_order)
    if walk not in WALKS:
        raise ScheduleError(f"walk must be one of {', '.join(WALKS)} (got {walk!r})")
    schedule = fn(shape, tile, machine, **given)
    if not isinstance(schedule, Schedule):
        raise ScheduleError(f"scheduler {name!r} returned {type(schedule).__name__}, not a Schedule")
    if fixup is not None and fixup != schedule.fixup:
        schedule = schedule.with_fixup(fixup)
    if tile_order != schedule.tile_order:
        schedule = Schedule(schedule.decomposition, schedule.shape, schedule.tile, schedule.units,
                            schedule.cta_offsets, schedule.machine, tile_order, schedule.fixup)
    if walk == "backward":
        schedule = schedule.walked_backward()
    return schedule


__all__ = ["DEFAULT_FIXUP", "Scheduler", "register", "names", "get", "get_batch", "make_schedule", "accepted_options"]
