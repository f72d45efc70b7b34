"""Which CTA pairs of a table can share B through TMA multicast (kernels/sm90/tma_wgmma.cuh).

The sm90 mainloop is L2-bound on large GEMMs (Nsight: L2 throughput 81%, LOG.md v24): every CTA
reads its own A and B boxes. Launched as clusters of two CTAs (blockIdx 2i, 2i+1), a *paired*
cluster's CTAs each load half of every stage's B boxes and multicast them to both, halving B's L2
reads. Pairing is read off the table the kernel runs, so any Schedule, a user's too, gets it where it
holds: both CTAs run the same number of units, and unit j of each lies on the same tile column (the
same B) over the same k range (the same stages, in the same order) with the same action: *twins*. A grouped tile order
puts consecutive tiles in one tile column, so data-parallel CTAs pair; paired Stream-K
(streamk.sched.paired) is built so that its CTAs do.

Twins run in lockstep: a stage is refilled only once the consumers of both CTAs freed it, so
neither runs more than a ring of stages ahead of the other. A fixup wait inside a pair can then
deadlock where a plain launch would not (CTA 2i waits on a flag that CTA 2i+1 raises only after
stages 2i must free first). The rule: take every twin pair as one *cluster program* whose unit j
is both CTAs' unit j, done when both are, a wait on either being a wait on it; a PARTIAL unit's
signal, which the outer loop defers past its CTA's next mainloop (common/outer_loop.cuh), counts
as the next unit's. The lockstep only ever holds a CTA back where that program would (slack of a
ring against none, a signal at most as late), so the launch finishes where the program does.
Twin pairs are kept

* where the launch's waits only point back (``coresident`` False), if in the program every wait
  points at a lower cluster, at the lower CTA of an unpaired cluster, or at an earlier unit of the
  same program: in-order dispatch of clusters then finishes at any residency (induction on the
  lowest unfinished cluster); or
* where its waits point upwards (``coresident``), if the program has no wait cycle: then it
  finishes once every cluster is resident at once, which the host must check (bind.py);

else only the twin pairs whose units are all written alone (``Action.WRITE``: no waits, no
signals, so merging them adds no edge) are kept, and none where the waits point upwards.

**Share words.** The kernel reads, per CTA of a clustered launch, one int32: 0 where its cluster
shares nothing (it runs alone, no cluster barrier), else its *A mask* (bits 0-7: the cluster ranks
whose A is its A, itself included) and its *B mask* (bits 8-15, the same for B), SHARE_BITS apart.
Pairs (above) give each CTA of a paired cluster B mask 0b11. Clusters of four (decide.launches
QUAD_CLUSTER: auto's short 128-row whole tiles on the H200, launches.auto_quads) take them from the
table: two CTAs of one cluster share A where they run the same number of units, unit j of each on
one tile row over one k range, all written alone (WRITE); B likewise on one tile column. Each
relation is an equivalence, so the masks are groups: on a 2x2 block in the quads order (rank r + 2c
on tile (2i + r, 2j + c)) ranks {0, 2} and {1, 3} share A, {0, 1} and {2, 3} B; an odd edge's pair
shares one operand; a lone CTA (the corner, a pad) shares nothing but still joins its cluster's
barrier. Clusters of one tile column (decide.launches column_rows: aligned splits grouped by 3 or 4
tile rows, sched.paired) are twin groups of that size, held as pairs are (``twin_groups``,
``lockstep_finishes`` and ``multicast_groups`` take the cluster's size): every CTA of a kept group
shares B with all the others (B mask of the whole cluster), and their pairs are the fallback. The kernel (sm90/tma_wgmma.cuh) then loads every (kt % |A group|)-th stage's A and its
share of the stage's B boxes, multicast to its groups, and counts CONSUMERS x |A group | B group|
releases per stage (``stage_sources``, a model of it, is what the tests check). Only WRITE units
share in clusters of four, so the lockstep adds no wait.
"""

from __future__ import annotations

import numpy as np

from ..dispatch import waits_only_backward
from ..fixup import Action, FixupPlan, unordered
from .catalogue import KernelSpec
from .decide.launches import (CLUSTER_SLOTS_SHARE, PAIR_CLUSTER, QUAD_CLUSTER, QUAD_MAX_ITERATIONS, cluster_shape,
                              use_multicast)
from .table import UNIT_FIELDS, Table, build_table

CLUSTER = 2  # kernels/sm90/config.cuh CLUSTER
QUAD = 4  # CTAs in a cluster of 2x2 tiles (decide.launches QUAD_CLUSTER)
SHARE_BITS = 8  # kernels/sm90/config.cuh SHARE_BITS: a share word's B mask starts at this bit
SHARE_MASK = (1 << SHARE_BITS) - 1  # kernels/sm90/config.cuh SHARE_MASK: a share word's A mask
# clusters of four fill at most this share of a wave's slots (LOG.md v46, v74, v160)
QUAD_SLOTS_SHARE = CLUSTER_SLOTS_SHARE[QUAD]

_FIELDS = [UNIT_FIELDS.index(f) for f in ("action", "tile_n", "k_begin", "k_end")]
_A_FIELDS = [UNIT_FIELDS.index(f) for f in ("action", "tile_m", "k_begin", "k_end")]
_ACTION, _WAITS_OFFSET, _WAITS_COUNT = (UNIT_FIELDS.index(f) for f in ("action", "waits_offset", "waits_count"))


def twin_groups(table: Table, size: int = CLUSTER) -> tuple[np.ndarray, np.ndarray]:
    """Per cluster of ``size`` CTAs (the last one padded with empty CTAs where the grid is no multiple
    of it), 1 where its CTAs are twins (module doc), and 1 where moreover every unit is WRITE; int32
    each, ``ceil(grid / size)`` entries."""
    offsets = table.cta_offsets.astype(np.int64)
    grid = -(-table.grid // size) * size
    offsets = np.concatenate([offsets, np.full(grid - table.grid, offsets[-1])])  # pad CTAs run no unit
    counts = np.diff(offsets).reshape(-1, size)
    first = counts[:, 0]
    candidate = np.all(counts == first[:, None], axis=1) & (first > 0)
    keys = table.units[:, _FIELDS]
    # rows of a candidate's first CTA, each against the rows i counts further on (member i's unit j)
    starts = offsets[:-1:size][candidate]
    lengths = first[candidate]
    rows = np.repeat(starts - np.cumsum(lengths) + lengths, lengths) + np.arange(lengths.sum())
    owner = np.repeat(np.arange(len(starts)), lengths)
    alike, written = np.ones(len(rows), bool), keys[rows, 0] == int(Action.WRITE)
    for i in range(1, size):
        alike &= np.all(keys[rows] == keys[rows + i * np.repeat(lengths, lengths)], axis=1)
    twins, plain = np.zeros(len(first), np.int32), np.zeros(len(first), np.int32)
    for out, ok in ((twins, alike), (plain, alike & written)):
        bad = np.zeros(len(starts), np.int64)
        np.add.at(bad, owner, ~ok)
        out[np.flatnonzero(candidate)] = bad == 0
    return twins, plain


def multicast_groups(table: Table, coresident: bool = False, size: int = CLUSTER) -> np.ndarray:
    """Per cluster of ``size`` CTAs, 1 where its CTAs share B (module doc: twins whose lockstep cannot
    join a wait chain; where ``coresident``, only if every cluster is resident at once, which the
    caller checks), else 0; int32, ``ceil(grid / size)`` entries."""
    twins, plain = twin_groups(table, size)
    if not twins.any() or lockstep_finishes(table, twins, coresident, size):
        return twins
    return np.zeros_like(twins) if coresident else plain


def lockstep_finishes(table: Table, pairs: np.ndarray, coresident: bool, size: int = CLUSTER) -> bool:
    """Whether the table finishes with the CTAs of every cluster of ``size`` flagged in ``pairs`` in
    lockstep (module doc): in its cluster programs every wait points back, or, where ``coresident``, no
    wait closes a cycle. A program's unit j is its CTAs' steps, their mainloops (node 2j) and their
    fixups (2j + 1), each after the one before; a unit waits in its fixup step on a signal raised in the
    awaited unit's fixup step, or, deferred, in the mainloop step after it."""
    offsets = table.cta_offsets.astype(np.int64)
    grid = table.grid
    cta = np.repeat(np.arange(grid), np.diff(offsets))
    step = np.arange(len(cta)) - offsets[cta]  # a unit's index in its CTA
    flagged = np.repeat(pairs.astype(bool), size)[:grid]
    leader = np.where(flagged, np.arange(grid) - np.arange(grid) % size, np.arange(grid))  # a program's first CTA
    waiter = np.repeat(np.arange(len(cta)), table.units[:, _WAITS_COUNT])
    awaited = table.waits.astype(np.int64)
    # a PARTIAL unit that is not its CTA's last signals after its CTA's next mainloop
    deferred = (table.units[awaited, _ACTION] == int(Action.PARTIAL)) & (awaited + 1 < offsets[cta[awaited] + 1])
    at = 2 * step[awaited] + np.where(deferred, 2, 1)  # the step that raises the signal
    wait_at = 2 * step[waiter] + 1
    lw, la = leader[cta[waiter]], leader[cta[awaited]]
    if not coresident:
        return bool(np.all((la < lw) | ((la == lw) & (at < wait_at))))
    base = 2 * offsets[leader[cta]]  # a program's first node: its leader's rows, two steps each
    nodes = base + 2 * step
    return not _has_cycle(2 * len(cta), 2 * offsets[la] + at, 2 * offsets[lw] + wait_at, cta, nodes)


def _has_cycle(size: int, sources: np.ndarray, targets: np.ndarray, cta: np.ndarray, nodes: np.ndarray) -> bool:
    """Whether the cluster programs' steps (ids below ``size``; unit u's mainloop ``nodes[u]``, its
    fixup the next id) and the waits ``sources`` -> ``targets`` close a cycle."""
    same = np.flatnonzero(cta[1:] == cta[:-1])  # program order; the twins' rows give the same edges
    order = [np.stack([nodes, nodes + 1], axis=1), np.stack([nodes[same] + 1, nodes[same + 1]], axis=1),
             np.stack([sources, targets], axis=1)]
    return len(unordered(size, np.unique(np.concatenate(order), axis=0))) > 0


def launch_groups(table: Table, spec: KernelSpec, coresident: bool, multicast: bool = True,
                  b_row_bytes: int | None = None, tile_iterations: int = 0, size: int = CLUSTER) -> np.ndarray | None:
    """The flags of a launch of ``spec``'s main kernel that runs in clusters of two (``size``: of a tile
    column's 3 or 4 rows), None where it runs without: not a tile that multicasts for this B
    (decide.launches.use_multicast: B's TMA row stride ``b_row_bytes``, a tile's ``tile_iterations``,
    whether the table splits tiles) or no twin group (multicast_groups). Where ``coresident`` (a wait
    points upwards) the groups hold only if every cluster is resident at once: the caller checks it
    (bind.py), as the device may refuse clusters anyway."""
    splits = bool(np.any(table.units[:, _ACTION] != int(Action.WRITE)))
    if not use_multicast(multicast, spec, b_row_bytes, tile_iterations, splits):
        return None
    pairs = multicast_groups(table, coresident, size)
    return pairs if pairs.any() else None


def held_pairs(plan: FixupPlan, spec: KernelSpec, b_row_bytes: int | None, slots: int) -> np.ndarray | None:
    """launch_groups' flags for ``plan`` as bind.py launches it in clusters of two with ``slots`` CTAs
    resident at once (waits that point upwards keep the pairs only where every cluster is resident);
    None where it launches without them or asks for clusters of four."""
    schedule = plan.schedule
    if cluster_shape(True, False, spec, schedule) != PAIR_CLUSTER:
        return None
    coresident = not waits_only_backward(plan)
    pairs = launch_groups(build_table(plan), spec, coresident, True, b_row_bytes, schedule.problem.iters_per_tile)
    return None if pairs is None or (coresident and schedule.grid + schedule.grid % 2 > slots) else pairs


def requested(plan: FixupPlan, spec: KernelSpec, b_row_bytes: int | None, slots: int) -> tuple[float, float]:
    """The shares of A's and of B's rows that ``plan``'s CTAs request themselves, weighted by their MAC
    iterations, for the model's row32 term (calibrate/predict.py): 1/n for a CTA whose A (or B) group
    holds n CTAs (its share word), 1 alone. Pairs as held_pairs launches them; 2x2 launches in
    clusters of four where their grid fits QUAD_SLOTS_SHARE of ``slots`` (as bind.py takes fours only
    where they add no wave), else in the blocks' pairs; but 2x2 launches of tiles of at most
    QUAD_MAX_ITERATIONS as none: those gained 1.03x where deep ones gained 1.15x, and pricing them
    shared put seed 4630's oracle off (LOG.md v46, v158, v159)."""
    schedule = plan.schedule
    words = None
    if cluster_shape(True, False, spec, schedule) == QUAD_CLUSTER:
        if schedule.problem.iters_per_tile <= QUAD_MAX_ITERATIONS:
            return 1.0, 1.0  # short tiles: their pipeline's fill bounds them, not the L2's reads
        table = build_table(plan)
        fours = -(-schedule.grid // QUAD) * QUAD <= QUAD_SLOTS_SHARE * slots
        words = share_words(table, QUAD) if fours else None
        if words is None:
            words = share_words(table, CLUSTER)
    else:
        pairs = held_pairs(plan, spec, b_row_bytes, slots)
        words = None if pairs is None else group_words(pairs)
    if words is None:
        return 1.0, 1.0
    words = np.asarray(words, dtype=np.int64)[:schedule.grid]
    lengths = (schedule.units[:, 2] - schedule.units[:, 1]).astype(np.int64)
    per_cta = np.bincount(schedule.unit_cta, weights=lengths, minlength=schedule.grid)
    total = max(per_cta.sum(), 1)

    def share(masks: np.ndarray) -> float:
        members = np.array([max(1, bin(int(w)).count("1")) for w in masks])
        return float((per_cta / np.where(words != 0, members, 1)).sum() / total)

    return share(words & SHARE_MASK), share(words >> SHARE_BITS)


def group_words(pairs: np.ndarray, size: int = CLUSTER) -> np.ndarray:
    """Per CTA (``size`` a cluster), the share word (module doc) of launch_groups' flags: every CTA of
    a flagged cluster shares B with the others, the other clusters share nothing."""
    rank = np.tile(np.arange(size), len(pairs))
    words = (1 << rank) | (((1 << size) - 1) << SHARE_BITS)
    return np.where(np.repeat(pairs != 0, size), words, 0).astype(np.int32)


def _alike(table: Table, offsets: np.ndarray, x: np.ndarray, y: np.ndarray, fields: list[int]) -> np.ndarray:
    """Per pair of CTAs ``x[i]``, ``y[i]``: both run as many units (at least one), unit j of each
    equal in ``fields`` and WRITE."""
    counts = np.diff(offsets)
    candidate = (counts[x] == counts[y]) & (counts[x] > 0)
    lengths = counts[x][candidate]
    owner = np.repeat(np.arange(len(lengths)), lengths)
    within = np.arange(lengths.sum()) - np.repeat(np.cumsum(lengths) - lengths, lengths)
    rows_x, rows_y = offsets[x][candidate][owner] + within, offsets[y][candidate][owner] + within
    keys = table.units[:, fields]
    ok = np.all(keys[rows_x] == keys[rows_y], axis=1) & (table.units[rows_x, _ACTION] == int(Action.WRITE))
    bad = np.zeros(len(lengths), np.int64)
    np.add.at(bad, owner, ~ok)
    alike = np.zeros(len(x), bool)
    alike[np.flatnonzero(candidate)] = bad == 0
    return alike


def share_words(table: Table, size: int) -> np.ndarray | None:
    """Per CTA of a launch in clusters of ``size`` CTAs (the grid padded with empty CTAs to a
    multiple of it), its share word (module doc) from the table's WRITE units; None where no
    cluster shares anything."""
    offsets = table.cta_offsets.astype(np.int64)
    grid = -(-table.grid // size) * size
    offsets = np.concatenate([offsets, np.full(grid - table.grid, offsets[-1])])
    a = 1 << (np.arange(grid) % size)
    b = a.copy()
    first = np.arange(0, grid, size)
    for i in range(size):
        for j in range(i + 1, size):
            x, y = first + i, first + j
            for masks, fields in ((a, _A_FIELDS), (b, _FIELDS)):
                alike = _alike(table, offsets, x, y, fields).astype(np.int64)
                masks[x] |= alike << j
                masks[y] |= alike << i
    alone = 1 << (np.arange(grid) % size)
    shared = ((a != alone) | (b != alone)).reshape(-1, size).any(axis=1)
    if not shared.any():
        return None
    return np.where(np.repeat(shared, size), a | (b << SHARE_BITS), 0).astype(np.int32)


def stage_sources(words: np.ndarray, busy: np.ndarray, size: int, b_boxes: int,
                  kt: int) -> list[dict[tuple[str, int], list[int]]]:
    """A model of the kernel's loads of MAC iteration ``kt`` (sm90/tma_wgmma.cuh produce) by the
    CTAs that run units (``busy``): per CTA, the ranks of its cluster that deliver each box of its
    stage, ("A", 0) and ("B", 0 .. b_boxes - 1). A CTA of share word 0 loads every box itself."""
    out: list[dict[tuple[str, int], list[int]]] = [{} for _ in words]
    for cta, word in enumerate(words.tolist()):
        if not busy[cta]:
            continue
        rank, base = cta % size, cta - cta % size
        a_mask, b_mask = (word & 0xFF) or 1 << rank, (word >> SHARE_BITS & 0xFF) or 1 << rank
        a_group = [r for r in range(size) if a_mask >> r & 1]
        b_group = [r for r in range(size) if b_mask >> r & 1]
        if kt % len(a_group) == a_group.index(rank):  # the stage's A: one CTA of the group, in turn
            for r in a_group:
                out[base + r].setdefault(("A", 0), []).append(rank)
        i, n = b_group.index(rank), len(b_group)
        for box in range(-(-i * b_boxes // n), -(-(i + 1) * b_boxes // n)):  # its share of B's boxes
            for r in b_group:
                out[base + r].setdefault(("B", box), []).append(rank)
    return out


def release_count(word: int, rank: int, consumers: int) -> int:
    """The arrivals that free one stage of a CTA (its empty barrier's count in the kernel): one a
    consumer warp group of every CTA that writes into its stages, itself included."""
    if word == 0:
        return consumers
    return consumers * bin((word | word >> SHARE_BITS) & 0xFF | 1 << rank).count("1")


def launch_clusters(table: Table, spec: KernelSpec, cluster: tuple[int, int], coresident: bool,
                    b_row_bytes: int | None = None, tile_iterations: int = 0) -> list[tuple[int, np.ndarray]]:
    """The clustered launches of ``spec``'s main kernel worth trying, best first, as (CTAs a
    cluster, share words): where the decision asks for 2x2 clusters (decide.launches.cluster_shape)
    clusters of four, then of two (the pairs of a 2x2 block, where fours would not be resident);
    where it asks for a tile column's (rows, 1), clusters of that many, then its pairs; else today's
    pairs (launch_groups). Empty where nothing is shared."""
    if cluster == (1, 1):
        return []
    if cluster == (2, 1):
        pairs = launch_groups(table, spec, coresident, True, b_row_bytes, tile_iterations)
        return [] if pairs is None else [(CLUSTER, group_words(pairs))]
    if cluster[1] == 1:  # a column of tiles a cluster (decide.launches COLUMN_CLUSTERS), else its pairs
        launches = []
        for size in (cluster[0], CLUSTER):
            groups = launch_groups(table, spec, coresident, True, b_row_bytes, tile_iterations, size)
            if groups is not None:
                launches.append((size, group_words(groups, size)))
        return launches
    return [(size, words) for size in (QUAD, CLUSTER) if (words := share_words(table, size)) is not None]
