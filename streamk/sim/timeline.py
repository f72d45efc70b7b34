"""What the simulator returns: per-CTA segments on SM slots, makespan, utilization, a deadlock verdict.

The simulator never writes times into the Schedule; it returns a ``Timeline`` that points at it.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..costs import Costs
from ..schedule import Schedule

SEGMENT_KINDS = ("overhead", "mac", "store_partial", "wait", "fixup", "store_tile")


def json_number(x: float) -> float | None:
    """``x`` for a JSON document: null where it is not finite (NaN and Infinity are not JSON)."""
    return float(x) if math.isfinite(x) else None


@dataclass(frozen=True, slots=True)
class Segment:
    """One phase of one CTA on one slot, [start, end) in cost-model time units.

    ``slot`` is the global slot id ``sm * ctas_per_sm + j``. ``unit`` is the row in
    ``schedule.units`` (-1 for the per-CTA overhead ``a``); ``tile`` is that unit's tile.
    Reduce tasks of the separate-reduce pass are numbered ``cta = grid + i`` and have unit -1.
    """

    cta: int
    sm: int
    slot: int
    kind: str
    start: float
    end: float
    tile: int = -1
    unit: int = -1

    def __post_init__(self) -> None:
        if self.kind not in SEGMENT_KINDS:
            raise ValueError(f"segment kind must be one of {SEGMENT_KINDS} (got {self.kind!r})")
        if not self.end >= self.start:
            raise ValueError(f"segment must end at or after its start (got {self.start}..{self.end})")


@dataclass(frozen=True, slots=True, eq=False)
class Timeline:
    """The simulated run of one Schedule under one cost model and fixup policy.

    Per-CTA arrays are indexed by blockIdx: ``cta_sm``/``cta_slot`` (-1 if never dispatched),
    ``cta_start`` (nan if never dispatched) and ``cta_end`` (inf if it never finished).
    Under a deadlock ``makespan`` is inf, ``utilization`` 0 and the segments stop where the
    CTAs got stuck.
    """

    schedule: Schedule
    costs: Costs
    policy: str
    segments: tuple[Segment, ...]
    cta_sm: np.ndarray
    cta_slot: np.ndarray
    cta_start: np.ndarray
    cta_end: np.ndarray
    makespan: float
    utilization: float
    total_wait: float
    deadlock: bool
    deadlock_reason: str | None = None

    @property
    def slots(self) -> int:
        machine = self.schedule.machine
        return machine.slots if machine is not None else 0

    def to_json_dict(self) -> dict[str, Any]:
        """The CLI contract's ``simulate --json`` keys (makespan, utilization, grid, deadlock) and more."""
        s = self.schedule
        machine = s.machine
        num = json_number
        return {
            "decomposition": s.decomposition,
            "shape": [s.shape.m, s.shape.n, s.shape.k],
            "tile": [s.tile.bm, s.tile.bn, s.tile.bk],
            "sms": machine.sms if machine else None,
            "ctas_per_sm": machine.ctas_per_sm if machine else None,
            "grid": s.grid,
            "fixup": self.policy,
            "costs": [self.costs.a, self.costs.b, self.costs.c, self.costs.d],
            "total_iters": s.problem.total_iters,
            "makespan": num(self.makespan),
            "utilization": num(self.utilization),
            "total_wait": num(self.total_wait),
            "deadlock": bool(self.deadlock),
            "deadlock_reason": self.deadlock_reason,
            "ctas": [
                {"cta": c, "sm": int(self.cta_sm[c]), "slot": int(self.cta_slot[c]),
                 "start": num(self.cta_start[c]), "end": num(self.cta_end[c])}
                for c in range(s.grid)
            ],
            "segments": [
                {"cta": g.cta, "sm": g.sm, "slot": g.slot, "kind": g.kind, "start": num(g.start),
                 "end": num(g.end), "tile": g.tile, "unit": g.unit}
                for g in self.segments
            ],
        }
