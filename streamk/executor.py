"""CPU executor: computes C = alpha*A@B + beta*C exactly as a Schedule and its fixup plan say.

Each CTA runs its units in order; a unit's partial sum goes where the plan's Action sends it
(C, a workspace slot, an atomic add) and a wait blocks that CTA until the awaited unit has
signalled. CTAs are interleaved cooperatively in a caller-chosen priority order, so running
the same schedule under shuffled orders exercises the real races of the fixup protocol; a
state where no CTA can move is reported as a DeadlockError, never a hang.
"""

from __future__ import annotations

from typing import Callable, Sequence

import numpy as np

from .errors import DeadlockError, ScheduleError
from .fixup import TRAITS, Action, FixupPlan, actions_with, plan_fixup
from .schedule import Schedule

PRECISIONS = {"fp16": np.float32, "bf16": np.float32, "fp32": np.float32, "fp64": np.float64}
"""Input precision -> accumulator (and output) dtype."""


def round_to_bf16(x: np.ndarray) -> np.ndarray:
    """Round float32 values to the nearest bfloat16 (ties to even), kept as float32."""
    bits = np.ascontiguousarray(x, dtype=np.float32).view(np.uint32)
    rounded = (bits + 0x7FFF + ((bits >> 16) & 1)) & 0xFFFF0000
    return rounded.astype(np.uint32).view(np.float32).reshape(np.shape(x))


def infer_precision(a: np.ndarray) -> str:
    return {np.float16: "fp16", np.float32: "fp32", np.float64: "fp64"}.get(a.dtype.type, "")


def execute(
    schedule: Schedule,
    a: np.ndarray,
    b: np.ndarray,
    c: np.ndarray | None = None,
    *,
    alpha: float = 1.0,
    beta: float = 0.0,
    precision: str | None = None,
    fixup: str | None = None,
    cta_order: Sequence[int] | None = None,
    progress: Callable[[int], None] | None = None,
) -> np.ndarray:
    """Return alpha*A@B + beta*C computed unit by unit as ``schedule`` prescribes.

    ``a`` is m x k and ``b`` is k x n, in any memory order. ``precision`` is "fp16" (float16
    inputs, float32 accumulate and output), "bf16" (inputs rounded to bfloat16, float32
    accumulate), "fp32" or "fp64"; by default it follows a's dtype. ``cta_order`` is the
    priority in which runnable CTAs advance (default blockIdx order). ``progress(1)`` is called
    after each work unit (the CLI's progress bar).
    """
    m, n, k = schedule.shape.m, schedule.shape.n, schedule.shape.k
    a, b = np.asarray(a), np.asarray(b)
    if a.shape != (m, k) or b.shape != (k, n):
        raise ScheduleError(f"A must be {m}x{k} and B {k}x{n} for a {schedule.shape} schedule "
                            f"(got A {a.shape}, B {b.shape})")
    if a.dtype != b.dtype:
        raise ScheduleError(f"A and B must have the same dtype (got A {a.dtype}, B {b.dtype}); convert one, "
                            f"e.g. B.astype(A.dtype)")
    precision = precision or infer_precision(a)
    if precision not in PRECISIONS:
        raise ScheduleError(f"precision must be one of {', '.join(PRECISIONS)} (got {precision!r} "
                            f"for A of dtype {a.dtype})")
    acc_t = PRECISIONS[precision]
    a, b = _round_inputs(a, precision), _round_inputs(b, precision)
    if c is None:
        if beta != 0:
            raise ScheduleError("beta != 0 needs a C to scale")
        c_in = np.zeros((m, n), dtype=acc_t)
    else:
        if np.shape(c) != (m, n):
            raise ScheduleError(f"C must be {m}x{n} (got {np.shape(c)})")
        c_in = np.asarray(c, dtype=acc_t)
    plan = plan_fixup(schedule, fixup)
    order = list(range(schedule.grid)) if cta_order is None else list(cta_order)
    if sorted(order) != list(range(schedule.grid)):
        raise ScheduleError(f"cta_order must be a permutation of range({schedule.grid})")
    return _Run(plan, a, b, c_in, acc_t(alpha), acc_t(beta), acc_t, progress).run(order)


def _round_inputs(x: np.ndarray, precision: str) -> np.ndarray:
    if precision == "fp16":
        return x.astype(np.float16).astype(np.float32)
    if precision == "bf16":
        return round_to_bf16(x.astype(np.float32))
    return x.astype(PRECISIONS[precision])


class _Run:
    """One execution: the workspace, flags and arrival counters of a single launch."""

    def __init__(self, plan: FixupPlan, a, b, c_in, alpha, beta, acc_t, progress=None) -> None:
        self.plan, self.a, self.b, self.alpha, self.beta = plan, a, b, alpha, beta
        self.progress = progress
        s = plan.schedule
        self.out = np.full(c_in.shape, np.nan, dtype=acc_t)  # poisoned: every tile must be written
        self.c_in = c_in
        self.acc_t = acc_t
        self.slots: dict[int, np.ndarray] = {}
        self.signalled = np.zeros(len(s.units), dtype=bool)
        self.arrivals = np.zeros(s.problem.tiles, dtype=np.int64)
        self.writes = np.zeros(s.problem.tiles, dtype=np.int64)
        for tile in plan.split_tiles:  # atomic policy: the prologue pre-scales C by beta
            if TRAITS[Action(plan.action[plan.contributors(tile)[0]])].adds_to_c:
                rows, cols = self.bounds(int(tile))
                self.out[rows, cols] = self.beta * self.c_in[rows, cols] if beta != 0 else 0

    def bounds(self, tile: int) -> tuple[slice, slice]:
        s = self.plan.schedule
        tm, tn = s.tile_coords(tile)
        return (slice(tm * s.tile.bm, (tm + 1) * s.tile.bm), slice(tn * s.tile.bn, (tn + 1) * s.tile.bn))

    def mac(self, unit: int) -> np.ndarray:
        s = self.plan.schedule
        tile, kb, ke = (int(v) for v in s.units[unit])
        rows, cols = self.bounds(tile)
        ks = slice(kb * s.tile.bk, ke * s.tile.bk)
        return self.a[rows, ks] @ self.b[ks, cols]

    def store_c(self, tile: int, acc: np.ndarray) -> None:
        rows, cols = self.bounds(tile)
        out = self.alpha * acc
        if self.beta != 0:
            out = out + self.beta * self.c_in[rows, cols]
        self.out[rows, cols] = out
        self.writes[tile] += 1

    def sum_slots(self, slots: np.ndarray) -> np.ndarray:
        total = self.slots[int(slots[0])].copy()
        for s in slots[1:]:
            total += self.slots[int(s)]
        return total

    def run(self, order: list[int]) -> np.ndarray:
        s, plan = self.plan.schedule, self.plan
        cursor = s.cta_offsets[:-1].astype(np.int64).copy()
        end = s.cta_offsets[1:]
        pending = list(order)
        while pending:
            progressed = False
            for cta in list(pending):
                while cursor[cta] < end[cta]:
                    unit = int(cursor[cta])
                    if not self.signalled[plan.waits(unit)].all():
                        break
                    self.step(unit)
                    if self.progress:
                        self.progress(1)
                    cursor[cta] += 1
                    progressed = True
                if cursor[cta] == end[cta]:
                    pending.remove(cta)
            if not progressed and pending:
                stuck = {cta: int(cursor[cta] - s.cta_offsets[cta]) for cta in pending[:4]}
                raise DeadlockError(f"CTAs {sorted(pending)[:8]} wait forever (CTA: blocked unit {stuck}); "
                                    f"the {plan.policy} waits of this schedule form a cycle")
        for tile in plan.split_tiles:  # the separate reduce pass
            units = plan.contributors(int(tile))
            if TRAITS[Action(plan.action[units[0]])].reduced_later:
                self.store_c(int(tile), self.sum_slots(plan.reads(int(units[0]))))
        if (self.writes != 1).any() and not np.isin(plan.action, actions_with("adds_to_c")).any():
            bad = int(np.argmax(self.writes != 1))
            raise AssertionError(f"internal: tile {bad} written {self.writes[bad]} times")
        return self.out

    def step(self, unit: int) -> None:
        plan = self.plan
        tile = int(plan.schedule.units[unit, 0])
        acc = self.mac(unit)
        does = TRAITS[Action(plan.action[unit])]
        if does.reads_partials:  # k order: the owner's acc is k = 0, a predecessor's sum lies below
            for slot in plan.reads(unit):
                acc = acc + self.slots[int(slot)]
        if does.stores_partial:
            self.slots[int(plan.slot[unit])] = acc
        if does.writes_c:
            self.store_c(tile, acc)
        if does.arrives:
            self.arrivals[tile] += 1
            if self.arrivals[tile] == len(plan.contributors(tile)):  # the last arrival reduces
                self.store_c(tile, self.sum_slots(plan.reads(unit)))
        if does.adds_to_c:
            rows, cols = self.bounds(tile)
            self.out[rows, cols] += self.alpha * acc
        self.signalled[unit] = True
