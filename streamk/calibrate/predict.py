"""The calibrated simulator: a Schedule's predicted GPU time in microseconds.

The event simulator (``streamk.sim.simulate``) runs unchanged; what calibration adds is which
machine and which constants it runs with, mirroring how the GPU backend launches a grid:
* a grid of at most one CTA per SM is launched one CTA per SM (``gpu/plan.py``), so it runs on
  ``Machine(sms, 1)`` at ``c1``; a larger grid on the kernel's residency at ``c_shared`` (two
  co-resident CTAs share an SM's tensor cores: each runs at about half speed);
* under separate-reduce the main kernel reads no partials, so the simulator's reduce pass is
  priced at ``d_reduce``; every other policy reads at ``d``;
* ``launch`` is paid once, ``pass_launch`` once more for a reduce or prescale pass.
"""

from __future__ import annotations

import math
from dataclasses import replace

from ..costs import Costs
from ..fixup import plan_fixup
from ..schedule import Schedule
from ..shapes import Machine
from ..sim import simulate
from .model import Calibration

EXTRA_PASS_POLICIES = ("separate-reduce", "atomic")  # a second kernel when any tile is split
MIN_C_US = 1e-9  # Costs needs c > 0; a fit may probe c at 0


def residency(grid: int, sms: int, ctas_per_sm: int) -> int:
    """Resident CTAs per SM the GPU backend launches ``grid`` CTAs at."""
    return 1 if grid <= sms else ctas_per_sm


def predict_from(schedule: Schedule, values: dict[str, float], sms: int, ctas_per_sm: int,
                 fixup: str | None = None) -> float:
    """Predicted microseconds of ``schedule`` under term ``values`` (a fit's current guess or a
    Calibration's); inf where the schedule cannot finish on that machine."""
    policy = schedule.fixup if fixup is None else fixup
    r = residency(schedule.grid, sms, ctas_per_sm)
    c = values["c1"] if r == 1 else values.get("c_shared", values["c1"])
    d = values["d_reduce"] if policy == "separate-reduce" else values["d"]
    costs = Costs(a=values["a"], b=values["b"], c=max(c, MIN_C_US), d=d)
    placed = schedule if schedule.machine == Machine(sms, r) else replace(schedule, machine=Machine(sms, r))
    timeline = simulate(placed, costs, policy)
    if timeline.deadlock:
        return math.inf
    extra = 0.0
    if policy in EXTRA_PASS_POLICIES and len(plan_fixup(placed, policy).split_tiles):
        extra = values["pass_launch"]
    return values["launch"] + timeline.makespan + extra


def predict_us(schedule: Schedule, calibration: Calibration, sms: int, fixup: str | None = None) -> float:
    """Predicted microseconds of ``schedule`` on ``sms`` SMs of the calibrated device family."""
    values = {t.name: t.us for t in calibration.terms}
    return predict_from(schedule, values, sms, calibration.ctas_per_sm, fixup)
