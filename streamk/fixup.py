"""The fixup plan: who writes each tile of C, which partials it reads, who waits on whom.

This is the only place the consolidation of split tiles is derived. The CPU executor, the
simulator and the GPU table uploader all read a ``FixupPlan``; none of them re-derives it.

Every unit of a schedule gets one ``Action``. Contributors of a tile are ordered by k_begin and
partials are always summed in that order, which is what makes the deterministic policies give
bitwise-identical results whatever order the CTAs run in.

Policies (the names are CLI values):

* ``owner-waits`` (the paper's, default): the k = 0 unit owns the tile; every other contributor
  stores its partial to a workspace slot and signals; the owner waits for all of them, adds
  them in k order and writes C.
* ``turnstile``: contributors hand over in k order; each waits for its predecessor's running
  sum, adds its own and passes it on; the k = end unit writes C. In the built-in schedulers
  every wait then points at a lower-numbered CTA, so in-order dispatch cannot deadlock.
* ``last-arrival``: every contributor stores its partial and bumps the tile's arrival counter;
  whoever arrives last sums all the partials in k order and writes C. Nobody spins.
* ``atomic``: contributors add alpha * partial into C atomically (C pre-scaled by beta).
  Fast, no workspace, not deterministic.
* ``separate-reduce``: contributors store partials; a second pass sums them in k order and
  writes C. No waits at all.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, field, fields
from enum import IntEnum

import numpy as np

from .errors import ScheduleError, check_type
from .schedule import FIXUP_POLICIES, Schedule


class Action(IntEnum):
    """What one work unit does with its accumulators once its MAC iterations are done."""

    WRITE = 0      # sole contributor: C = alpha*acc + beta*C
    PARTIAL = 1    # store acc to its slot, signal
    REDUCE = 2     # wait for `waits`, acc += slots in `reads` (k order), write C
    HANDOFF = 3    # wait for predecessor, acc = slot(pred) + acc, store to own slot, signal
    FINISH = 4     # wait for predecessor, acc = slot(pred) + acc, write C
    ARRIVE = 5     # store acc to own slot, count arrival; the last arrival sums `reads`, writes C
    ATOMIC = 6     # C += alpha*acc atomically (the tile's C was pre-scaled by beta)
    DEFER = 7      # store acc to own slot; the separate reduce pass sums `reads`, writes C


@dataclass(frozen=True, slots=True)
class ActionTraits:
    """What a unit of one Action does after its MAC iterations, in the order it does it.

    The one description of the actions: the executor, the event simulator and the GPU host read
    it, and ``kernels/schedule_table.cuh`` mirrors it (tests/test_gpu_table.py checks that).
    """

    waits: bool           # blocks until every unit of its `waits` list has signalled
    reads_partials: bool  # adds the slots of its `reads` to acc, in k order
    stores_partial: bool  # stores acc to its own workspace slot
    signals: bool         # raises its flag once that store is done
    arrives: bool         # counts an arrival on the tile; the last arrival sums `reads` and writes C
    writes_c: bool        # C = alpha*acc + beta*C
    adds_to_c: bool       # C += alpha*acc atomically (the tile's C was pre-scaled by beta)
    reduced_later: bool   # the separate reduce pass sums the tile's `reads` and writes C

    @property
    def needs_epoch(self) -> bool:
        """Touches a flag or an arrival counter, which carry the launch's epoch."""
        return self.waits or self.signals or self.arrives


def _traits(*names: str) -> ActionTraits:
    return ActionTraits(**{f.name: f.name in names for f in fields(ActionTraits)})


TRAITS: dict[Action, ActionTraits] = {
    Action.WRITE: _traits("writes_c"),
    Action.PARTIAL: _traits("stores_partial", "signals"),
    Action.REDUCE: _traits("waits", "reads_partials", "writes_c"),
    Action.HANDOFF: _traits("waits", "reads_partials", "stores_partial", "signals"),
    Action.FINISH: _traits("waits", "reads_partials", "writes_c"),
    Action.ARRIVE: _traits("stores_partial", "arrives"),
    Action.ATOMIC: _traits("adds_to_c"),
    Action.DEFER: _traits("stores_partial", "reduced_later"),
}
TRAIT_NAMES = tuple(f.name for f in fields(ActionTraits)) + ("needs_epoch",)


def actions_with(trait: str) -> tuple[Action, ...]:
    """The actions that have ``trait`` (a name of TRAIT_NAMES)."""
    return tuple(a for a in Action if getattr(TRAITS[a], trait))


@functools.lru_cache(maxsize=None)
def trait_lookup(trait: str) -> np.ndarray:
    """By action code, whether the action has ``trait``: index it with a plan's actions (a
    lookup; np.isin costs ~20 us a plan)."""
    lookup = np.isin(np.arange(len(Action)), actions_with(trait))
    lookup.setflags(write=False)
    return lookup


def action_mask(trait: str) -> int:
    """Bit ``a`` set for each action ``a`` that has ``trait``: the form schedule_table.cuh holds."""
    return sum(1 << int(a) for a in actions_with(trait))


WRITES_C = actions_with("writes_c")

# Per policy, the action of a split tile's first (k = 0), middle and last contributor; a tile
# with one contributor is always WRITE. plan_fixup assigns them; the policy facts below follow.
POLICY_ROLES: dict[str, tuple[Action, Action, Action]] = {
    "owner-waits": (Action.REDUCE, Action.PARTIAL, Action.PARTIAL),
    "turnstile": (Action.PARTIAL, Action.HANDOFF, Action.FINISH),
    "last-arrival": (Action.ARRIVE,) * 3,
    "atomic": (Action.ATOMIC,) * 3,
    "separate-reduce": (Action.DEFER,) * 3,
}
assert tuple(POLICY_ROLES) == FIXUP_POLICIES, "every fixup policy has its roles"

NO_WAIT_POLICIES = tuple(p for p, roles in POLICY_ROLES.items() if not any(TRAITS[a].waits for a in roles))
"""Policies under which no unit ever waits: safe at any residency (no deadlock possible)."""


def needs_epoch(plan: FixupPlan) -> bool:
    """Whether a launch of ``plan`` signals, waits or arrives (its flags and counters carry the
    launch epoch); a launch that does not can skip reading the epoch and counting its end."""
    return bool(trait_lookup("needs_epoch")[plan.action].any())


@dataclass(frozen=True, slots=True, eq=False)
class FixupPlan:
    """Per-unit actions, workspace slots, reads and waits for one Schedule and policy.

    Arrays are indexed by unit row of ``schedule.units``. CSR pairs (``*_offsets``, values)
    hold the variable-length lists: ``reads`` are slot ids, ``waits`` are unit rows whose
    signal must be up first. ``tile_units[tile_offsets[t]:tile_offsets[t+1]]`` are tile t's
    contributors in k order.
    """

    schedule: Schedule
    policy: str
    action: np.ndarray
    slot: np.ndarray
    read_offsets: np.ndarray
    read_slots: np.ndarray
    wait_offsets: np.ndarray
    wait_units: np.ndarray
    tile_offsets: np.ndarray
    tile_units: np.ndarray
    num_slots: int
    unit_cta: np.ndarray = field(repr=False)

    def reads(self, unit: int) -> np.ndarray:
        return self.read_slots[self.read_offsets[unit] : self.read_offsets[unit + 1]]

    def waits(self, unit: int) -> np.ndarray:
        return self.wait_units[self.wait_offsets[unit] : self.wait_offsets[unit + 1]]

    def contributors(self, tile: int) -> np.ndarray:
        return self.tile_units[self.tile_offsets[tile] : self.tile_offsets[tile + 1]]

    @property
    def split_tiles(self) -> np.ndarray:
        """Tiles with more than one contributor (the ones that need any fixup)."""
        return ((self.tile_offsets[1:] - self.tile_offsets[:-1]) > 1).nonzero()[0]

    def writer(self, tile: int) -> int:
        """Unit row that writes C for ``tile``; -1 when decided at run time or by a later pass."""
        units = self.contributors(tile)
        writers = [int(u) for u in units if self.action[u] in WRITES_C]
        return writers[0] if writers else -1

    def wait_edges(self) -> np.ndarray:
        """Unit-level wait edges, rows ``(waiting unit, awaited unit)``."""
        counts = np.diff(self.wait_offsets)
        edges = np.empty((len(self.wait_units), 2), dtype=np.int64)
        edges[:, 0] = np.repeat(np.arange(len(counts)), counts)
        edges[:, 1] = self.wait_units
        return edges

    def cta_wait_edges(self) -> np.ndarray:
        """CTA-level wait graph, unique rows ``(waiting CTA, awaited CTA)``."""
        edges = self.wait_edges()
        if len(edges) == 0:
            return np.zeros((0, 2), dtype=np.int64)
        return np.unique(self.unit_cta[edges], axis=0)

    def wait_cycle(self) -> list[int] | None:
        """Units that can never run (a wait cycle through program order), else None."""
        return _find_cycle(self)

    def residency_needed(self) -> int:
        """Fewest co-resident CTA slots under which in-order dispatch can never deadlock.

        When CTA x is next to dispatch, only CTAs below x that wait (directly or through lower
        CTAs) on x or above can hold a slot forever. If fewer than the slot count can, one slot
        frees and x gets dispatched; by induction every CTA runs. Returns 1 + the largest such
        count over x (1 for schedules with no waits or only downward waits).
        """
        edges = self.cta_wait_edges()
        grid = self.schedule.grid
        if len(edges) == 0:
            return 1
        reach = np.arange(grid)
        while True:  # transitive max of reachable CTA index; converges in <= depth rounds
            new = reach.copy()
            np.maximum.at(new, edges[:, 0], reach[edges[:, 1]])
            if np.array_equal(new, reach):
                break
            reach = new
        pending = np.zeros(grid + 1, dtype=np.int64)  # c is pending for x in (c, reach[c]]
        up = reach > np.arange(grid)
        np.add.at(pending, np.arange(grid)[up] + 1, 1)
        np.add.at(pending, reach[up] + 1, -1)
        return 1 + int(np.cumsum(pending).max())


def plan_fixup(schedule: Schedule, policy: str | None = None) -> FixupPlan:
    """Derive the fixup plan of ``schedule`` under ``policy`` (default: the schedule's own).

    Vectorized over units: each unit's position ``pos`` among its tile's contributors (k order)
    and the contributor count decide its action; reads and waits are built as (reader, index,
    value) entries and scattered into CSR arrays indexed by unit row.
    """
    check_type("schedule", schedule, Schedule)
    policy = schedule.fixup if policy is None else policy
    if policy not in FIXUP_POLICIES:
        raise ScheduleError(f"fixup policy must be one of {', '.join(FIXUP_POLICIES)} (got {policy!r})")
    units = schedule.units
    n = len(units)
    if n == schedule.problem.tiles:  # a tile a unit (the schedule covers each tile once): no fixup
        return _unsplit_plan(schedule, policy)
    order = np.lexsort((units[:, 1], units[:, 0]))  # k order within each tile
    counts = np.bincount(units[:, 0], minlength=schedule.problem.tiles)
    tile_offsets = np.zeros(len(counts) + 1, dtype=np.int64)
    np.add.accumulate(counts, out=tile_offsets[1:])
    tile_sorted = units[order, 0]
    pos = np.arange(n) - tile_offsets[tile_sorted]  # position among the tile's contributors
    cnt = counts[tile_sorted]
    split = cnt > 1

    head, middle, tail = (int(a) for a in POLICY_ROLES[policy])  # ints: NumPy reads an IntEnum slowly
    # WRITE where alone, else the policy's middle role, its head at k = 0, its tail at the end
    act_sorted = np.where(split, np.where(pos == 0, head, np.where(pos == cnt - 1, tail, middle)), int(Action.WRITE))
    act_sorted = act_sorted.astype(np.int8)
    stores = trait_lookup("stores_partial")[act_sorted]  # in sorted order
    slot_sorted = np.where(stores, stores.cumsum() - 1, -1)
    reads = (np.zeros(0, np.int64),) * 3  # (reader sorted index, index in list, sorted index read)
    if policy == "owner-waits":  # the owner reads and waits for every peer
        peers = stores.nonzero()[0]
        reads = (peers - pos[peers], pos[peers] - 1, peers)
    elif policy == "turnstile":  # each taker reads and waits for its predecessor
        takers = (split & (pos > 0)).nonzero()[0]
        reads = (takers, np.zeros(len(takers), np.int64), takers - 1)
    elif policy != "atomic":  # last-arrival, separate-reduce: every member lists all, k order
        members = np.flatnonzero(split)
        reader = np.repeat(members, cnt[members])
        within = np.arange(len(reader)) - np.repeat(np.cumsum(cnt[members]) - cnt[members], cnt[members])
        reads = (reader, within, (reader - pos[reader]) + within)

    action = np.empty(n, dtype=np.int8)
    action[order] = act_sorted
    slot = np.empty(n, dtype=np.int64)
    slot[order] = slot_sorted
    read_offsets, at = _csr(n, order[reads[0]], reads[1])
    read_slots = _scatter(at, slot_sorted[reads[2]])
    if policy in ("owner-waits", "turnstile"):  # a unit waits on exactly the units it reads
        wait_offsets, wait_units = read_offsets, _scatter(at, order[reads[2]])
    else:
        wait_offsets, wait_units = np.zeros(n + 1, dtype=np.int64), np.zeros(0, dtype=np.int64)
    unit_cta = schedule.unit_cta
    arrays = [action, slot, read_offsets, read_slots, wait_offsets, wait_units, tile_offsets, order, unit_cta]
    for a in arrays:
        a.setflags(write=False)
    return FixupPlan(schedule, policy, action, slot, read_offsets, read_slots, wait_offsets,
                     wait_units, tile_offsets, order, int(slot_sorted.max(initial=-1)) + 1, unit_cta)


def _unsplit_plan(schedule: Schedule, policy: str) -> FixupPlan:
    """plan_fixup of a schedule with one unit a tile (data-parallel): every unit writes C alone."""
    n = len(schedule.units)
    order = np.empty(n, dtype=np.int64)  # the unit of each tile
    order[schedule.units[:, 0]] = np.arange(n)
    action = np.full(n, Action.WRITE, dtype=np.int8)
    slot = np.full(n, -1, dtype=np.int64)
    no_lists, none = np.zeros(n + 1, dtype=np.int64), np.zeros(0, dtype=np.int64)
    tile_offsets, unit_cta = np.arange(n + 1), schedule.unit_cta
    for a in (action, slot, no_lists, none, tile_offsets, order, unit_cta):
        a.setflags(write=False)
    return FixupPlan(schedule, policy, action, slot, no_lists, none, no_lists, none, tile_offsets, order, 0, unit_cta)


def _csr(n: int, reader: np.ndarray, index: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Offsets of CSR lists per unit row holding entry i at position ``index[i]`` of list
    ``reader[i]``, and where each entry goes in the flat array."""
    offsets = np.zeros(n + 1, dtype=np.int64)
    if len(reader) == 0:
        return offsets, reader
    np.add.accumulate(np.bincount(reader, minlength=n), out=offsets[1:])
    return offsets, offsets[reader] + index


def _scatter(at: np.ndarray, value: np.ndarray) -> np.ndarray:
    flat = np.empty(len(at), dtype=np.int64)
    flat[at] = value
    return flat


def _find_cycle(plan: FixupPlan) -> list[int] | None:
    """Kahn's algorithm on units with edges: program order (unit after its CTA predecessor)
    and waits (unit after the awaited unit)."""
    s = plan.schedule
    n = len(s.units)
    follows = np.ones(n, dtype=bool)  # a unit after its CTA's previous one
    follows[s.cta_offsets[:-1][s.cta_offsets[:-1] < n]] = False
    after = np.flatnonzero(follows)
    order = np.stack([after - 1, after], axis=1)
    waits = plan.wait_edges()[:, ::-1]  # awaited, then waiter
    stuck = unordered(n, np.concatenate([order, waits]))
    return stuck.tolist() if len(stuck) else None


def unordered(count: int, edges: np.ndarray) -> np.ndarray:
    """The nodes of a graph of ``count`` nodes and ``edges`` rows (before, after) that no
    topological order reaches (on a cycle or after one), ascending: Kahn's algorithm."""
    succ: list[list[int]] = [[] for _ in range(count)]
    indeg = [0] * count
    for a, b in edges.tolist():
        succ[a].append(b)
        indeg[b] += 1
    ready = [v for v in range(count) if indeg[v] == 0]
    while ready:
        for w in succ[ready.pop()]:
            indeg[w] -= 1
            if indeg[w] == 0:
                ready.append(w)
    return np.flatnonzero(np.asarray(indeg, dtype=np.int64) > 0)
