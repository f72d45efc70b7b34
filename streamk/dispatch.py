"""Can a schedule finish? In-order dispatch of its CTAs onto a fixed number of resident slots.

The one answer both the GPU backend (before any launch) and the simulator's deadlock verdict rely
on. Model: CTAs are dispatched in blockIdx order, each to a free slot, and hold it until their
last unit is done; a unit with waits (``FixupPlan.waits``) completes only after every unit it
waits on has completed. Whether that finishes does not depend on how long anything takes: waits
only ever become satisfied and slots only free when a CTA ends, so any run reaches the same set
of finished CTAs (the argument of Kahn process networks). So the verdict replays one run with
zero costs. It catches self-waits, wait cycles through program order, and waits on CTAs that can
never become resident because every slot is held by waiting CTAs.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .fixup import FixupPlan, plan_fixup
from .schedule import FIXUP_POLICIES


@dataclass(frozen=True, slots=True)
class DispatchVerdict:
    """``finishes``: every CTA ends on ``slots`` slots; else ``reason`` says who waits on what."""

    finishes: bool
    slots: int
    reason: str = ""


def waits_only_backward(plan: FixupPlan) -> bool:
    """Every wait points at a lower CTA or an earlier unit of the same CTA: the schedule then
    finishes on any number of slots, whatever else shares the GPU (each awaited CTA was
    dispatched first and, by induction, ends)."""
    if len(plan.wait_units) == 0:
        return True
    edges = plan.wait_edges()
    cta = plan.unit_cta
    waiter, awaited = cta[edges[:, 0]], cta[edges[:, 1]]
    return bool(np.all((awaited < waiter) | ((awaited == waiter) & (edges[:, 1] < edges[:, 0]))))


def dispatch_verdict(plan: FixupPlan, slots: int) -> DispatchVerdict:
    """Replay in-order dispatch of ``plan``'s schedule onto ``slots`` slots (see module doc)."""
    if slots < 1:
        raise ValueError(f"slots must be >= 1 (got {slots})")
    if waits_only_backward(plan):
        return DispatchVerdict(True, slots)
    s = plan.schedule
    offsets = s.cta_offsets.tolist()
    wait_offsets, wait_units = plan.wait_offsets.tolist(), plan.wait_units.tolist()
    unit_cta = plan.unit_cta.tolist()
    grid = s.grid
    done = [False] * len(s.units)
    pc = offsets[:-1]  # next unit row of each CTA
    blocked_on: dict[int, int] = {}  # CTA -> the unit it waits for
    waiters: dict[int, list[int]] = {}
    ready: list[int] = []
    free, next_cta, finished = slots, 0, 0
    while True:
        while free and next_cta < grid:
            free -= 1
            ready.append(next_cta)
            next_cta += 1
        if not ready:
            break
        while ready:
            cta = ready.pop()
            u = pc[cta]
            while u < offsets[cta + 1]:
                missing = next((w for w in wait_units[wait_offsets[u]:wait_offsets[u + 1]] if not done[w]), None)
                if missing is not None:
                    blocked_on[cta] = missing
                    waiters.setdefault(missing, []).append(cta)
                    break
                done[u] = True
                for waiter in waiters.pop(u, ()):
                    del blocked_on[waiter]
                    ready.append(waiter)
                u += 1
            pc[cta] = u
            if u == offsets[cta + 1]:
                free += 1
                finished += 1
    if finished == grid:
        return DispatchVerdict(True, slots)
    return DispatchVerdict(False, slots, wait_reason(blocked_on, unit_cta, next_cta, slots))


def wait_reason(blocked_on: dict[int, int], unit_cta, dispatched: int, slots: int) -> str:
    """Why CTAs ``blocked_on`` (CTA -> a unit it waits for) never finish, with ``dispatched`` CTAs
    on ``slots`` slots: the wait chain from the lowest waiting CTA to a CTA never dispatched or a
    cycle (the simulator's verdict says the same)."""
    cta = min(blocked_on)
    seen = [cta]
    while True:
        target = int(unit_cta[blocked_on[cta]])
        if target >= dispatched:
            held = sorted(blocked_on)
            more = "..." if len(held) > 8 else ""
            return (f"CTA {seen[-1]} waits on CTA {target}, which can never become resident: all {slots} slots "
                    f"are held by waiting CTAs {held[:8]}{more}")
        if target == cta:
            return f"CTA {cta} waits on its own later unit {blocked_on[cta]}; the schedule can never finish"
        if target in seen or target not in blocked_on:
            chain = " -> ".join(f"CTA {c}" for c in seen + [target])
            return f"wait cycle: {chain} (each waits on the next); the schedule can never finish"
        seen.append(target)
        cta = target


def finishing_policies(plan: FixupPlan, slots: int) -> list[str]:
    """The fixup policies other than ``plan``'s under which its schedule finishes on ``slots`` slots
    under in-order dispatch, in FIXUP_POLICIES order."""
    s = plan.schedule
    return [p for p in FIXUP_POLICIES if p != plan.policy and dispatch_verdict(plan_fixup(s, p), slots).finishes]


def deadlock_advice(plan: FixupPlan, slots: int) -> str:
    """What lets ``plan``'s schedule finish on ``slots`` slots: the other fixup policies checked to
    finish there, and more slots only where every CTA resident at once finishes (not a cycle)."""
    s = plan.schedule
    safe = finishing_policies(plan, slots)
    more = dispatch_verdict(plan, s.grid).finishes
    if not safe:  # (the policies without waits always finish; kept for a policy list that lacks them)
        return "use a larger --ctas-per-sm" if more else "no fixup policy lets it finish on this machine"
    policies = f"the {', '.join(safe[:-1])} or {safe[-1]}" if len(safe) > 1 else f"the {safe[0]}"
    return f"use {'a larger --ctas-per-sm or ' if more else ''}{policies} fixup"
