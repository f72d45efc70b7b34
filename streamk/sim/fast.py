"""The fast path: makespans of many owner-waits schedules at once, in NumPy.

Under the paper's owner-waits fixup, almost every schedule has CTAs of one *pattern* (its plan,
CTA by CTA, is ``fixup_ctas.CtaPlan``): an optional first unit that is a peer's partial (+b, then
a signal), whole tiles, and an optional last unit that owns a split tile and waits for its peers.
Such a CTA is three numbers and a peer list (a ``Programs`` row), with no event loop:

* it signals at ``S + a + c*f + b`` (f: iterations of its first unit) if its first unit is a partial;
* it reaches its wait, or its end, at ``W = S + a + c*I + b*[first unit partial]``;
* if it owns its last tile it ends at ``max(W, latest peer signal) + d*peers``, else at ``W``.

Dispatch: CTA j starts at the j-th pop of a min-heap of slot free times, so only the multiset of
free times matters, never which slot. Each step hands the next ``slots`` CTAs of every shape
the current free times in sorted order, for all shapes at once, and keeps the longest prefix
for which that is provably what the heap would do: no CTA before position q (and no owner that
was waiting on the step's CTAs) frees its slot before ``S_q``. An owner whose peers are not all
dispatched holds its slot with an unknown free time, later than its last peer's start. Runs of
equal wait-free CTAs (data-parallel tiles) advance whole waves at once, and ``ranges_makespans``
puts a contiguous schedule's leading and trailing data-parallel waves in closed form. A shape
the engine cannot finish this way (an owner outwaiting every slot, a possible deadlock, too
many short steps) is flagged and left to the event simulator.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..costs import Costs
from ..fixup_ctas import CtaPlan, cta_plan, cta_plan_of_ranges
from ..schedule import Schedule


@dataclass(frozen=True, slots=True, eq=False)
class Programs:
    """Timing descriptors of the CTAs of a batch of schedules, flat over shapes.

    Shape i has CTAs ``offsets[i]:offsets[i+1]`` (blockIdx order). ``reach``: start to wait or
    end; ``signal``: start to its partial stored (unused if it stores none); ``owner``: it waits
    for the CTAs ``peers[peer_offsets[j]:peer_offsets[j+1]]`` (flat indices) at its end and
    then spends ``fixup``.
    """

    offsets: np.ndarray
    reach: np.ndarray
    signal: np.ndarray
    owner: np.ndarray
    peer_offsets: np.ndarray
    peers: np.ndarray
    fixup: np.ndarray

    @staticmethod
    def concat(parts: list[Programs]) -> Programs:
        cta_base = np.cumsum([0] + [len(p.reach) for p in parts])
        peer_base = np.cumsum([0] + [len(p.peers) for p in parts])
        return Programs(
            np.concatenate([[0]] + [p.offsets[1:] + b for p, b in zip(parts, cta_base)]),
            *(np.concatenate([getattr(p, f) for p in parts]) for f in ("reach", "signal", "owner")),
            np.concatenate([[0]] + [p.peer_offsets[1:] + b for p, b in zip(parts, peer_base)]),
            np.concatenate([p.peers + b for p, b in zip(parts, cta_base)]),
            np.concatenate([p.fixup for p in parts]),
        )


def contiguous_ranges(schedule: Schedule) -> tuple[np.ndarray, np.ndarray] | None:
    """Per-CTA ``(starts, ends)`` if the schedule's units, in CTA order, walk the linearized
    iteration space from 0 without a gap or a jump back; else None."""
    ipt = schedule.problem.iters_per_tile
    u = schedule.units
    lo = u[:, 0] * ipt + u[:, 1]
    hi = u[:, 0] * ipt + u[:, 2]
    if lo[0] != 0 or not np.array_equal(lo[1:], hi[:-1]):
        return None
    off = schedule.cta_offsets
    return lo[off[:-1]], hi[off[1:] - 1]


def programs(plan: CtaPlan, costs: Costs) -> Programs:
    """Timing descriptors of the CTAs of ``plan`` under ``costs``."""
    counts = np.diff(plan.peer_offsets)
    return Programs(plan.cta_offsets, costs.a + costs.c * plan.iters + costs.b * plan.stores_first,
                    costs.a + costs.c * plan.first_iters + costs.b, plan.owns_last, plan.peer_offsets,
                    plan.peers, costs.d * counts)


def programs_from_ranges(ipt: np.ndarray, offsets: np.ndarray, starts: np.ndarray, ends: np.ndarray,
                         costs: Costs) -> Programs:
    """Programs of contiguous schedules (``fixup_ctas.cta_plan_of_ranges``), built-ins' form."""
    return programs(cta_plan_of_ranges(ipt, offsets, starts, ends), costs)


def programs_from_schedule(schedule: Schedule, costs: Costs) -> Programs | None:
    """Programs of any owner-waits schedule whose CTAs fit the pattern (``fixup_ctas.cta_plan``);
    else None."""
    plan = cta_plan(schedule)
    return None if plan is None else programs(plan, costs)


def wave_makespans(p: Programs, slots: int) -> tuple[np.ndarray, np.ndarray]:
    """Makespan per shape on ``slots`` slots, and a mask of the shapes timed exactly (for the
    others, which need the event simulator, the makespan entry is meaningless)."""
    free, ok = run_waves(p, slots)
    makespan = free.max(axis=1) if len(free) else np.zeros(0)
    return makespan, ok & np.isfinite(makespan)


def ranges_makespans(ipt: np.ndarray, offsets: np.ndarray, starts: np.ndarray, ends: np.ndarray,
                     costs: Costs, slots: int, before: np.ndarray | None = None,
                     after: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    """``wave_makespans`` of contiguous schedules, with their leading and trailing runs of
    whole-tile CTAs (data-parallel waves) in closed form: only the CTAs between go through the
    wave engine. ``before``/``after``: per shape, that many whole-tile CTAs come before/after
    the given ones (``Ranges.whole_tile_ends``: never built). A trailing run shorter than the
    spread of free times it meets is retried whole."""
    P, n, C = slots, len(ipt), len(starts)
    all_starts, all_ends = starts, ends
    grids = offsets[1:] - offsets[:-1]
    before = np.zeros(n, np.int64) if before is None else before
    after = np.zeros(n, np.int64) if after is None else after
    # Contiguous from 0 to the total: a run of whole-tile-long CTAs from either end is tile-aligned
    split = ends - starts != ipt.repeat(grids)
    flat = np.arange(C)
    heads = offsets[:-1]  # a shape may have no CTAs here: one padding entry past the last
    first_split = np.minimum.reduceat(_padded(np.where(split, flat, C), C), heads) if n else flat
    last_split = np.maximum.reduceat(_padded(np.where(split, flat, -1), -1), heads) if n else flat
    lead = np.minimum(first_split, offsets[1:]) - offsets[:-1]
    trail = np.where(lead < grids, offsets[1:] - 1 - last_split, 0)
    sub_counts = grids - lead - trail
    sub_offsets = np.zeros(n + 1, dtype=np.int64)
    np.add.accumulate(sub_counts, out=sub_offsets[1:])
    if sub_offsets[-1] < C:  # some CTAs in closed form: keep the others
        keep = np.repeat(np.tile([False, True, False], n), np.stack([lead, sub_counts, trail], axis=1).ravel())
        starts, ends = starts[keep], ends[keep]
    # the given CTAs hold a split one, or are all whole (then none come after)
    lead, trail = lead + before, trail + after
    tile_time = costs.a + costs.c * ipt
    # Leading run from an idle machine: whole waves, then the remainder on the first slots.
    waves, rest = np.divmod(lead, P)
    free0 = (waves[:, None] + (np.arange(P)[::-1] < rest[:, None])) * tile_time[:, None]
    free0 = np.sort(free0, axis=1)
    free, ok = run_waves(programs_from_ranges(ipt, sub_offsets, starts, ends, costs), P, free0)
    waves, rest = np.divmod(trail, P)
    with np.errstate(invalid="ignore"):  # inf - inf: an owner still holds a slot (not ok anyway)
        fits = free[:, -1] - free[:, 0] <= tile_time  # sorted rows
    free = free + (waves * tile_time)[:, None] + (np.arange(P) < rest[:, None]) * tile_time[:, None]
    makespan = free.max(axis=1) if n else np.zeros(0)
    ok &= np.isfinite(makespan)
    retry = np.flatnonzero(ok & ~fits & (trail > 0))
    if len(retry):
        pieces = [_with_whole_tiles(ipt[i], before[i], after[i], all_starts[offsets[i]:offsets[i + 1]],
                                    all_ends[offsets[i]:offsets[i + 1]]) for i in retry]
        again = np.concatenate([[0], np.cumsum([len(p[0]) for p in pieces])])
        s, e = (np.concatenate([p[k] for p in pieces]) for k in (0, 1))
        makespan[retry], ok[retry] = wave_makespans(programs_from_ranges(ipt[retry], again, s, e, costs), P)
    return makespan, ok


def run_waves(p: Programs, slots: int, free0: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    """The wave engine: final slot free times per shape (rows of ``slots``, sorted) starting
    from ``free0`` (default: all idle at 0), and the mask of shapes timed exactly."""
    n, P = len(p.offsets) - 1, slots
    grids = p.offsets[1:] - p.offsets[:-1]
    npeers = p.peer_offsets[1:] - p.peer_offsets[:-1]
    flat = np.arange(len(p.reach))
    last_peer = np.maximum.reduceat(_padded(p.peers, 0), p.peer_offsets[:-1]) if len(flat) else flat
    last_peer = np.where(npeers > 0, last_peer, -1)
    one_peer = len(flat) == 0 or npeers.max() <= 1  # every owner waits on one peer, its last
    row_of = np.repeat(np.arange(n), grids)
    free = np.zeros((n, P)) if free0 is None else np.array(free0, dtype=float)
    done = np.zeros(n, dtype=np.int64)  # CTAs dispatched per shape
    steps = np.zeros(n, dtype=np.int64)
    step_limit = 4 * -(-grids // P) + 8  # a shape needing more sub-waves goes to the event simulator
    # One padding CTA at index C stands in for the positions past a shape's last CTA.
    C = len(flat)
    reach_of, signal_of = _padded(p.reach, 0.0), _padded(p.signal, 0.0)
    owner_of, last_peer_of = _padded(p.owner, False), _padded(last_peer, -1)
    reach_abs = np.full(C + 1, np.inf)
    sig_abs = np.full(C + 1, np.inf)
    deferred = np.zeros(0, dtype=np.int64)  # owners whose peers are not all dispatched
    ok = np.ones(n, dtype=bool)
    pos = np.arange(P)
    run = _uniform_runs(p, row_of)
    any_fixup = bool(p.fixup.any())  # else adding it changes no time: skipped

    def peak(owners: np.ndarray) -> np.ndarray:
        """Latest signal among each owner's peers."""
        if one_peer:  # fixed-split's pairs, two-tile SK: no reduction
            return sig_abs[last_peer[owners]]
        lens = npeers[owners]
        if not len(lens):
            return np.zeros(0)
        if lens.max() == 1:
            return sig_abs[p.peers[p.peer_offsets[owners]]]
        heads = np.cumsum(lens) - lens
        idx = np.repeat(p.peer_offsets[owners] - heads, lens) + np.arange(lens.sum())
        vals = np.append(sig_abs[p.peers[idx]], -np.inf)
        return np.maximum.reduceat(vals, np.minimum(heads, len(vals) - 1))

    while True:
        rows = np.flatnonzero((done < grids) & ok)
        # Whole waves of a run of equal wait-free CTAs (data-parallel tiles) at once: each wave
        # pops the free times in order and adds its duration, if that is >= their spread.
        j0 = p.offsets[rows] + done[rows]
        waves = run[j0] // P
        with np.errstate(invalid="ignore"):  # inf - inf where an owner holds a slot: no jump
            spread = free[rows, -1] - free[rows, 0]  # each row of free is sorted
        jump = (waves > 0) & (spread <= p.reach[j0])
        if jump.any():
            free[rows[jump]] += (waves[jump] * p.reach[j0[jump]])[:, None]
            done[rows[jump]] += waves[jump] * P
            rows = np.flatnonzero((done < grids) & ok)
        if not len(rows):
            break
        steps[rows] += 1
        na = len(rows)
        local = np.full(n, -1, dtype=np.int64)
        local[rows] = np.arange(na)
        start = free[rows]
        b0 = p.offsets[rows] + done[rows]
        nw = np.minimum(P, grids[rows] - done[rows])
        valid = pos < nw[:, None]
        idx = np.where(valid, b0[:, None] + pos, C)
        sig_abs[idx] = start + signal_of[idx]  # tentative past the accepted prefix: redone later
        end = start + reach_of[idx]
        reach_abs[idx] = end
        own = owner_of[idx]
        peer_pos = last_peer_of[idx] - b0[:, None]
        inside = own & (peer_pos < nw[:, None])
        if inside.any():  # flat indices: 2-D fancy indexing costs more
            at = inside.ravel().nonzero()[0]
            j = idx.ravel()[at]
            waited = np.maximum(end.ravel()[at], peak(j))
            end.ravel()[at] = waited + p.fixup[j] if any_fixup else waited
        earliest = np.full((na, P), np.inf)
        earliest[:, 1:] = np.minimum.accumulate(end, axis=1)[:, :-1]  # past nw: padding, unused
        late_own = np.zeros(0, dtype=np.int64)
        if len(deferred):
            # Owners of earlier steps whose last peer is in this window: their slot frees at
            # `late`, which may be the pop of any position after that peer.
            r_def = local[row_of[deferred]]
            live = r_def >= 0
            late_own = deferred[live][last_peer[deferred[live]] < (b0 + nw)[r_def[live]]]
            late_row = local[row_of[late_own]]
            late_pos = last_peer[late_own] - b0[late_row]
            late = np.maximum(reach_abs[late_own], peak(late_own)) + p.fixup[late_own]
            first_late = np.full(na, np.inf)
            np.minimum.at(first_late, late_row, late)
            earliest = np.minimum(earliest, first_late[:, None])
        # Exact prefix: position q's pop is start[q] unless a CTA before it, or a late owner,
        # has already freed its slot; accept up to the first such q. (An owner's end may rest on
        # peers' tentative starts beyond that q; it then can only cut the prefix shorter.)
        bad = valid & ((start > earliest) | np.isinf(start))
        accepted = np.where(bad.any(axis=1), np.argmax(bad, axis=1), nw)
        ok[rows[accepted == 0]] = False  # no slot for the next CTA: a possible deadlock
        take = pos < accepted[:, None]
        spill = take & own & (peer_pos >= accepted[:, None])
        end[spill] = np.inf
        after = np.where(take, end, start)
        known = late_pos < accepted[late_row] if len(late_own) else np.zeros(0, dtype=bool)
        if known.any():  # a late owner's slot free time is now known
            order = np.argsort(late_row[known], kind="stable")
            lr, lt = late_row[known][order], late[known][order]
            unknown = np.isinf(start).sum(axis=1)
            after[lr, P - unknown[lr] + _ramp(np.unique(lr, return_counts=True)[1])] = lt
            deferred = np.setdiff1d(deferred, late_own[known], assume_unique=True)
        free[rows] = np.sort(after, axis=1)
        deferred = np.concatenate([deferred, idx[spill]])
        done[rows] += accepted
        ok[rows[steps[rows] > step_limit[rows]]] = False
    ok[row_of[deferred]] = False
    return free, ok


def _uniform_runs(p: Programs, row_of: np.ndarray) -> np.ndarray:
    """For each CTA, how many CTAs from it on (same shape) neither store a partial nor wait and
    take the same time: a data-parallel run; 0 for a CTA that does either."""
    plain = ~p.owner & (np.diff(p.peer_offsets) == 0)
    plain[p.peers] = False  # a peer stores a partial
    n = len(plain)
    if not plain.any():
        return np.zeros(n, dtype=np.int64)
    same = np.zeros(n, dtype=bool)
    same[:-1] = plain[:-1] & plain[1:] & (p.reach[:-1] == p.reach[1:]) & (row_of[:-1] == row_of[1:])
    idx = np.arange(n)
    end = np.minimum.accumulate(np.where(~same, idx, n)[::-1])[::-1]  # last CTA of each run
    return np.where(plain, end - idx + 1, 0)


def _with_whole_tiles(ipt: int, before: int, after: int, starts: np.ndarray, ends: np.ndarray
                      ) -> tuple[np.ndarray, np.ndarray]:
    """A contiguous schedule's CTAs with ``before`` whole tiles ahead and ``after`` behind."""
    head = np.arange(before) * ipt
    tail = (ends[-1] if len(ends) else before * ipt) + np.arange(after) * ipt
    return np.concatenate([head, starts, tail]), np.concatenate([head + ipt, ends, tail + ipt])


def _padded(values: np.ndarray, pad) -> np.ndarray:
    """``values`` and one more entry ``pad`` (np.append without its Python-level overhead)."""
    out = np.empty(len(values) + 1, dtype=values.dtype)
    out[:-1] = values
    out[-1] = pad
    return out


def _ramp(lengths: np.ndarray) -> np.ndarray:
    """0..l-1 for each l in ``lengths``, concatenated."""
    lengths = np.asarray(lengths, dtype=np.int64)
    return np.arange(lengths.sum()) - np.repeat(np.cumsum(lengths) - lengths, lengths)
