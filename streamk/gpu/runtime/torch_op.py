"""``torch.ops.streamk.gemm``: streamk's GEMM as a PyTorch custom op, for ``torch.compile``.

Imported by ``streamk.gpu.runtime.api`` once torch is in use (this package never imports torch itself),
which hands it the eager ``gemm`` (``register``), so this module imports nothing of the API's.
The op is functional (it returns a new C); ``gemm`` called while torch.compile traces a function
becomes this op plus, when the caller passed C, an in-place copy into it, so
``torch.compile(fullgraph=True)`` captures it whole. An op's arguments are plain values, so under
compilation the schedule is a name and the scheduler options are the plain ones below.
"""

from __future__ import annotations

from typing import Any, Callable, Optional

import torch

from ...errors import ScheduleError
from ...shapes import TileShape

TRACED_OPTIONS = ("grid", "splits", "walk", "tile_order", "out_dtype")  # what a traced gemm passes on
_EAGER: list[Callable[..., Any]] = []  # streamk.gpu.gemm, once registered


def register(gemm: Callable[..., Any]) -> None:
    """Make ``gemm`` the op's eager body."""
    _EAGER[:] = [gemm]


@torch.library.custom_op("streamk::gemm", mutates_args=())
def gemm_op(a: torch.Tensor, b: torch.Tensor, c: Optional[torch.Tensor], alpha: float, beta: float,
            schedule: str, fixup: Optional[str], tile: Optional[str], grid: Optional[int], splits: Optional[int],
            walk: Optional[str], tile_order: Optional[str], out_dtype: Optional[str] = None) -> torch.Tensor:
    out = c.clone() if c is not None else None
    options = {k: v for k, v in (("grid", grid), ("splits", splits), ("walk", walk), ("tile_order", tile_order),
                                 ("out_dtype", out_dtype)) if v is not None}
    edge = int(tile) if tile is not None and tile.isdigit() else tile
    return _EAGER[0](a, b, out, alpha=alpha, beta=beta, schedule=schedule, fixup=fixup, tile=edge, **options)


@gemm_op.register_fake
def _(a, b, c, alpha, beta, schedule, fixup, tile, grid, splits, walk, tile_order, out_dtype=None):
    if c is not None:
        out = c.dtype
    elif out_dtype is not None:
        out = getattr(torch, out_dtype)
    else:
        out = torch.float64 if a.dtype == torch.float64 else torch.float32
    return a.new_empty((a.shape[0], b.shape[1]), dtype=out)


def traced_gemm(A: Any, B: Any, C: Any, alpha: float, beta: float, schedule: Any, fixup: str | None,
                tile: TileShape | int | str | None, machine: Any, options: dict[str, Any]) -> Any:
    """What ``gemm`` is while torch.compile traces it: the op, then C updated in place if given."""
    if not isinstance(schedule, str) or machine is not None or set(options) - set(TRACED_OPTIONS):
        raise ScheduleError(f"under torch.compile, gemm takes a schedule name and only the options "
                            f"{', '.join(TRACED_OPTIONS)} (no Schedule object, machine or model constants); "
                            f"call it eagerly for those")
    if isinstance(tile, TileShape):
        tile = f"{tile.bm}x{tile.bn}x{tile.bk}"  # all three sides: "128x128" names the sm80 kernel
    out = torch.ops.streamk.gemm(A, B, C, float(alpha), float(beta), schedule, fixup,
                                 None if tile is None else str(tile), options.get("grid"), options.get("splits"),
                                 options.get("walk"), options.get("tile_order"), options.get("out_dtype"))
    if C is None:
        return out
    C.copy_(out)
    return C
