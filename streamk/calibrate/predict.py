"""The calibrated simulator: a Schedule's predicted GPU time in microseconds.

The event simulator (``streamk.sim.simulate``) runs unchanged; what calibration adds is which
machine and which constants it runs with, mirroring how the GPU backend launches a grid:
* a grid of at most one CTA per SM is launched one CTA per SM (``gpu/runtime/bind.py``), so it runs on
  ``Machine(sms, 1)`` at ``c1``; a larger grid on the kernel's residency at ``c_shared`` (two
  co-resident CTAs share an SM's tensor cores: each runs at about half speed); one wave of fewer CTAs
  than the residency's slots holds at most ceil(grid / sms) on an SM, so its iteration (and
  ``a_shared``) runs that far from ``c1`` toward ``c_shared``, linearly (``shared_share``; decode
  launches of 133-400 sm80 CTAs ran well under ``c_shared``; LOG.md v95);
* under separate-reduce the main kernel reads no partials, so the simulator's reduce pass is
  priced at ``d_reduce``; every other policy reads at ``d``. On one CTA an SM a CTA's partial before
  its next unit costs what of ``b`` that unit's mainloop does not cover, and on the sm90 kernels
  nothing: their next loads do not queue behind it (``target.stores_apart``; LOG.md v105, v111);
* ``a_shared``: at shared residency each CTA pays it on top of ``a`` (two CTAs' prologues and output-tile
  stores run together on one SM; 0 where an entry lacks it; LOG.md v53);
* ``launch`` is paid once, ``pass_launch`` once more for a reduce or prescale pass;
* ``unit`` before each work unit after a CTA's first (the mainloop restarts on a new tile);
* ``atomic`` for each unit that adds its partial tile into C under the atomic policy;
* ``handoff``: each turnstile HANDOFF (a middle contributor: wait, read its predecessor's sum, add,
  store, release) costs that in place of d + b: the link runs alone on its chain, where b is priced
  with every SM storing at once (split-even); 0 keeps d + b (LOG.md v51). A last arrival that finds
  every other contributor arrived stores its own partial and reads it back alone, the same round
  trip: handoff in place of b + d, and d for each other partial (last-arrival was predicted 4-6%
  slow, the 64KB-partial tiles 11-20%; LOG.md v58);
* ``a`` includes writing the output tile (fitted on data-parallel probes), so a CTA whose every unit
  is a PARTIAL (fixed-split's peers) ends with its last mainloop: its store takes the time of the
  write it never does, and its partial still reaches the waiting owner b later. No probe's time
  moves (each is one wave, timed by its owners); fixed-split over several waves was predicted
  10-65% slow, its peers' SMs held b longer than the GPU holds them (LOG.md v58);
* ``c_shifted``: on a kernel that streams rows of any alignment in place (the dot tiles), each MAC
  iteration over rows that are not 16-byte aligned costs that more (``target.streams_unaligned``;
  LOG.md v35);
* ``c_free``: a wave of fewer CTAs than SMs (a one-wave grid, or a launch's last wave) runs each MAC
  iteration faster, c1 - (1 - CTAs / sms) c_free (the idle SMs' L2 and DRAM bandwidth serves the
  busy ones; LOG.md v22, v43);
* ``c_tpc``: a wave of at most half as many CTAs as SMs, one an SM, runs each CTA alone on its TPC
  (an SM pair; the block scheduler fills TPCs one CTA each first): each MAC iteration c_tpc faster
  still; above half, the CTAs that share a TPC set the wave's pace (LOG.md v45's traces, v49);
* ``c_l2``: each MAC iteration costs c_l2 more per L2's worth of A and B bytes (an L2-bound
  mainloop refills more of its shared slices the fuller the L2; LOG.md v26);
* ``l2_us_per_mb``: a MAC iteration lasts at least the time the L2 takes to serve every CTA of the
  wave its A and B boxes (past about half the SMs an H100's 128x128x64 mainloop is L2-bound; LOG.md v28);
  past one CTA an SM, at the pace of the SMs that hold the most (``floor_ctas``; LOG.md v53);
* waves: wave w holds each slot's w-th CTA (``traffic.wave_steps``); the idle-SM relief and the L2
  floor are taken at each wave's CTAs and the iteration the simulator runs at is their mean over the
  waves' steps (DP's fast path: exactly each wave at its own cost). CTAs left running inside one
  wave keep its count: the split-long-owner probes reject a relief there (LOG.md v43); but persistent
  CTAs of whole tiles count in rounds, each CTA's r-th tile in round r, as DP's waves (LOG.md v142);
* ``c_row32``: where the rows of A and B that the TMA boxes read start off a 32-byte boundary (k or n
  an odd multiple of 8 two-byte elements), each such row spans one 32-byte sector more and the
  mainloop, fed by its loads at any occupancy, waits that much longer: the MAC iteration (after the
  idle-SM, L2 and L2-floor terms) is stretched by 1 + share x c_row32 / c1, share =
  ``traffic.row32_share`` (0 to 0.5); c_row32 is what it adds to a lone CTA's iteration with every
  row off (LOG.md v41d). Where a launch's clusters multicast an operand, each CTA requests only its
  share of those rows: ``requests``, the shares of A's and B's rows its CTAs request themselves
  (gpu/clusters.py ``requested``: 1/2 of B in B-sharing pairs, 1/2 of A and of B in 2x2 clusters), weigh
  each operand's part of the share (auto's paired launches ran 8-10% faster than the same tiles unpaired
  where B's rows straddle, and were predicted alike, LOG.md v104; 2x2 clusters were priced as none,
  LOG.md v159);
* ``c_scatter``: each MAC iteration stretched by 1 + share x c_scatter / c1, share =
  ``traffic.scattered_share`` (0 to 1): the A and B slice reads that no CTA made in the steps just before,
  beyond data-parallel's. Stream-K walked forwards starts each CTA at its own k offset; walked backwards
  the CTAs start and end their units in step; every probe's share is 0 (LOG.md v66);
* ``pack`` and ``pack_us_per_mb``: where the GPU packs operands first (the caller says how many MB),
  that pass's launch and drain and its copy, in series before the main kernel (the dp-packed probes;
  LOG.md v35e, v36);
* ``dram_us_per_mb``: the MAC iteration stretched where the schedule's operand reads miss the L2
  faster than DRAM delivers them (``traffic.dram_slowdown``: scattered Stream-K units on operands
  larger than the L2).
"""

from __future__ import annotations

import math
from dataclasses import replace

import numpy as np

from ..costs import Costs
from ..fixup import plan_fixup
from ..schedule import Schedule
from ..shapes import ITEMSIZE, GemmShape, Machine
from ..sim import Timeline, simulate
from ..target import stores_apart, streams_unaligned
from .model import Calibration
from .traffic import dram_slowdown, operand_bytes, row32_share, scattered_share, wave_steps

EXTRA_PASS_POLICIES = ("separate-reduce", "atomic")  # a second kernel when any tile is split
MIN_C_US = 1e-9  # Costs needs c > 0; a fit may probe c at 0
GROUP_ROUNDS = 8  # label passes before alike_part gives up on a long chain of CTAs (Stream-K's)
_PARTS: dict[tuple[int, Machine], tuple[Schedule, Schedule | None]] = {}  # a fit prices each probe hundreds of times
_PARTS_ENTRIES = 64  # traffic._MEMO's: a design's probes, and no more schedules kept alive than there


def residency(grid: int, sms: int, ctas_per_sm: int) -> int:
    """Resident CTAs per SM the GPU backend launches ``grid`` CTAs at."""
    return 1 if grid <= sms else ctas_per_sm


def shared_share(grid: int, sms: int, r: int) -> float:
    """How far toward ``c_shared`` (and ``a_shared``) a launch at residency ``r`` runs: one wave of
    ``grid`` CTAs holds at most ceil(grid / sms) on an SM, and those SMs pace it (0 at one CTA an SM,
    1 at ``r``; every shared-residency probe is at ``r``; LOG.md v95)."""
    if r <= 1:
        return 0.0
    return (min(r, math.ceil(grid / sms)) - 1) / (r - 1)


def floor_ctas(busy: int, sms: int) -> int:
    """The CTAs whose box reads set a wave's L2 floor: ``busy`` where each sits alone on an SM; past
    ``sms`` the SMs holding the most CTAs pace the wave, every SM taking an equal share of the L2
    (64x128x64's launches of 133-263 CTAs, floored at their own CTAs, were predicted 20-24% fast; LOG.md v53)."""
    return busy if busy <= sms else math.ceil(busy / sms) * sms


def calibrated_run(schedule: Schedule, values: dict[str, float], sms: int, ctas_per_sm: int,
                   fixup: str | None = None, *, l2_bytes: float = 0.0, element_bytes: int = 2,
                   requests: tuple[float, float] = (1.0, 1.0)) -> tuple[Schedule, Costs, str]:
    """What the simulator runs ``schedule`` as under term ``values`` (module doc): the schedule
    placed on the GPU's residency for its grid, the appendix constants in microseconds (c with its
    co-residency, idle-SM, L2 and DRAM terms) and the fixup policy."""
    policy = schedule.fixup if fixup is None else fixup
    r = residency(schedule.grid, sms, ctas_per_sm)
    shared = shared_share(schedule.grid, sms, r)
    c0 = values["c1"] + shared * (values.get("c_shared", values["c1"]) - values["c1"])
    if streams_unaligned(schedule.shape, schedule.tile, element_bytes):
        c0 += values.get("c_shifted", 0.0)
    if l2_bytes > 0:
        c0 += values.get("c_l2", 0.0) * operand_bytes(schedule.shape, element_bytes) / l2_bytes
    t = schedule.tile
    floor_us = (t.bm + t.bn) * t.bk * element_bytes / 1e6 * values.get("l2_us_per_mb", 0.0)
    stretch = 1.0
    if values.get("c_row32", 0.0) > 0:
        share = row32_share(schedule.shape, schedule.tile, element_bytes, *requests)
        stretch += share * values["c_row32"] / max(values["c1"], MIN_C_US)

    def at(busy: int) -> float:
        """A MAC iteration while ``busy`` CTAs run: idle SMs' relief and the L2 floor of those CTAs."""
        c = c0 - values.get("c_free", 0.0) * (1.0 - min(busy, sms) / sms) if r == 1 else c0
        if r == 1 and busy <= sms // 2:
            c -= values.get("c_tpc", 0.0)  # every CTA alone on its TPC (SM pair)
        return max(c, floor_ctas(busy, sms) * floor_us) * stretch

    # each wave priced at its own CTAs (a small last wave runs with SMs idle: their bandwidth, a lighter
    # L2 floor), not the full wave's; CTAs left running inside a wave keep its count (the split-long-owner
    # probes reject relief there; LOG.md v43)
    counts, steps = wave_steps(schedule, sms * r)
    priced = {b: at(b) for b in set(counts.tolist())}  # each wave size once: the DRAM probe runs 528 waves of one
    c = float(sum(n * priced[b] for b, n in zip(counts.tolist(), steps.tolist())) / steps.sum()) if steps.sum() > 0 \
        else at(min(schedule.grid, sms * r))
    c = max(c, MIN_C_US)
    if values.get("c_scatter", 0.0) > 0:
        # Stream-K units that start at scattered k offsets read A and B slices no other CTA read just
        # before, where c is fitted on waves that step through k together: the backward walk ran 0.87-0.95x
        # the forward one's time at 1-3 tiles an SM, both predicted alike (H200 seeds 4258, 4265, 4267);
        # chosen on 4258 and 4265, held out on 4267 each tile's predicted best within 5% rose (128x128x64
        # 80.5 -> 86.5%, within a shape 0.942 -> 0.948, median 6.8 -> 6.6%; LOG.md v66)
        share = scattered_share(schedule, min(schedule.grid, sms * r))
        c *= 1.0 + share * values["c_scatter"] / max(values["c1"], MIN_C_US)
    if l2_bytes > 0 and values.get("dram_us_per_mb", 0.0) > 0:
        slots = min(schedule.grid, sms * r)
        c *= dram_slowdown(schedule, slots, l2_bytes, element_bytes, c, 1e6 / values["dram_us_per_mb"])
    d = values["d_reduce"] if policy == "separate-reduce" else values["d"]
    placed = schedule if schedule.machine == Machine(sms, r) else replace(schedule, machine=Machine(sms, r))
    a = values["a"] + shared * values.get("a_shared", 0.0)  # the pair's fixed costs (LOG.md v53)
    return placed, Costs(a=a, b=values["b"], c=c, d=d), policy


def alike_part(schedule: Schedule, machine: Machine) -> Schedule | None:
    """One group of ``schedule``'s CTAs, as a Schedule on ``machine``, whose event simulation ends
    when the whole schedule's does; None where there is none. Where the grid fits the machine's
    slots every CTA starts at 0, and CTAs that share no tile never wait on each other, so a grid of
    alike groups (the same units up to their tiles' numbering, as the calibration's probes are: 128
    split tiles of two CTAs, 132 CTAs of 8 whole tiles) runs each group as it would run alone, and
    simulating one costs a fraction of simulating all (a fit simulates each probe hundreds of times)."""
    grid, units = schedule.grid, schedule.units
    if grid < 2 or grid > machine.slots:
        return None  # a CTA dispatched later starts where another ends: the groups meet
    counts = np.bincount(units[:, 0], minlength=schedule.problem.tiles)
    if np.count_nonzero(counts > 1) > machine.slots:
        return None  # separate-reduce's pass would run the split tiles in waves
    tiles, cta = units[:, 0], schedule.unit_cta
    label = np.arange(grid)
    for _ in range(GROUP_ROUNDS):  # each CTA's label: the least CTA it shares a tile with, transitively
        low = np.full(len(counts), grid)
        np.minimum.at(low, tiles, label[cta])
        joined = label.copy()
        np.minimum.at(joined, cta, low[tiles])
        if np.array_equal(joined, label):
            break
        label = joined
    else:
        return None
    sizes = np.bincount(label)
    heads = np.flatnonzero(sizes)
    if len(heads) < 2 or np.any(sizes[heads] != sizes[heads[0]]):
        return None
    offsets = schedule.cta_offsets.tolist()

    def ctas(members: np.ndarray) -> list[list[tuple[int, int, int]]]:
        """The group's CTAs in blockIdx order, its tiles numbered as they first appear."""
        seen: dict[int, int] = {}
        return [[(seen.setdefault(t, len(seen)), lo, hi) for t, lo, hi in units[offsets[c]:offsets[c + 1]].tolist()]
                for c in members.tolist()]

    groups = np.argsort(label, kind="stable").reshape(len(heads), -1)  # a row of CTAs a group
    first = ctas(groups[0])
    if any(ctas(g) != first for g in groups[1:]):
        return None
    tile = schedule.tile
    shape = GemmShape(tile.bm * (schedule.problem.tiles // len(heads)), tile.bn, schedule.shape.k)  # the same k
    return Schedule.from_ctas(schedule.decomposition, shape, tile, first, machine=machine, fixup=schedule.fixup)


def _simulated(schedule: Schedule, placed: Schedule) -> Schedule:
    """What ``predict_from`` simulates for ``placed`` (``schedule`` on the GPU's residency): its
    alike_part where it has one, found once a schedule."""
    key = (id(schedule), placed.machine)
    held = _PARTS.get(key)
    if held is None or held[0] is not schedule:
        if len(_PARTS) >= _PARTS_ENTRIES:
            _PARTS.pop(next(iter(_PARTS)))
        held = _PARTS[key] = (schedule, alike_part(placed, placed.machine))
    return placed if held[1] is None else held[1]


def _extra_costs(values: dict[str, float]) -> tuple[float, float, float]:
    """The simulator's costs beyond Costs: unit, atomic and handoff (0 where an entry lacks them)."""
    return values.get("unit", 0.0), values.get("atomic", 0.0), values.get("handoff", 0.0)


def predict_from(schedule: Schedule, values: dict[str, float], sms: int, ctas_per_sm: int,
                 fixup: str | None = None, *, l2_bytes: float = 0.0, element_bytes: int = 2,
                 packed_mb: float = 0.0, requests: tuple[float, float] = (1.0, 1.0)) -> float:
    """Predicted microseconds of ``schedule`` under term ``values`` (a fit's current guess or a
    Calibration's) on ``element_bytes`` operands and an L2 of ``l2_bytes`` (0: no traffic model),
    the pack pass first where it copies ``packed_mb`` MB of A and B, its CTAs requesting ``requests``
    of A's and B's rows themselves (module doc); inf where the schedule cannot finish on that machine."""
    placed, costs, policy = calibrated_run(schedule, values, sms, ctas_per_sm, fixup, l2_bytes=l2_bytes,
                                           element_bytes=element_bytes, requests=requests)
    pack = values.get("pack", 0.0) + packed_mb * values.get("pack_us_per_mb", 0.0) if packed_mb > 0 else 0.0
    ipt = schedule.problem.iters_per_tile
    units = schedule.units
    if len(units) == schedule.grid and np.all(units[:, 1] == 0) and np.all(units[:, 2] == ipt):
        # whole tiles, one per CTA: identical CTAs in waves (what the event simulator gives, faster)
        return pack + values["launch"] + math.ceil(schedule.grid / placed.machine.slots) * (costs.a + costs.c * ipt)
    simulated = _simulated(schedule, placed)  # one of its alike CTA groups where it has them: the same makespan
    timeline = simulate(simulated, costs, policy, *_extra_costs(values), a_writes_c=True,
                        stores_apart=stores_apart(schedule.tile))
    if timeline.deadlock:
        return math.inf
    extra = 0.0
    if policy in EXTRA_PASS_POLICIES and len(plan_fixup(simulated, policy).split_tiles):
        extra = values["pass_launch"]
    return pack + values["launch"] + timeline.makespan + extra


def predict_us(schedule: Schedule, calibration: Calibration, sms: int, fixup: str | None = None, *,
               packed_mb: float = 0.0, requests: tuple[float, float] = (1.0, 1.0)) -> float:
    """Predicted microseconds of ``schedule`` on ``sms`` SMs of the calibrated device family, with a
    pack pass of ``packed_mb`` MB first (``gpu.decide.tiles.packed_bytes`` says how much the GPU packs)
    and its CTAs requesting ``requests`` of A's and B's rows themselves (``candidates.launch_requests``)."""
    values = {t.name: t.us for t in calibration.terms}
    return predict_from(schedule, values, sms, calibration.ctas_per_sm, fixup, l2_bytes=calibration.l2_bytes,
                        element_bytes=ITEMSIZE[calibration.dtype], packed_mb=packed_mb, requests=requests)


def calibrated_timeline(schedule: Schedule, calibration: Calibration, sms: int) -> tuple[Timeline, float]:
    """The simulation ``predict_us`` prices ``schedule`` by (its makespan plus the launch, and a
    second pass's launch where one runs, is the prediction) and its MAC iteration's cost (us)."""
    values = {t.name: t.us for t in calibration.terms}
    placed, costs, policy = calibrated_run(schedule, values, sms, calibration.ctas_per_sm,
                                           l2_bytes=calibration.l2_bytes, element_bytes=ITEMSIZE[calibration.dtype])
    return simulate(placed, costs, policy, *_extra_costs(values), a_writes_c=True,
                    stores_apart=stores_apart(schedule.tile)), costs.c
