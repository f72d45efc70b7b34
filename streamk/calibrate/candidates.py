"""Every candidate schedule of a shape on a Target, each with the calibrated simulator's
microseconds, and which one auto runs: what ``streamk simulate --target`` shows next to auto's
choice, so that a user sees why (issue 43). Pure CPU; a few Schedules per shape.

The candidates are the decompositions and policies of the H200 selection runs (issue 43), as
``streamk bench`` variants, on the tiles auto chooses among for large GEMMs (the dtype's paper tile
and its family's square and wide tiles) and auto's own tile.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from typing import Any

from ..errors import StreamkError
from ..fixup import plan_fixup
from ..parallel import run_ordered, workers_available
from ..schedule import Schedule
from ..shapes import GemmShape, TileShape
from ..target import Target
from .fidelity import fingerprint, pin, resolve
from .predict import predict_us

# Candidates' MAC iterations in all above which their predictions run on worker processes: the DRAM
# traffic model replays every iteration (8192^3's 21 candidates: 3.8 s in one process, 2.4 s on two)
PARALLEL_ITERS = 2_000_000
# DP, Stream-K, DP + one-tile SK, two-tile SK + DP, fixed-split 2 (its default), Stream-K turnstile
# walking backward, Stream-K last-arrival.
CANDIDATES = ("data-parallel", "stream-k", "dp-one-tile-sk", "two-tile-sk-dp", "fixed-split",
              "stream-k!turnstile+back", "stream-k!last-arrival")


@dataclass(frozen=True, slots=True)
class Candidate:
    """One candidate launch: its variant text, Schedule facts, prediction (None: its kernel has no
    calibration, or it cannot finish), and whether auto runs it / the model ranks it first."""

    variant: str
    tile: TileShape
    grid: int
    fixup: str
    predicted_us: float | None
    auto: bool = False
    argmin: bool = False

    def to_json_dict(self) -> dict[str, Any]:
        return {"variant": self.variant, "tile": [self.tile.bm, self.tile.bn, self.tile.bk], "grid": self.grid,
                "fixup": self.fixup, "predicted_us": self.predicted_us, "auto": self.auto, "argmin": self.argmin}


def candidate_tiles(target: Target, dtype: str, auto_tile: TileShape | None = None) -> tuple[TileShape, ...]:
    """The dtype's paper tile, its square and wide large-GEMM tiles on ``target``, and auto's."""
    from ..gpu.decide.tiles import large_tiles

    tiles = [target.tiles_for(dtype)[0], *large_tiles(target, dtype), auto_tile]
    return tuple(dict.fromkeys(t for t in tiles if t is not None))


def launch_requests(schedule: Schedule, dtype: str, target: Target, b_row_bytes: int | None = None
                    ) -> tuple[float, float]:
    """The shares of A's and B's rows that the CTAs of ``schedule``'s launch on ``target`` request
    themselves, the rest multicast by their clusters (gpu/clusters.py requested), B's rows ``b_row_bytes``
    apart (default: a contiguous row-major B, read in place where its rows are 16-byte multiples, else
    its packed copy's)."""
    from ..gpu.catalogue import spec_for_tile
    from ..gpu.clusters import requested
    from ..gpu.decide.operands import contiguous_b_row_bytes
    from .predict import residency

    spec = spec_for_tile(dtype, schedule.tile)
    if not spec.tma:
        return 1.0, 1.0
    if b_row_bytes is None:
        b_row_bytes = contiguous_b_row_bytes(schedule.shape.k, schedule.shape.n, spec)
    ctas_per_sm = target.kernel(dtype, schedule.tile).ctas_per_sm
    slots = residency(schedule.grid, target.sms, ctas_per_sm) * target.sms
    return requested(plan_fixup(schedule), spec, b_row_bytes, slots)


def predicted(schedule: Schedule, dtype: str, target: Target, packed: int | None = None,
              b_row_bytes: int | None = None) -> float | None:
    """The calibrated simulator's microseconds for ``schedule`` on ``target`` with the pack pass of
    ``packed`` bytes and B's rows ``b_row_bytes`` apart (defaults: contiguous row-major operands, what
    the GPU packs of them; a launch of other layouts, e.g. a transposed one reading A^T in place,
    knows its own); None where its kernel has no calibration."""
    from ..gpu.decide.tiles import packed_bytes

    cal = target.kernel(dtype, schedule.tile).calibration
    if cal is None:
        return None
    if packed is None:
        packed = packed_bytes(schedule.shape, dtype, schedule.tile)
    us = predict_us(schedule, cal, target.sms, packed_mb=packed / 1e6,
                    requests=launch_requests(schedule, dtype, target, b_row_bytes))
    return us if math.isfinite(us) else None


def _launch(s: Schedule) -> tuple:
    return fingerprint(s), s.tile, s.tile_order


def candidates(shape: GemmShape, dtype: str, target: Target, auto: Schedule) -> list[Candidate]:
    """Every candidate of ``shape`` with its prediction; ``auto`` (auto's Schedule) marks the one it
    is, where it is one, and the least prediction is marked ``argmin``."""
    built = []
    for tile in candidate_tiles(target, dtype, auto.tile):
        for text in pin(CANDIDATES, tile):
            try:
                built.append((text, resolve(text, shape, dtype, target)))
            except StreamkError:  # a policy this tile's residency refuses: not a candidate
                continue
    tasks = [(s, dtype, target) for _, s in built]
    workers = min(workers_available(), len(tasks))
    if workers > 1 and sum(s.problem.total_iters for _, s in built) > PARALLEL_ITERS:
        times = run_ordered(predicted, tasks, workers)
    else:
        times = [predicted(*task) for task in tasks]
    out = [Candidate(text, s.tile, s.grid, s.fixup, us, auto=_launch(s) == _launch(auto))
           for (text, s), us in zip(built, times)]
    if not any(c.auto for c in out):  # auto's own grid or policy: a row of its own, no candidate
        out.append(Candidate("auto", auto.tile, auto.grid, auto.fixup, predicted(auto, dtype, target), auto=True))
    known = [i for i, c in enumerate(out) if c.predicted_us is not None and c.variant != "auto"]
    if known:
        best = min(known, key=lambda i: out[i].predicted_us)
        out[best] = replace(out[best], argmin=True)
    return out


def table(cands: list[Candidate]) -> str:
    """The candidates as a table, auto's and the model's argmin marked."""
    lines = [f"{'candidate':<34} {'grid':>6} {'fixup':<13} {'predicted us':>12}"]
    for c in cands:
        us = f"{c.predicted_us:12.2f}" if c.predicted_us is not None else f"{'-':>12}"
        marks = ", ".join(m for m, on in (("auto", c.auto), ("model's argmin", c.argmin)) if on)
        lines.append(f"{c.variant:<34} {c.grid:>6} {c.fixup:<13} {us}" + (f"  <- {marks}" if marks else ""))
    auto = next(c for c in cands if c.auto)
    best = next((c for c in cands if c.argmin), None)
    if auto.predicted_us is not None and best is not None:
        lines.append(f"auto's pick is predicted {auto.predicted_us / best.predicted_us:.3f}x the model's argmin")
    return "\n".join(lines)
