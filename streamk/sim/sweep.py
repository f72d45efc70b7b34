"""Time every decomposition over a corpus of GEMM shapes, fast.

Per decomposition and chunk of shapes:

1. A scheduler registered with a batch form (every built-in, CUTLASS's) gives the ranges of
   all the chunk's shapes in one call (``sched.ranges.Ranges``), the very code its single-shape
   scheduler runs, without building a Schedule. ``fast.ranges_makespans`` times the shapes whose
   CTAs tile the iterations in order under owner-waits (``Ranges.plain``) from those ranges: the
   data-parallel regions at either end in closed form, never as CTAs (``Ranges.whole_tile_ends``),
   the CTAs of the regions between through the wave engine.
2. Any other shape or scheduler (a user's) gets its Schedule; it becomes a ``Programs`` row
   through ``plan_fixup`` when its CTAs fit the fast path's pattern (``fast.wave_makespans``).
3. Shapes the fast path cannot time exactly, and schedules that do not fit, go through the
   event simulator (the reference), which also rules on deadlocks.

Chunks run in worker processes (``streamk.parallel``: ``STREAMK_SWEEP_WORKERS``, default and at
most every core; forked, so a scheduler registered before the sweep is seen by the workers). fixed-split, and any scheduler
that takes ``splits``, gets fixed-split's default (``default_splits``: 2, clamped to the
iterations per tile); stream-k its default grid (every slot).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Sequence

import numpy as np

from ..atomic import replacing
from ..costs import IDEAL, Costs
from ..errors import ScheduleError
from ..parallel import run_unordered, workers_available
from ..sched import accepted_options, make_schedule, names
from ..sched.basic import default_splits
from ..sched.registry import get_batch
from ..shapes import GemmShape, Machine, TileShape
from .events import simulate_events
from .fast import Programs, programs_from_schedule, ranges_makespans, wave_makespans
from .timeline import json_number

CSV_COLUMNS = ("m", "n", "k", "decomposition", "grid", "makespan", "utilization", "deadlock", "fast", "sms",
               "ctas_per_sm", "tile", "costs")  # write_csv's columns, in order
CHUNK_SHAPES = 2048  # shapes per worker task: enough to amortize the NumPy calls of each wave


def sweep_options(name: str, ipt: int | np.ndarray) -> dict[str, int | np.ndarray]:
    """Options a sweep gives scheduler ``name`` for shapes of ``ipt`` iterations per tile (one
    number or an array): ``splits`` where it takes one, else none."""
    return {"splits": default_splits(ipt)} if "splits" in accepted_options(name) else {}


def _schedule(name: str, row: np.ndarray, tile: TileShape, machine: Machine, fixup: str | None = None,
              walk: str = "forward"):
    shape = GemmShape(*(int(v) for v in row))
    return make_schedule(name, shape, tile, machine, fixup=fixup, walk=walk,
                         **sweep_options(name, -(-shape.k // tile.bk)))


@dataclass(frozen=True, slots=True)
class ChunkResult:
    grid: np.ndarray
    makespan: np.ndarray
    deadlock: np.ndarray
    fast: np.ndarray  # timed by the fast path (else by the event simulator)


def time_chunk(name: str, shapes: np.ndarray, tile: TileShape, machine: Machine, costs: Costs,
               fixup: str | None = None, walk: str = "forward") -> ChunkResult:
    """Grid, makespan and deadlock of decomposition ``name`` on every shape row. A ``fixup``
    or ``walk`` other than each scheduler's own is timed from the real schedules (the wave
    engine, else the event simulator)."""
    n = len(shapes)
    makespan = np.full(n, np.nan)
    deadlock = np.zeros(n, dtype=bool)
    fast = np.zeros(n, dtype=bool)
    batch = get_batch(name) if fixup is None and walk == "forward" else None
    ranges = batch(shapes, tile, machine, **sweep_options(name, -(-shapes[:, 2] // tile.bk))) if batch else None
    if ranges is not None:
        grid = ranges.grids
        plain = ranges.plain()
        members = np.flatnonzero(plain)
        sub = ranges if len(members) == n else ranges.take(members)
        before, after, middle, offsets = sub.whole_tile_ends()
        times, ok = ranges_makespans(sub.ipt, offsets, *sub.cta_ranges(middle),
                                     costs, machine.slots, before, after)
        makespan[members[ok]] = times[ok]
        fast[members[ok]] = True
        rest = np.flatnonzero(~plain)
        schedules = {int(i): ranges.schedule(int(i), name, tile, machine) for i in rest}
    else:
        schedules = {i: _schedule(name, row, tile, machine, fixup, walk) for i, row in enumerate(shapes)}
        grid = np.array([s.grid for s in schedules.values()], dtype=np.int64)
    progs = {i: programs_from_schedule(s, costs) for i, s in schedules.items()}
    members = np.array([i for i, p in progs.items() if p is not None], dtype=np.int64)
    if len(members):
        times, ok = wave_makespans(Programs.concat([progs[i] for i in members]), machine.slots)
        makespan[members[ok]] = times[ok]
        fast[members[ok]] = True
    for i in np.flatnonzero(~fast):
        schedule = schedules.get(int(i)) or _schedule(name, shapes[i], tile, machine, fixup, walk)
        timeline = simulate_events(schedule, costs)
        makespan[i], deadlock[i] = timeline.makespan, timeline.deadlock
    return ChunkResult(grid, makespan, deadlock, fast)


@dataclass(frozen=True, slots=True, eq=False)
class SweepResult:
    """Per decomposition (rows, in ``decompositions`` order) and shape (columns)."""

    shapes: np.ndarray
    tile: TileShape
    machine: Machine
    costs: Costs
    decompositions: tuple[str, ...]
    grid: np.ndarray
    makespan: np.ndarray
    deadlock: np.ndarray
    fast: np.ndarray

    @property
    def utilization(self) -> np.ndarray:
        """Total MAC iterations x c / (slots x makespan); 0 where the schedule deadlocks."""
        m, n, k = self.shapes.T
        t = self.tile
        work = (-(-m // t.bm) * -(-n // t.bn) * -(-k // t.bk)) * self.costs.c
        with np.errstate(divide="ignore"):
            return np.where(self.deadlock, 0.0, work / (self.machine.slots * self.makespan))

    def write_csv(self, path: str) -> None:
        """One row per shape and decomposition (the CLI contract's columns, plus ``fast`` and the
        machine, tile and cost model every row was timed on, so a plot of the file can say so)."""
        util = self.utilization.T.tolist()
        grid, makespan = self.grid.T.tolist(), self.makespan.T.tolist()
        dead, fast = self.deadlock.T.tolist(), self.fast.T.tolist()
        flag = {False: "false", True: "true"}
        setup = f"{self.machine.sms},{self.machine.ctas_per_sm},{self.tile},\"{self.costs}\""
        lines = [",".join(CSV_COLUMNS)]
        for j, (m, n, k) in enumerate(self.shapes.tolist()):
            for d, name in enumerate(self.decompositions):
                lines.append(f"{m},{n},{k},{name},{grid[j][d]},{makespan[j][d]:.10g},{util[j][d]:.6f},"
                             f"{flag[dead[j][d]]},{flag[fast[j][d]]},{setup}")
        with replacing(path) as tmp:  # Ctrl-C or a full disk leaves the old file, not half a new one
            tmp.write_text("\n".join(lines) + "\n")

    def summary(self) -> dict:
        """``shapes`` and per decomposition ``mean_utilization``, ``speedup_vs_dp`` (geometric
        mean of the data-parallel makespan over its own, deadlocks left out), ``wins`` (shapes
        where it has the least makespan; ties count for each), ``deadlocks``, ``fast_path``."""
        util, names_ = self.utilization, self.decompositions
        best = np.where(self.deadlock, np.inf, self.makespan).min(axis=0)
        out = {
            "shapes": int(len(self.shapes)),
            "tile": [self.tile.bm, self.tile.bn, self.tile.bk],
            "sms": self.machine.sms,
            "ctas_per_sm": self.machine.ctas_per_sm,
            "costs": [self.costs.a, self.costs.b, self.costs.c, self.costs.d],
            "decompositions": list(names_),
            "mean_utilization": {d: json_number(util[i].mean()) for i, d in enumerate(names_)},
            "wins": {d: int(np.sum(~self.deadlock[i] & (self.makespan[i] <= best * (1 + 1e-12))))
                     for i, d in enumerate(names_)},
            "deadlocks": {d: int(self.deadlock[i].sum()) for i, d in enumerate(names_)},
            "fast_path": {d: float(self.fast[i].mean()) for i, d in enumerate(names_)},
        }
        if "data-parallel" in names_:
            dp = self.makespan[names_.index("data-parallel")]
            out["speedup_vs_dp"] = {}
            for i, d in enumerate(names_):
                live = ~self.deadlock[i]
                ratio = dp[live] / self.makespan[i, live]
                out["speedup_vs_dp"][d] = json_number(np.exp(np.log(ratio).mean())) if live.any() else None
        return out


def sweep(shapes: np.ndarray, tile: TileShape, machine: Machine, decompositions: Sequence[str] | None = None,
          costs: Costs = IDEAL, progress: Callable[[int], None] | None = None,
          workers: int | None = None, fixup: str | None = None, walk: str = "forward") -> SweepResult:
    """Time every decomposition (default: all registered) on every shape row (m, n, k).
    ``progress(count)`` is called as chunks of ``count`` shape-decompositions finish."""
    shapes = np.asarray(shapes, dtype=np.int64).reshape(-1, 3)
    decomps = tuple(names() if decompositions is None else decompositions)
    known = names()
    for d in decomps:
        if d not in known:
            raise ScheduleError(f"unknown decomposition {d!r}; choose from: {', '.join(known)}")
    n, D = len(shapes), len(decomps)
    grid = np.zeros((D, n), dtype=np.int64)
    makespan = np.zeros((D, n))
    deadlock = np.zeros((D, n), dtype=bool)
    fast = np.zeros((D, n), dtype=bool)
    chunk = -(-n // -(-n // CHUNK_SHAPES)) if n else 1  # equal chunks of at most CHUNK_SHAPES
    tasks = [(d, lo) for d in range(D) for lo in range(0, n, chunk)]

    def store(d: int, lo: int, r: ChunkResult) -> None:
        hi = lo + len(r.grid)
        grid[d, lo:hi], makespan[d, lo:hi], deadlock[d, lo:hi], fast[d, lo:hi] = r.grid, r.makespan, r.deadlock, r.fast
        if progress:
            progress(hi - lo)

    workers = workers_available() if workers is None else workers
    args = [(decomps[d], shapes[lo:lo + chunk], tile, machine, costs, fixup, walk) for d, lo in tasks]
    for i, result in run_unordered(time_chunk, args, workers):
        store(*tasks[i], result)
    return SweepResult(shapes, tile, machine, costs, decomps, grid, makespan, deadlock, fast)
