"""Schedulers by CLI name: built-in ones and a user's own, all called the same way."""

from __future__ import annotations

import functools
import inspect
import operator
import typing
from typing import Any, Callable, Collection, Protocol

from ..errors import ScheduleError, StreamkError, check_type
from ..limits import check_units
from ..schedule import DEFAULT_FIXUP, FIXUP_POLICIES, Schedule, check_tile_order
from ..shapes import GemmShape, Machine, Problem, TileShape
from .ranges import BatchScheduler


class Scheduler(Protocol):
    def __call__(self, shape: GemmShape, tile: TileShape, machine: Machine, **options: Any) -> Schedule: ...


_REGISTRY: dict[str, Scheduler] = {}
_BATCH: dict[str, BatchScheduler] = {}
WALKS = ("forward", "backward")  # order of each CTA's units: as the scheduler made them, or reversed


def _qualified(fn: Callable) -> str:
    return f"{getattr(fn, '__module__', '?')}.{getattr(fn, '__qualname__', repr(fn))}"


def register(name: str, *, batch: BatchScheduler | None = None,
             replace: bool = False) -> Callable[[Scheduler], Scheduler]:
    """Register a pure function ``(shape, tile, machine, **options) -> Schedule`` by name.

    The keyword options it declares (``grid``, ``splits``, ...) become the ones it accepts; a
    registered scheduler works in the CLI, the simulator, the executor and on the GPU, and its
    Schedules are checked against the shape, tile and machine asked for. Registering a function
    of the same qualified name again (a re-run notebook cell) replaces it; another function under
    a taken name is refused unless ``replace=True``. ``batch`` is the same decomposition over an
    array of shapes (``sched.ranges``), which sweeps use.
    """
    if not isinstance(name, str) or not name.strip():
        raise ScheduleError(f"a scheduler's name must be a non-empty string (got {name!r})")

    def decorate(fn: Scheduler) -> Scheduler:
        if not callable(fn):
            raise ScheduleError(f"register({name!r}) needs a function (got {type(fn).__name__})")
        old = _REGISTRY.get(name)
        if old is not None and not replace and _qualified(old) != _qualified(fn):
            raise ScheduleError(f"a scheduler named {name!r} is already registered ({_qualified(old)}); "
                                f"pick another name, or register({name!r}, replace=True) to replace it")
        _REGISTRY[name] = fn
        _BATCH.pop(name, None)  # a replaced scheduler's batch form goes with it
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
    return [o for o in _keyword_options(get(name)) if o != "tile_order"]  # make_schedule's own (below)


@functools.lru_cache(maxsize=None)
def _keyword_options(fn: Scheduler) -> tuple[str, ...]:
    """A scheduler's keyword-only options (inspect.signature costs ~0.4 ms: read once per function)."""
    params = inspect.signature(fn).parameters.values()
    return tuple(p.name for p in params if p.kind is inspect.Parameter.KEYWORD_ONLY)


@functools.lru_cache(maxsize=None)
def _int_options(fn: Callable) -> frozenset[str]:
    """Keyword options annotated ``int`` (or ``int | None``): they take integers only (read once
    per function: resolving annotations costs ~0.3 ms)."""
    try:
        hints = typing.get_type_hints(fn)
    except Exception:  # a user's annotations may not resolve; then nothing is known
        return frozenset()
    out = set()
    for option, hint in hints.items():
        args = set(typing.get_args(hint)) or {hint}
        if int in args and float not in args:
            out.add(option)
    return frozenset(out)


def _check_int_options(name: str, fn: Callable, given: dict[str, Any]) -> dict[str, Any]:
    """Integer options as ints: 3.5 or True is refused, never truncated to 3 or 1."""
    checked = dict(given)
    for option in _int_options(fn) & set(given):
        value = given[option]
        try:
            if isinstance(value, bool):
                raise TypeError
            checked[option] = operator.index(value)
        except TypeError:
            raise ScheduleError(f"{name}'s --{option.replace('_', '-')} must be an integer "
                                f"(got {value!r})") from None
    return checked


def _flag(option: str) -> str:
    return "--" + option.replace("_", "-")  # as the CLI spells it


def _takes(allowed: list[str], flags: Collection[str] | None) -> str:
    """The options a scheduler takes: as flags, or where ``flags`` names those a command line
    has, those flags and the rest as the Python keywords they only are."""
    if not allowed:
        return "no options"
    if flags is None:
        return ", ".join(map(_flag, allowed))
    here = ", ".join(_flag(a) for a in allowed if a in flags) or "none of these flags"
    python = [a for a in allowed if a not in flags]
    return f"{here} here" + (f", and in Python also {', '.join(python)}" if python else "")


def check_options(name: str, options: dict[str, Any], flags: Collection[str] | None = None) -> dict[str, Any]:
    """The options scheduler ``name`` is given (None ones dropped), refused where it does not take
    one or an integer option is not an integer, before anything is built. A command line passes
    the ``flags`` it has, so that a refusal names only those as flags."""
    fn = get(name)
    allowed = accepted_options(name)
    given = {k: v for k, v in options.items() if v is not None}
    extra = sorted(set(given) - set(allowed))
    if extra:
        raise ScheduleError(f"{name} does not take {_flag(extra[0])} (it takes {_takes(allowed, flags)})")
    return _check_int_options(name, fn, given)


def _check_result(name: str, schedule: Any, shape: GemmShape, tile: TileShape, machine: Machine) -> Schedule:
    """A scheduler's Schedule must be for the shape, tile and machine it was asked for."""
    if not isinstance(schedule, Schedule):
        raise ScheduleError(f"scheduler {name!r} returned {type(schedule).__name__}, not a Schedule")
    for what, got, asked in (("shape", schedule.shape, shape), ("tile", schedule.tile, tile)):
        if got != asked:
            raise ScheduleError(f"scheduler {name!r} returned a Schedule for {what} {got}, but {asked} was "
                                f"asked for; build it from the shape, tile and machine it is given")
    if schedule.machine is None:  # the scheduler did not say: it is for the machine it was given
        return Schedule.proven(schedule.decomposition, shape, tile, schedule.units, schedule.cta_offsets, machine,
                               schedule.tile_order, schedule.fixup)
    if schedule.machine != machine:
        raise ScheduleError(f"scheduler {name!r} returned a Schedule for {schedule.machine}, but {machine} was "
                            f"asked for; build it from the shape, tile and machine it is given")
    return schedule


def _check_size(name: str, shape: GemmShape, tile: TileShape, given: dict[str, Any]) -> None:
    """Refuse before building a Schedule too large for memory: every tile needs a unit, and every
    CTA of a ``grid`` or split of ``splits`` one more."""
    tiles = Problem(shape, tile).tiles
    grid, splits = given.get("grid"), given.get("splits")
    units = max(tiles, grid if isinstance(grid, int) else 0, tiles * (splits if isinstance(splits, int) else 1))
    check_units(units, f"{name} on {shape} with {tile} tiles")


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
    any scheduler's result, a user's too. A scheduler that declares a keyword ``tile_order`` is
    given it: its tile indices depend on the rasterization (paired Stream-K, ``sched.paired``).
    """
    fn = get(name)
    for what, value, kind in (("shape", shape, GemmShape), ("tile", tile, TileShape), ("machine", machine, Machine)):
        check_type(what, value, kind)
    given = check_options(name, options)
    if fixup is not None and fixup not in FIXUP_POLICIES:
        raise ScheduleError(f"fixup policy must be one of {', '.join(FIXUP_POLICIES)} (got {fixup!r})")
    check_tile_order(tile_order)
    if walk not in WALKS:
        raise ScheduleError(f"walk must be one of {', '.join(WALKS)} (got {walk!r})")
    _check_size(name, shape, tile, given)
    if "tile_order" in _keyword_options(fn):
        given["tile_order"] = tile_order
    try:
        made = fn(shape, tile, machine, **given)
    except StreamkError:
        raise
    except Exception as exc:  # a user's scheduler failing is reported, its traceback chained
        raise ScheduleError(f"scheduler {name!r} failed on {shape} with {tile} tiles: "
                            f"{type(exc).__name__}: {exc}") from exc
    schedule = _check_result(name, made, shape, tile, machine)
    if fixup is not None and fixup != schedule.fixup:
        schedule = schedule.with_fixup(fixup)
    if tile_order != schedule.tile_order:
        schedule = Schedule.proven(schedule.decomposition, schedule.shape, schedule.tile, schedule.units,
                                   schedule.cta_offsets, schedule.machine, tile_order, schedule.fixup)
    if walk == "backward":
        schedule = schedule.walked_backward()
    return schedule


__all__ = ["DEFAULT_FIXUP", "Scheduler", "register", "names", "get", "get_batch", "make_schedule",
           "accepted_options", "check_options"]
