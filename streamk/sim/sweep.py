"""Time every decomposition over a corpus of GEMM shapes, fast.

Per decomposition and chunk of shapes:

1. Built-in schedulers (``builtin_ranges``) and CUTLASS's (``sched.cutlass.cutlass_ranges``)
   are contiguous ranges of the m -> n -> k linearization whose bounds are closed forms of
   (tiles, iterations per tile, slots), written for all shapes at once without building a
   Schedule. A few shapes per chunk are checked against the registered scheduler (ranges and
   owner-waits fixup); a mismatch (someone changed it) sends the chunk down step 2.
2. Any other scheduler (a user's) runs per shape; its Schedule becomes a ``Programs`` row
   through ``plan_fixup`` when its CTAs fit the fast path's pattern.
3. ``fast.ranges_makespans`` / ``fast.wave_makespans`` time the batch; shapes they cannot time
   exactly, and schedules that do not fit, go through the event simulator (the reference),
   which also rules on deadlocks.

Chunks run in worker processes (``STREAMK_SWEEP_WORKERS``, default: every core; forked, so a
scheduler registered before the sweep is seen by the workers). fixed-split takes
``splits = min(2, iters_per_tile)`` (``SWEEP_SPLITS``); stream-k its default grid (every slot).
"""

from __future__ import annotations

import os
from concurrent.futures import ProcessPoolExecutor, as_completed
from dataclasses import dataclass
from multiprocessing import get_context
from types import SimpleNamespace
from typing import Callable, Sequence

import numpy as np

from ..costs import AUTO_COSTS, IDEAL, Costs, model_time, two_tile_beats_dp
from ..errors import ScheduleError
from ..sched import accepted_options, cutlass, make_schedule, names
from ..shapes import GemmShape, Machine, TileShape
from .events import simulate_events
from .fast import Programs, contiguous_ranges, programs_from_schedule, ranges_makespans, wave_makespans

SWEEP_SPLITS = 2  # fixed-split's splitting factor in a sweep (clamped to iters_per_tile)
CHUNK_SHAPES = 2048  # shapes per worker task: enough to amortize the NumPy calls of each wave
SPOT_CHECKS = 2  # shapes per chunk whose built-in ranges are compared with the real scheduler
BUILTIN = ("data-parallel", "fixed-split", "stream-k", "dp-one-tile-sk", "two-tile-sk-dp", "auto")


def sweep_options(name: str, ipt: int) -> dict[str, int]:
    """Options a sweep gives scheduler ``name``: ``splits`` where it takes one, else none."""
    return {"splits": min(SWEEP_SPLITS, ipt)} if "splits" in accepted_options(name) else {}


def _ramp(lengths: np.ndarray) -> np.ndarray:
    return np.arange(lengths.sum()) - np.repeat(np.cumsum(lengths) - lengths, lengths)


def _pick(cond: np.ndarray, a: tuple, b: tuple) -> tuple:
    """Per shape, region ``a`` where ``cond`` holds, else ``b`` (regions are (x0, x1, parts))."""
    return tuple(np.where(cond, x, y) for x, y in zip(a, b))


def _auto_grids(total: np.ndarray, ipt: np.ndarray, slots: int) -> np.ndarray:
    """``model_grid`` for every shape at once: least modeled time over g in [1, slots]."""
    g = np.arange(1, slots + 1)
    times = model_time(SimpleNamespace(total_iters=total[:, None], iters_per_tile=ipt[:, None]), g, AUTO_COSTS)
    times[g[None, :] > total[:, None]] = np.inf
    return g[np.argmin(times, axis=1)]  # argmin: the smallest grid on ties, as model_grid


def builtin_ranges(name: str, shapes: np.ndarray, tile: TileShape, machine: Machine
                   ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray] | None:
    """(iters per tile, CTA offsets, starts, ends) of built-in scheduler ``name`` (with the
    sweep's options) for every shape row (m, n, k); None if ``name`` is not built in."""
    if name not in BUILTIN:
        return None
    m, n, k = (np.asarray(c, dtype=np.int64) for c in shapes.T)
    tiles = -(-m // tile.bm) * -(-n // tile.bn)
    ipt = -(-k // tile.bk)
    total, P = tiles * ipt, machine.slots
    if name == "fixed-split":  # every tile split within one, adjacent CTAs
        splits = np.minimum(SWEEP_SPLITS, ipt)
        counts = tiles * splits
        shape_of = np.repeat(np.arange(len(tiles)), counts)
        t, part = np.divmod(_ramp(counts), splits[shape_of])
        q, r = np.divmod(ipt, splits)
        starts = t * ipt[shape_of] + part * q[shape_of] + np.minimum(part, r[shape_of])
        ends = starts + q[shape_of] + (part < r[shape_of])
        return ipt, np.concatenate([[0], np.cumsum(counts)]), starts, ends
    # Everything else is up to two regions per shape, each [x0, x1) split over `parts` CTAs.
    waves, left = np.divmod(tiles, P)
    zero = np.zeros_like(tiles)
    whole = (zero, total, tiles)
    first, second = whole, (zero, zero, zero)
    if name == "stream-k":
        first = (zero, total, np.minimum(P, total))
    elif name != "data-parallel":
        sk_first = (waves >= 1) & (name != "dp-one-tile-sk")
        sk_tiles = np.where(sk_first, left + P, left)
        dp_tiles = tiles - sk_tiles
        sk0 = np.where(sk_first, 0, dp_tiles * ipt)
        dp0 = np.where(sk_first, sk_tiles * ipt, 0)
        sk = (sk0, sk0 + sk_tiles * ipt, np.minimum(P, sk_tiles * ipt))
        dp = (dp0, dp0 + dp_tiles * ipt, dp_tiles)
        first, second = _pick(sk_first, sk, dp), _pick(sk_first, dp, sk)
        if name == "auto":  # fewer tiles than SMs: basic Stream-K with the model's grid over SMs;
            S = machine.sms  # above: the hybrid where the model says it beats DP (one CTA per SM)
            small = tiles < S
            dp = ~small & ((machine.ctas_per_sm > 1) | ~two_tile_beats_dp(tiles, ipt, S, AUTO_COSTS))
            first = _pick(small, (zero, total, _auto_grids(total, ipt, S)), _pick(dp, whole, first))
            second = _pick(small | dp, (zero, zero, zero), second)
        first, second = _pick(left == 0, whole, first), _pick(left == 0, (zero, zero, zero), second)
    x0, x1, parts = (np.stack([a, b], axis=1).ravel() for a, b in zip(first, second))
    rep = np.repeat(np.arange(len(parts)), parts)
    c = _ramp(parts)
    q, r = np.divmod(x1 - x0, np.maximum(parts, 1))
    starts = x0[rep] + c * q[rep] + np.minimum(c, r[rep])
    ends = starts + q[rep] + (c < r[rep])
    counts = parts.reshape(-1, 2).sum(axis=1)
    return ipt, np.concatenate([[0], np.cumsum(counts)]), starts, ends


def batch_ranges(name: str, shapes: np.ndarray, tile: TileShape, machine: Machine):
    """Closed-form contiguous ranges of scheduler ``name`` for every shape, where someone wrote
    them: ours for the built-ins, ``sched.cutlass.cutlass_ranges`` for CUTLASS's; else None."""
    built = builtin_ranges(name, shapes, tile, machine)
    provider = getattr(cutlass, "cutlass_ranges", None)
    if built is None and provider is not None:
        built = provider(name, shapes, tile, machine)
    return built


def _schedule(name: str, row: np.ndarray, tile: TileShape, machine: Machine, fixup: str | None = None,
              walk: str = "forward"):
    shape = GemmShape(*(int(v) for v in row))
    return make_schedule(name, shape, tile, machine, fixup=fixup, walk=walk,
                         **sweep_options(name, -(-shape.k // tile.bk)))


def _matches(name: str, shapes: np.ndarray, built: tuple, tile: TileShape, machine: Machine) -> bool:
    """Whether the closed-form ranges agree with the registered scheduler on a few shapes
    (and its schedules use the owner-waits fixup the closed forms assume)."""
    _, offsets, starts, ends = built
    picks = np.unique(np.linspace(0, len(shapes) - 1, SPOT_CHECKS).astype(int))
    for i in picks:
        schedule = _schedule(name, shapes[i], tile, machine)
        ranges = contiguous_ranges(schedule)
        a, b = offsets[i], offsets[i + 1]
        if schedule.fixup != "owner-waits" or ranges is None or not (np.array_equal(ranges[0], starts[a:b]) and np.array_equal(ranges[1], ends[a:b])):
            return False
    return True


@dataclass(frozen=True, slots=True)
class ChunkResult:
    grid: np.ndarray
    makespan: np.ndarray
    deadlock: np.ndarray
    fast: np.ndarray  # timed by the fast path (else by the event simulator)


def time_chunk(name: str, shapes: np.ndarray, tile: TileShape, machine: Machine, costs: Costs,
               fixup: str | None = None, walk: str = "forward") -> ChunkResult:
    """Grid, makespan and deadlock of decomposition ``name`` on every shape row. The closed
    forms assume each scheduler's own fixup policy and forward walk; any other ``fixup`` or
    ``walk`` is timed from the real schedules (the wave engine, else the event simulator)."""
    n = len(shapes)
    makespan = np.full(n, np.nan)
    deadlock = np.zeros(n, dtype=bool)
    fast = np.zeros(n, dtype=bool)
    schedules: list = [None] * n
    own_order = fixup is None and walk == "forward"
    built = batch_ranges(name, shapes, tile, machine) if own_order else None
    if built is not None and _matches(name, shapes, built, tile, machine):
        grid = np.diff(built[1])
        times, ok = ranges_makespans(*built, costs, machine.slots)
        members = np.arange(n)
    else:
        schedules = [_schedule(name, row, tile, machine, fixup, walk) for row in shapes]
        grid = np.array([s.grid for s in schedules], dtype=np.int64)
        progs = [programs_from_schedule(s, costs) for s in schedules]
        members = np.array([i for i, p in enumerate(progs) if p is not None], dtype=np.int64)
        parts = [progs[i] for i in members]
        times, ok = wave_makespans(Programs.concat(parts), machine.slots) if parts else (np.zeros(0), np.zeros(0, bool))
    makespan[members[ok]] = times[ok]
    fast[members[ok]] = True
    for i in np.flatnonzero(~fast):
        schedule = schedules[i] or _schedule(name, shapes[i], tile, machine, fixup, walk)
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
        lines = ["m,n,k,decomposition,grid,makespan,utilization,deadlock,fast,sms,ctas_per_sm,tile,costs"]
        for j, (m, n, k) in enumerate(self.shapes.tolist()):
            for d, name in enumerate(self.decompositions):
                lines.append(f"{m},{n},{k},{name},{grid[j][d]},{makespan[j][d]:.10g},{util[j][d]:.6f},"
                             f"{flag[dead[j][d]]},{flag[fast[j][d]]},{setup}")
        with open(path, "w") as fh:
            fh.write("\n".join(lines) + "\n")

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
            "mean_utilization": {d: float(util[i].mean()) for i, d in enumerate(names_)},
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
                out["speedup_vs_dp"][d] = float(np.exp(np.log(ratio).mean())) if live.any() else None
        return out


def _workers() -> int:
    env = os.environ.get("STREAMK_SWEEP_WORKERS")
    if env is not None:
        if not env.isdigit() or int(env) < 1:
            raise ScheduleError(f"STREAMK_SWEEP_WORKERS must be an integer >= 1 (got {env!r})")
        return int(env)
    return os.cpu_count() or 1


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

    workers = _workers() if workers is None else workers
    args = [(decomps[d], shapes[lo:lo + chunk], tile, machine, costs, fixup, walk) for d, lo in tasks]
    if workers <= 1 or len(tasks) == 1:
        for (d, lo), a in zip(tasks, args):
            store(d, lo, time_chunk(*a))
    else:
        with ProcessPoolExecutor(workers, mp_context=get_context("fork")) as pool:
            futures = {pool.submit(time_chunk, *a): t for t, a in zip(tasks, args)}
            for future in as_completed(futures):
                store(*futures[future], future.result())
    return SweepResult(shapes, tile, machine, costs, decomps, grid, makespan, deadlock, fast)
