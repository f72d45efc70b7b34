"""The owner-waits fixup plan of many schedules at once, CTA by CTA (for the sweep's fast path).

Under owner-waits almost every CTA has one pattern: an optional first unit that stores a peer's
partial and signals, whole tiles, and an optional last unit that owns a split tile and waits for
its peers. Such a CTA's part in the plan is a few numbers and a peer list (a ``CtaPlan`` row).
``cta_plan`` reads it off ``plan_fixup`` for any Schedule; ``cta_plan_of_ranges`` derives it for
thousands of contiguous schedules at once (``sched.ranges.Ranges``) without building one, from
the same rule plan_fixup applies (the k = 0 unit owns a split tile, every other contributor is its
peer); tests hold the two equal.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .fixup import plan_fixup, trait_lookup
from .schedule import Schedule


@dataclass(frozen=True, slots=True, eq=False)
class CtaPlan:
    """Per CTA of a batch of schedules (shape i has CTAs ``cta_offsets[i]:cta_offsets[i+1]``):
    its MAC iterations, its first unit's, whether that first unit stores a partial and signals,
    whether its last unit owns a split tile, and the owner's peers
    ``peers[peer_offsets[j]:peer_offsets[j+1]]`` (flat CTA indices, k order)."""

    cta_offsets: np.ndarray
    iters: np.ndarray
    first_iters: np.ndarray
    stores_first: np.ndarray
    owns_last: np.ndarray
    peer_offsets: np.ndarray
    peers: np.ndarray


def cta_plan(schedule: Schedule) -> CtaPlan | None:
    """The CTA plan of an owner-waits schedule from ``plan_fixup``; None under another policy
    or where a CTA leaves the pattern (a partial other than first, an owner other than last)."""
    if schedule.fixup != "owner-waits":
        return None
    plan = plan_fixup(schedule)
    off = schedule.cta_offsets
    first_row, last_row = off[:-1], off[1:] - 1
    stores = trait_lookup("stores_partial")[plan.action]
    waits = trait_lookup("waits")[plan.action]
    position = np.zeros(len(schedule.units), dtype=np.int8)  # bit 0: first of its CTA, bit 1: last
    position[first_row] |= 1
    position[last_row] |= 2
    if not ((position[stores] & 1).all() and (position[waits] & 2).all()):
        return None
    iters = schedule.units[:, 2] - schedule.units[:, 1]
    owner = waits[last_row]
    counts = np.where(owner, plan.wait_offsets[last_row + 1] - plan.wait_offsets[last_row], 0)
    peer_offsets = np.zeros(len(counts) + 1, dtype=np.int64)
    np.add.accumulate(counts, out=peer_offsets[1:])
    # each owner's wait list, in CTA order: the owners' slices of wait_units, end to end
    awaited = plan.wait_units[(plan.wait_offsets[last_row] - peer_offsets[:-1]).repeat(counts)
                              + np.arange(peer_offsets[-1])]
    return CtaPlan(np.array([0, schedule.grid]), schedule.iters_per_cta, iters[first_row], stores[first_row],
                   owner, peer_offsets, plan.unit_cta[awaited])


def cta_plan_of_ranges(ipt: np.ndarray, offsets: np.ndarray, starts: np.ndarray, ends: np.ndarray) -> CtaPlan:
    """The owner-waits CTA plan of *contiguous* schedules: shape i's CTAs cover
    ``[starts, ends)`` of its m -> n -> k linearization in blockIdx order, tiling [0, total).

    A CTA starting inside a tile stores that tile's partial; one starting a tile and ending
    inside a later one owns it, and its peers are the next CTAs up to the one holding the
    tile's last iteration.
    """
    grids = offsets[1:] - offsets[:-1]
    ip = ipt.repeat(grids)
    s, e = starts, ends
    start_tile = s // ip
    start_base = start_tile * ip
    partial = s != start_base
    first = np.minimum(e, start_base + ip) - s
    last_base = (e - 1) // ip * ip
    owner = (e - last_base != ip) & (s <= last_base)  # ends inside a tile it starts
    # An owner's peers are the CTAs after it that start inside its last tile: the run of equal
    # start tiles that begins with the next CTA (which starts where the owner stops).
    flat = np.arange(len(s))
    run_ends = np.ones(len(s), dtype=bool)
    run_ends[:-1] = start_tile[1:] != start_tile[:-1]
    run_ends[(offsets[1:] - 1)[grids > 0]] = True  # a shape's last CTA ends every run
    run_end = np.minimum.accumulate(np.where(run_ends, flat, len(s))[::-1])[::-1]
    last_peer = np.where(owner, run_end[np.minimum(flat + 1, max(len(s) - 1, 0))], flat)
    counts = last_peer - flat
    peer_offsets = np.zeros(len(s) + 1, dtype=np.int64)
    np.add.accumulate(counts, out=peer_offsets[1:])
    peers = np.repeat(flat + 1 - peer_offsets[:-1], counts) + np.arange(peer_offsets[-1])
    return CtaPlan(offsets, e - s, first, partial, owner, peer_offsets, peers)
