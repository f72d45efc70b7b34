"""Which CTA pairs of a table can share B through TMA multicast (kernels/sm90/tma_wgmma.cuh).

The sm90 mainloop is L2-bound on large GEMMs (Nsight: L2 throughput 81%, LOG.md v24): every CTA
reads its own A and B boxes. Launched as clusters of two CTAs (blockIdx 2i, 2i+1), a *paired*
cluster's CTAs each load half of every stage's B boxes and multicast them to both, halving B's L2
reads. Pairing is read off the table the kernel runs, so any Schedule, a user's too, gets it where it
holds: both CTAs run the same number of units, and unit j of each is a whole tile written alone
(``Action.WRITE``: no partials, no waits, so the two CTAs' lockstep cannot join a fixup's wait
chain) on the same tile column (the same B) over the same k range (the same stages, in the same
order). A grouped tile order puts consecutive tiles in one tile column, so data-parallel CTAs pair.
"""

from __future__ import annotations

import numpy as np

from ..fixup import Action
from .catalogue import KernelSpec
from .decide.launches import use_multicast
from .table import UNIT_FIELDS, Table

CLUSTER = 2  # kernels/sm90/config.cuh CLUSTER

_FIELDS = [UNIT_FIELDS.index(f) for f in ("action", "tile_n", "k_begin", "k_end")]


def multicast_pairs(table: Table) -> np.ndarray:
    """Per cluster of two CTAs (the last one padded with an empty CTA where the grid is odd), 1
    where its CTAs can share B (module doc), else 0; int32, ``ceil(grid / 2)`` entries."""
    offsets = table.cta_offsets.astype(np.int64)
    if table.grid % CLUSTER:
        offsets = np.append(offsets, offsets[-1])  # the pad CTA runs no unit
    counts = np.diff(offsets)
    first, second = counts[0::2], counts[1::2]
    candidate = (first == second) & (first > 0)
    keys = table.units[:, _FIELDS]
    # rows of a candidate's first CTA, each against the row `count` further on (the second CTA's unit j)
    starts = offsets[:-1:2][candidate]
    lengths = first[candidate]
    rows = np.repeat(starts - np.cumsum(lengths) + lengths, lengths) + np.arange(lengths.sum())
    partner = rows + np.repeat(lengths, lengths)
    ok = (keys[rows, 0] == int(Action.WRITE)) & np.all(keys[rows] == keys[partner], axis=1)
    bad = np.zeros(len(starts), np.int64)
    np.add.at(bad, np.repeat(np.arange(len(starts)), lengths), ~ok)
    pairs = np.zeros(len(first), np.int32)
    pairs[np.flatnonzero(candidate)] = bad == 0
    return pairs


def launch_pairs(table: Table, spec: KernelSpec, coresident: bool, multicast: bool = True,
                 b_row_bytes: int | None = None, tile_iterations: int = 0) -> np.ndarray | None:
    """The pairing flags of a launch of ``spec``'s main kernel that runs in clusters of two, None where
    it runs without: not a tile that multicasts for this B (decide.launches.use_multicast: B's TMA
    row stride ``b_row_bytes``, a tile's ``tile_iterations``), a wait pointing upwards
    (``coresident``: a cluster is dispatched whole, so only waits on lower CTAs are certain to end), or
    no pair. The device may still refuse clusters (plan.build_plan checks their residency)."""
    if not use_multicast(multicast, spec, b_row_bytes, tile_iterations) or coresident:
        return None
    pairs = multicast_pairs(table)
    return pairs if pairs.any() else None
