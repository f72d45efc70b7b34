"""The fit's predictions: every probe's calibrated-simulator time at one or many term vectors, on
worker processes where the caller gives a pool.

Most of a calibration's CPU time is here: each Gauss-Newton step predicts every probe at the
current terms and at one forward step of each term (``fit._jacobian``), and the probes with split
tiles or several units a CTA run the event simulator (~10 us a work unit; ~47 ms for one pass
over a 47-probe design, 165-497 passes a fit: 8-25 s on one core; LOG.md v44). Each probe is a
grid of alike CTA groups, of which ``predict_from`` simulates one (``predict.alike_part``): a pass
now takes ~8 ms on the H100's 132-SM design, ~100 ms simulating whole grids. The
pool takes those probes in groups balanced by their units; the probes ``predict_from`` prices in
closed form (whole tiles, one per CTA: the DRAM probe's 17k-280k units among them) stay in this
process, so no large Schedule is pickled. Every number is computed by the same ``predict_from``
call wherever it runs, so a pool changes how long a fit takes, never what it finds.
"""

from __future__ import annotations

import math
from multiprocessing.pool import Pool
from typing import Sequence

import numpy as np

from ..schedule import Schedule
from .predict import predict_from


def simulated(schedule: Schedule) -> bool:
    """Whether ``predict_from`` runs the event simulator on ``schedule`` (its closed form prices
    whole tiles one per CTA): only those are worth sending to a worker."""
    units, ipt = schedule.units, schedule.problem.iters_per_tile
    return not (len(units) == schedule.grid and bool(np.all(units[:, 1] == 0)) and bool(np.all(units[:, 2] == ipt)))


def predict_part(schedules: Sequence[Schedule], packed_mb: Sequence[float], names: tuple[str, ...],
                 thetas: Sequence[np.ndarray], sms: int, ctas_per_sm: int, l2_bytes: float,
                 element_bytes: int) -> np.ndarray:
    """``[len(thetas), len(schedules)]`` predicted microseconds (a worker's task, or all of it)."""
    out = np.empty((len(thetas), len(schedules)))
    for i, theta in enumerate(thetas):
        values = dict(zip(names, np.asarray(theta).tolist()))
        for j, (s, mb) in enumerate(zip(schedules, packed_mb)):
            out[i, j] = predict_from(s, values, sms, ctas_per_sm, l2_bytes=l2_bytes, element_bytes=element_bytes,
                                     packed_mb=mb)
    return out


def _groups(schedules: Sequence[Schedule], indices: list[int], count: int) -> list[list[int]]:
    """``indices`` in at most ``count`` groups of about equal work units (largest first, each to
    the lightest group)."""
    groups: list[list[int]] = [[] for _ in range(min(count, len(indices)))]
    load = [0] * len(groups)
    for i in sorted(indices, key=lambda i: -len(schedules[i].units)):
        g = load.index(min(load))
        groups[g].append(i)
        load[g] += len(schedules[i].units)
    return [g for g in groups if g]


def predict_many(schedules: Sequence[Schedule], packed_mb: Sequence[float], names: tuple[str, ...],
                 thetas: Sequence[np.ndarray], sms: int, ctas_per_sm: int, *, l2_bytes: float,
                 element_bytes: int, pool: Pool | None = None) -> np.ndarray:
    """``[len(thetas), len(schedules)]``: every schedule's predicted microseconds at each term
    vector, the event-simulated ones spread over ``pool``'s processes where one is given."""
    args = (sms, ctas_per_sm, l2_bytes, element_bytes)
    sim = [i for i, s in enumerate(schedules) if simulated(s)]
    if pool is None or not sim:
        return predict_part(schedules, packed_mb, names, thetas, *args)
    workers = getattr(pool, "_processes", 1)  # Pool's size (no public name): about two tasks a worker
    groups = _groups(schedules, sim, max(1, math.ceil(2 * workers / len(thetas))))
    tasks = [(g, t) for t in range(len(thetas)) for g in groups]
    pending = pool.starmap_async(predict_part, [([schedules[i] for i in g], [packed_mb[i] for i in g], names,
                                                 [thetas[t]], *args) for g, t in tasks])
    out = np.empty((len(thetas), len(schedules)))
    rest = sorted(set(range(len(schedules))) - set(sim))
    if rest:  # meanwhile the closed-form ones here (the DRAM probe's L2 trace, the first time)
        out[:, rest] = predict_part([schedules[i] for i in rest], [packed_mb[i] for i in rest], names, thetas, *args)
    for (g, t), part in zip(tasks, pending.get()):
        out[t, g] = part[0]
    return out
