"""A GEMM call's arguments as one value: checked once, keyed once, passed down whole.

``gemm()`` and ``prepare()`` parse their keyword arguments into a ``GemmRequest``; the plan cache
keys on ``request.key``, and the decision and the plan read its fields. ``Tuning`` is not public:
it lets the benchmark harness and the GPU tests pin what auto otherwise decides (how narrow rows
are read, programmatic dependent launch, sm90 clusters).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..errors import ScheduleError
from ..sched.registry import get as scheduler
from ..schedule import Schedule, check_fixup
from ..shapes import Machine, TileShape

NARROW_MODES = ("auto", "always", "never")  # decide.operands.copy_widths


@dataclass(frozen=True, slots=True)
class Tuning:
    """``narrow``: how operands whose rows are 8- or 4-byte aligned are read ("auto", "always" or
    "never": operands.copy_widths); ``pdl``: programmatic dependent launch of a GEMM's kernels behind
    the kernel before each, its own or, for its first main kernel, the stream's (None:
    decide.launches.use_pdl); ``multicast``: False launches sm90 kernels without clusters;
    ``cluster_2d``: every whole-tile schedule on the sm90 tiles that multicast runs in 2x2 clusters that
    share A and B (bench +mc2d; auto does where its tiles are short: decide.launches.auto_quads)."""

    narrow: str = "auto"
    pdl: bool | None = None
    multicast: bool = True
    cluster_2d: bool = False

    def __post_init__(self) -> None:
        if self.narrow not in NARROW_MODES:
            raise ValueError(f"narrow must be one of {', '.join(NARROW_MODES)} (got {self.narrow!r})")


DEFAULT_TUNING = Tuning()


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


@dataclass(frozen=True, slots=True, eq=False)
class GemmRequest:
    """What the caller asked of one GEMM besides its operands (``gemm``'s keyword arguments)."""

    schedule: str | Schedule = "auto"
    fixup: str | None = None
    tile: TileShape | int | str | None = None
    machine: Machine | None = None
    options: tuple[tuple[str, Any], ...] = ()
    tuning: Tuning = DEFAULT_TUNING
    out_dtype: str | None = None  # C's dtype where the call allocates C (None: the inputs' default)

    @property
    def scheduler_options(self) -> dict[str, Any]:
        """The options for the scheduler, as a fresh dict the callee may fill in."""
        return dict(self.options)

    @property
    def key(self) -> tuple | None:
        """The request's part of a plan-cache key; None where an option is unhashable (such a call
        is planned afresh); out_dtype rides with the options, as gemm() keys it."""
        options = self.options
        if self.out_dtype is not None:
            options = tuple(sorted(options + ((OUT_DTYPE, self.out_dtype),)))
        return key_of(self.schedule, self.fixup, self.tile, self.machine, options, self.tuning)


def key_of(schedule: Any, fixup: Any, tile: Any, machine: Any, options: tuple | dict, tuning: Tuning) -> tuple | None:
    """``GemmRequest.key`` straight from ``gemm``'s arguments (unchecked: a cache miss checks them),
    so a repeated call needs no GemmRequest."""
    if type(options) is dict:
        options = tuple(sorted(options.items())) if options else ()
    key = (schedule if type(schedule) is str else _Same(schedule), fixup, tile, machine, options,
           None if tuning is DEFAULT_TUNING else tuning)
    try:
        hash(key)
    except TypeError:
        return None
    return key


def request(schedule: str | Schedule = "auto", fixup: str | None = None, tile: TileShape | int | str | None = None,
            machine: Machine | None = None, options: dict[str, Any] | None = None,
            tuning: Tuning = DEFAULT_TUNING) -> GemmRequest:
    """The checked GemmRequest of ``gemm``'s arguments (ScheduleError naming a bad one, before any CUDA call)."""
    if not isinstance(schedule, (str, Schedule)):
        raise ScheduleError(f"schedule must be a scheduler's name or a Schedule (got {type(schedule).__name__})")
    if isinstance(schedule, str):
        scheduler(schedule)  # an unknown name is refused here
    if machine is not None and not isinstance(machine, Machine):
        raise ScheduleError(f"machine must be a streamk.Machine (got {type(machine).__name__})")
    if fixup is not None and not isinstance(fixup, str):
        raise ScheduleError(f"fixup must be a policy name (got {type(fixup).__name__})")
    if fixup is not None:
        check_fixup(fixup)
    if tile is not None and not isinstance(tile, (TileShape, int, str)):
        raise ScheduleError(f"tile must be a TileShape, an edge such as 64 or 'BMxBN' (got {type(tile).__name__})")
    if not isinstance(tuning, Tuning):
        raise ScheduleError(f"_tuning must be a streamk.gpu.request.Tuning (got {type(tuning).__name__})")
    options = dict(options or {})
    out = dtype_name(options.pop(OUT_DTYPE, None))
    return GemmRequest(schedule, fixup, tile, machine, tuple(sorted(options.items())), tuning, out)


# gemm()'s out_dtype travels with the scheduler options (so it is part of their plan-cache key) under
# this name, and request() takes it out
OUT_DTYPE = "out_dtype"
OUT_DTYPES = ("float32", "float16", "bfloat16", "float64")


def dtype_name(dtype: Any) -> str | None:
    """``out_dtype`` as a name ("float16", ...) from a name, a NumPy dtype or a torch dtype (None stays None)."""
    if dtype is None:
        return None
    name = str(dtype).removeprefix("torch.")
    if name not in OUT_DTYPES:
        try:
            import numpy as np

            name = np.dtype(dtype).name
        except TypeError:
            pass
    if name not in OUT_DTYPES:
        raise ScheduleError(f"out_dtype must be one of {', '.join(OUT_DTYPES)} (got {dtype!r})")
    return name
