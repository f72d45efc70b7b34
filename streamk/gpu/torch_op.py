"""``torch.ops.streamk.gemm``: streamk's GEMM as a PyTorch custom op, for ``torch.compile``.

Imported by ``streamk.gpu.api`` once torch is in use (this package never imports torch itself).
The op is functional (it returns a new C); ``gemm`` called while torch.compile traces a function
becomes this op plus, when the caller passed C, an in-place copy into it, so
``torch.compile(fullgraph=True)`` captures it whole. Scheduler options travel as JSON and a
Schedule object by a handle into a registry here, because an op's arguments must be plain values.
"""

from __future__ import annotations

import json
from typing import Any, Optional

import torch

from ..errors import ScheduleError
from ..schedule import Schedule
from ..shapes import TileShape

_SCHEDULES: dict[str, Schedule] = {}  # handle -> a Schedule passed to a traced gemm


def _schedule_arg(schedule: str | Schedule) -> str:
    if isinstance(schedule, Schedule):
        handle = f"schedule@{id(schedule):x}"
        _SCHEDULES[handle] = schedule
        return handle
    return schedule


@torch.library.custom_op("streamk::gemm", mutates_args=())
def gemm_op(a: torch.Tensor, b: torch.Tensor, c: Optional[torch.Tensor], alpha: float, beta: float,
            schedule: str, fixup: Optional[str], tile: Optional[str], options: str) -> torch.Tensor:
    from .api import gemm

    out = c.clone() if c is not None else None
    named = _SCHEDULES.get(schedule, schedule)
    edge = int(tile) if tile is not None and tile.isdigit() else tile
    return gemm(a, b, out, alpha=alpha, beta=beta, schedule=named, fixup=fixup, tile=edge, **json.loads(options))


@gemm_op.register_fake
def _(a, b, c, alpha, beta, schedule, fixup, tile, options):
    out = torch.float64 if a.dtype == torch.float64 else torch.float32
    return a.new_empty((a.shape[0], b.shape[1]), dtype=out)


def traced_gemm(A: Any, B: Any, C: Any, alpha: float, beta: float, schedule: str | Schedule, fixup: str | None,
                tile: TileShape | int | str | None, machine: Any, options: dict[str, Any]) -> Any:
    """What ``gemm`` is while torch.compile traces it: the op, then C updated in place if given."""
    if machine is not None:
        raise ScheduleError("machine= is not supported under torch.compile; call gemm eagerly or drop it")
    try:
        encoded = json.dumps(options, sort_keys=True)
    except TypeError as exc:
        raise ScheduleError(f"under torch.compile scheduler options must be plain numbers and strings ({exc})") from None
    if isinstance(tile, TileShape):
        tile = f"{tile.bm}x{tile.bn}"
    out = torch.ops.streamk.gemm(A, B, C, float(alpha), float(beta), _schedule_arg(schedule), fixup,
                                 None if tile is None else str(tile), encoded)
    if C is None:
        return out
    C.copy_(out)
    return C
