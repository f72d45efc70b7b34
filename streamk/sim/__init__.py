"""The SM simulator: ``simulate`` one Schedule event by event, or sweep a corpus fast.

``simulate`` is the reference (``events.py``): full per-CTA timelines, waits from the fixup
plan, a deadlock verdict. ``streamk.sim.sweep`` times thousands of shapes through the fast path
(``fast.py``), which the tests hold to the same makespans.
"""

from __future__ import annotations

from ..costs import IDEAL, Costs
from ..schedule import Schedule
from .events import simulate_events
from .timeline import SEGMENT_KINDS, Segment, Timeline


def simulate(schedule: Schedule, costs: Costs = IDEAL, fixup: str | None = None, unit_cost: float = 0.0,
             atomic_cost: float = 0.0, handoff_cost: float = 0.0, a_writes_c: bool = False,
             stores_apart: bool = False) -> Timeline:
    """Simulate ``schedule`` on its machine under ``costs`` (default: the ideal model a=b=d=0,
    c=1) and fixup policy ``fixup`` (default: the schedule's own); ``unit_cost`` before each unit
    after a CTA's first and ``atomic_cost`` for each atomic add of a partial tile into C (the
    calibrated model's; the paper's has neither), ``handoff_cost`` for each turnstile handoff
    in place of its d + b and for a last arrival's lone round trip (the calibrated model's ``handoff``);
    ``a_writes_c`` where ``a`` includes writing the output tile (the calibrated model's: a CTA of
    partial stores only ends with its last mainloop); ``stores_apart`` where the kernel's next loads do
    not queue behind its partial stores (the calibrated model's sm90 kernels: a separate-reduce CTA's
    first partial leaves its path). Never hangs or raises on a deadlock: the Timeline reports it."""
    return simulate_events(schedule, costs, fixup, unit_cost, atomic_cost, handoff_cost, a_writes_c, stores_apart)


__all__ = ["SEGMENT_KINDS", "Segment", "Timeline", "simulate", "simulate_events"]
