"""The reference discrete-event simulator: CTAs on SM slots, waits from the fixup plan.

Model (DESIGN.md "Simulator semantics"):

* ``sms x ctas_per_sm`` slots, each an independent processor. CTAs are dispatched in blockIdx
  order, each to the earliest-free slot (ties: lowest global slot id ``sm * ctas_per_sm + j``,
  i.e. lowest SM, then lowest slot). A CTA holds its slot until it ends, waiting included.
* Each CTA pays ``a`` once, then per work unit ``c`` per MAC iteration and, by its fixup action
  (``plan_fixup``, never re-derived here) and that action's ``fixup.TRAITS``: ``b`` to store a
  partial, ``d`` per partial it reads (the last ARRIVE of a tile too). A unit
  signals when its partial store is done; a unit with ``waits`` starts its fixup only when every
  awaited unit has signalled. Under last-arrival the contributor whose store completes last
  (the last one processed at equal times) reduces and writes the tile.
* ``unit_cost`` (0 in the paper's model; the calibrated model's ``unit`` term): paid before each
  work unit after a CTA's first, the mainloop's restart on a new tile.
* ``atomic_cost`` (0 in the paper's model; the calibrated model's ``atomic`` term): paid by each
  unit that adds its partial tile into C atomically (the atomic policy), as it stores.
* ``handoff_cost`` (0: the paper's ``d + b``; the calibrated model's ``handoff`` term): a partial's
  round trip (store, release, read) run by one CTA alone, where ``b`` is priced with every SM storing
  at once. Paid by each turnstile HANDOFF after its wait, in place of its read and store; and by a
  last arrival that finds every other contributor arrived (it stores its own partial and reads it
  back alone), in place of ``b + d``, with ``d`` for each other partial (LOG.md v51, v58).
* ``a_writes_c`` (False in the paper's model; True in the calibrated one, whose ``a`` is fitted on
  data-parallel CTAs and so includes writing the output tile): a CTA whose every unit is a PARTIAL
  writes no tile, and its last store takes the time ``a`` gives that write: the CTA ends with its
  last mainloop (its SM goes to the next CTA) and the partial is seen ``b`` later, as before.
  Fixed-split's peers over several waves were predicted 10-65% slow without it (LOG.md v58).
* separate-reduce: after the whole grid ends, a second grid of one reduce task per split tile
  (``d`` per partial read) is dispatched on the slots the same way. With ``a_writes_c``, on one CTA
  an SM, a CTA's DEFER store before its next unit drains under that unit, and its next store waits
  for it: the CTA pays what of ``b`` that unit's mainloop does not cover (no CTA of the grid waits on
  it; auto's Stream-K of two units a CTA was predicted 16-23% slow, LOG.md v105). With
  ``stores_apart`` (a kernel whose next loads do not queue behind its stores: the sm90 ones,
  ``target.stores_apart``) that store leaves the CTA's path (LOG.md v111).

Events are processed in time order; at one instant every event is handled before any CTA is
dispatched, so simultaneous frees give CTAs to the lowest slots. If nothing can move while CTAs
remain (every slot held by a waiting CTA, or a wait cycle), the run is reported as a deadlock
with a reason and the partial timeline; it never hangs or raises.
"""

from __future__ import annotations

import heapq
import math
from collections import deque
from typing import Generator

import numpy as np

from ..costs import IDEAL, MAX_COST, Costs, is_cost
from ..dispatch import deadlock_advice, wait_reason
from ..errors import ScheduleError, check_type
from ..fixup import TRAITS, Action, FixupPlan, plan_fixup
from ..schedule import Schedule
from .timeline import Segment, Timeline

# A CTA program yields requests to the driver:
#   ("run", duration, kind, unit)  spend time, recorded as a segment
#   ("signal", unit)               the unit's partial is stored
#   ("wait", unit)                 block until every unit in plan.waits(unit) has signalled
#   ("arrive", unit)               count an arrival; the driver sends back True to the last one
#   ("alone", unit)                whether every other contributor of the unit's tile has arrived
#   ("post", unit)                 store the unit's partial and end: it signals later (a_writes_c)
Request = tuple
Program = Generator[Request, bool | None, None]


def _program(cta: int, plan: FixupPlan, costs: Costs, unit_cost: float, atomic_cost: float,
             handoff_cost: float, a_writes_c: bool, stores_apart: bool) -> Program:
    s = plan.schedule
    if costs.a > 0:
        yield ("run", costs.a, "overhead", -1)
    first, end = int(s.cta_offsets[cta]), int(s.cta_offsets[cta + 1])
    partials_only = a_writes_c and bool(np.all(plan.action[first:end] == Action.PARTIAL))
    # alone on its SM: co-resident CTAs share its store path (decode launches of 3-4 CTAs an SM ran
    # 14-31% slower than priced with their stores in the background; LOG.md v105)
    background = a_writes_c and s.machine.ctas_per_sm == 1
    for u in range(first, end):
        if unit_cost > 0 and u > first:
            yield ("run", unit_cost, "overhead", -1)
        iters = int(s.units[u, 2] - s.units[u, 1])
        yield ("run", costs.c * iters, "mac", u)
        does = TRAITS[Action(plan.action[u])]
        reads = costs.d * len(plan.reads(u))
        if does.waits:
            yield ("wait", u)
        if partials_only and u == end - 1:
            # its store takes the time a gives the tile it never writes; the partial lands later
            yield ("post", u)
            continue
        if background and plan.action[u] == Action.DEFER and u < end - 1:
            # no CTA of the grid waits on it: a partial stored before the CTA's next unit drains under
            # that unit's mainloop, the CTA's next store after it (LOG.md v105); off the path entirely
            # where the next loads do not queue behind it (v111)
            exposed = 0.0 if stores_apart else \
                max(0.0, costs.b - (unit_cost + costs.c * int(s.units[u + 1, 2] - s.units[u + 1, 1])))
            yield ("run", exposed, "store_partial", u)
            continue
        if handoff_cost > 0 and does.arrives and (yield ("alone", u)):
            # the last arrival, alone: its own partial's store and read back are a lone round trip
            yield ("run", handoff_cost + costs.d * (len(plan.reads(u)) - 1), "fixup", u)
            yield ("arrive", u)  # the last, every other contributor having arrived
            yield ("run", 0.0, "store_tile", u)
            continue
        if handoff_cost > 0 and plan.action[u] == Action.HANDOFF:
            # a turnstile link reads, adds, stores and releases alone, where b is every SM's store at
            # once (LOG.md v51)
            yield ("run", handoff_cost, "fixup", u)
            yield ("run", 0.0, "store_partial", u)
        else:
            if does.reads_partials:
                yield ("run", reads, "fixup", u)
            if does.stores_partial:
                yield ("run", costs.b, "store_partial", u)
        if does.signals:
            yield ("signal", u)
        if does.arrives and (yield ("arrive", u)):  # the last arrival sums every partial
            yield ("run", reads, "fixup", u)
            yield ("run", 0.0, "store_tile", u)
        if does.writes_c or does.adds_to_c:
            yield ("run", atomic_cost if does.adds_to_c else 0.0, "store_tile", u)


class _Run:
    """Mutable state of one simulation; ``simulate_events`` is its only user."""

    def __init__(self, schedule: Schedule, costs: Costs, policy: str, unit_cost: float, atomic_cost: float,
                 handoff_cost: float, a_writes_c: bool, stores_apart: bool) -> None:
        if schedule.machine is None:
            raise ScheduleError("the schedule has no machine (sms, ctas_per_sm) to simulate on; "
                                "build it with make_schedule(..., machine) or add sms to its JSON")
        self.s, self.costs = schedule, costs
        self.plan = plan_fixup(schedule, policy)
        self.per_sm = schedule.machine.ctas_per_sm
        self.slots = schedule.machine.slots
        grid, n = schedule.grid, len(schedule.units)
        self.programs = [_program(c, self.plan, costs, unit_cost, atomic_cost, handoff_cost, a_writes_c,
                                  stores_apart) for c in range(grid)]
        self.cta_slot = np.full(grid, -1, dtype=np.int64)
        self.cta_start = np.full(grid, math.nan)
        self.cta_end = np.full(grid, math.inf)
        self.signalled = np.zeros(n, dtype=bool)
        self.waiters: dict[int, list[int]] = {}
        self.blocked: dict[int, tuple[float, int, set[int]]] = {}  # cta -> (since, unit, pending)
        self.arrivals = np.zeros(schedule.problem.tiles, dtype=np.int64)
        self.contributors = np.diff(self.plan.tile_offsets)
        self.segments: list[Segment] = []
        self.events: list[tuple[float, int, int]] = []  # (time, seq, cta) resumes a CTA
        # CTAs take the lowest idle slot first, so no more than `grid` slots are ever used
        self.free: list[tuple[float, int]] = [(0.0, slot) for slot in range(min(self.slots, grid))]
        self.ready: deque[tuple[int, float, bool | None]] = deque()
        self.next_cta = 0
        self.seq = 0
        self.total_wait = 0.0

    def segment(self, cta: int, kind: str, start: float, end: float, unit: int) -> None:
        slot = int(self.cta_slot[cta])
        tile = int(self.s.units[unit, 0]) if unit >= 0 else -1
        self.segments.append(Segment(cta, slot // self.per_sm, slot, kind, start, end, tile, unit))

    def signal(self, unit: int, t: float) -> None:
        """``unit``'s partial is stored at time t: the CTAs waiting only on it run on."""
        self.signalled[unit] = True
        for waiter in self.waiters.pop(unit, []):
            since, wunit, pending = self.blocked[waiter]
            pending.discard(unit)
            if not pending:
                del self.blocked[waiter]
                if t > since:
                    self.segment(waiter, "wait", since, t, wunit)
                    self.total_wait += t - since
                self.ready.append((waiter, t, None))

    def advance(self, cta: int, t: float, send: bool | None) -> None:
        """Run ``cta`` from time t until it spends time, blocks or ends."""
        program = self.programs[cta]
        while True:
            try:
                request = program.send(send)
            except StopIteration:
                self.cta_end[cta] = t
                heapq.heappush(self.free, (t, int(self.cta_slot[cta])))
                return
            send = None
            op, unit = request[0], request[-1]
            if op == "run":
                duration, kind = request[1], request[2]
                self.segment(cta, kind, t, t + duration, unit)
                if duration > 0:
                    self.seq += 1
                    heapq.heappush(self.events, (t + duration, self.seq, cta))
                    return
            elif op == "signal":
                self.signal(unit, t)
            elif op == "post":
                self.segment(cta, "store_partial", t, t, unit)
                self.seq += 1
                heapq.heappush(self.events, (t + self.costs.b, self.seq, -1 - unit))
            elif op == "alone":
                tile = int(self.s.units[unit, 0])
                send = bool(self.arrivals[tile] == self.contributors[tile] - 1)
            elif op == "wait":
                pending = {int(w) for w in self.plan.waits(unit) if not self.signalled[w]}
                if pending:
                    self.blocked[cta] = (t, unit, pending)
                    for w in pending:
                        self.waiters.setdefault(w, []).append(cta)
                    return
            elif op == "arrive":
                tile = int(self.s.units[unit, 0])
                self.arrivals[tile] += 1
                send = bool(self.arrivals[tile] == self.contributors[tile])

    def drain(self) -> None:
        while self.ready:
            self.advance(*self.ready.popleft())

    def dispatch(self, now: float) -> None:
        while self.next_cta < self.s.grid and self.free:
            _, slot = heapq.heappop(self.free)
            cta = self.next_cta
            self.next_cta += 1
            self.cta_slot[cta], self.cta_start[cta] = slot, now
            self.ready.append((cta, now, None))
        self.drain()

    def run(self) -> None:
        self.dispatch(0.0)
        while self.events:
            now = self.events[0][0]
            while self.events and self.events[0][0] == now:
                _, _, cta = heapq.heappop(self.events)
                if cta < 0:  # a posted partial lands (its CTA has ended)
                    self.signal(-1 - cta, now)
                else:
                    self.advance(cta, now, None)
                self.drain()
            self.dispatch(now)

    def reduce_pass(self, start: float) -> float:
        """separate-reduce: one task per split tile, d per partial read, after the grid."""
        tiles = self.plan.split_tiles.tolist()
        free = [(start, slot) for slot in range(min(self.slots, len(tiles)))]
        end = start
        grid = self.s.grid
        for i, tile in enumerate(tiles):
            t, slot = heapq.heappop(free)
            first = int(self.plan.contributors(tile)[0])
            cost = self.costs.d * len(self.plan.reads(first))
            sm = slot // self.per_sm
            self.segments.append(Segment(grid + i, sm, slot, "fixup", t, t + cost, tile, -1))
            self.segments.append(Segment(grid + i, sm, slot, "store_tile", t + cost, t + cost, tile, -1))
            heapq.heappush(free, (t + cost, slot))
            end = max(end, t + cost)
        return end

    def deadlock_reason(self) -> str:
        if not self.blocked:
            return "CTAs remain but none can run and none is waiting (internal error)"
        blocked_on = {cta: min(pending) for cta, (_, _, pending) in self.blocked.items()}
        reason = wait_reason(blocked_on, self.plan.unit_cta, self.next_cta, self.slots)
        return f"{reason}; {deadlock_advice(self.plan, self.slots)}"


def simulate_events(schedule: Schedule, costs: Costs = IDEAL, fixup: str | None = None,
                    unit_cost: float = 0.0, atomic_cost: float = 0.0, handoff_cost: float = 0.0,
                    a_writes_c: bool = False, stores_apart: bool = False) -> Timeline:
    """Simulate ``schedule`` event by event under ``costs`` and fixup policy ``fixup``
    (default: the schedule's own), ``unit_cost`` before each unit after a CTA's first,
    ``atomic_cost`` per atomic add of a partial tile into C, ``handoff_cost`` per lone round trip
    of a partial (0: d + b), ``a_writes_c`` where ``a`` includes writing the output tile,
    ``stores_apart`` where the kernel's next loads do not queue behind its partial stores; see the
    module docstring for the model."""
    check_type("schedule", schedule, Schedule)
    check_type("costs", costs, Costs)
    for name, value in (("unit_cost", unit_cost), ("atomic_cost", atomic_cost), ("handoff_cost", handoff_cost)):
        if not is_cost(value):
            raise ScheduleError(f"{name} must be a finite number >= 0, at most {MAX_COST:g} (got {value!r})")
    run = _Run(schedule, costs, schedule.fixup if fixup is None else fixup, unit_cost, atomic_cost, handoff_cost,
               a_writes_c, stores_apart)
    run.run()
    deadlock = run.next_cta < schedule.grid or bool(run.blocked) or bool(np.isinf(run.cta_end).any())
    reason = run.deadlock_reason() if deadlock else None
    if deadlock:
        makespan, utilization = math.inf, 0.0
    else:
        makespan = float(run.cta_end.max()) if schedule.grid else 0.0
        if run.plan.policy == "separate-reduce":
            makespan = run.reduce_pass(makespan)
        work = schedule.problem.total_iters * costs.c
        utilization = work / (run.slots * makespan) if makespan > 0 else 0.0
    slot = run.cta_slot
    sm = np.where(slot >= 0, slot // run.per_sm, -1)
    for a in (sm, slot, run.cta_start, run.cta_end):
        a.setflags(write=False)
    return Timeline(schedule, costs, run.plan.policy, tuple(run.segments), sm, slot, run.cta_start,
                    run.cta_end, makespan, utilization, run.total_wait, deadlock, reason)
