"""The calibration's probes: controlled Schedules, each built so that one or two terms decide its time.

Every probe is a user Schedule (``Schedule.from_ctas``) of whole waves on a ``sms``-SM device,
so its calibrated-simulator time is linear in the terms (``predict.predict_from``):

* dp-one-per-sm: ``sms`` whole tiles of k iterations, one CTA per SM: launch + a + k c1
* dp-partial: sms / s whole tiles of LONG_K iterations, one CTA per SM on a share of the SMs:
  launch + a + k (c1 - (1 - 1/s) c_free)
* dp-wide: one wave of whole tiles of LONG_K iterations in r tile rows, so A and B fill more of the
  L2 than dp-one-per-sm's near-square grid at the same k: launch + a + k (c1 + (A + B bytes / L2) c_l2)
* dp-waves: w full waves of whole tiles at the kernel's residency: launch + w (a + a_shared + k c_shared)
  (a_shared and c_shared only at 2+ CTAs an SM; the intercept above dp-one-per-sm's launch + a
  prices a_shared: LOG.md v54)
* split-even: tiles split p ways evenly, owner-waits: launch + a + (k/p) c1 + b + (p-1) d
* split-long-owner: the owner keeps 3/4 of k, p peers share 1/4 (nobody waits):
  launch + a + (3k/4) c1 + p d
* separate-reduce: tiles split p ways evenly, then the reduce pass:
  launch + a + (k/p) c1 + b + pass_launch + p d_reduce
* multi-unit: one CTA per SM running u whole tiles of k iterations: launch + a + u k c1 + (u-1) unit
* atomic: tiles split p ways evenly under the atomic policy (the prescale pass first, no waits):
  launch + pass_launch + a + (k/p) c1 + atomic
* turnstile-chain: tiles split p ways evenly under the turnstile policy, one CTA a contributor: every
  mainloop ends together, then the p - 2 middle links hand the running sum on one after another:
  launch + a + (k/p) c1 + b + (p - 2) handoff + d (the head's store, the tail's read; LOG.md v52).
  Each CTA runs one unit, so the backward walk auto runs turnstile with is the same schedule
* dp-shifted (the dot tiles only): dp-one-per-sm and dp-partial on operands whose streamed rows are
  not 16-byte aligned (k, or n on the transposed tile, one short of whole iterations): each MAC
  iteration costs c_shifted more (``target.streams_unaligned``)
* dp-packed (kernels that pack 2-byte-aligned rows first): dp-one-per-sm with A's k one short of
  whole iterations, so the GPU packs A before the main kernel: dp-one-per-sm's time + pack +
  (A's MB) pack_us_per_mb; k of 8 to 128 iterations moves the MB 16-fold at a main kernel the
  dp-one-per-sm probes already pin
* dp-row32 (kernels that read A and B in place through TMA boxes): dp-one-per-sm at k = 32 and
  128 and dp-partial at 1/4 of the SMs, on operands whose k and n are 16 bytes short of whole
  tiles, so every other row of A and of B starts 16 bytes off a 32-byte boundary (a row share of
  0.5, ``traffic.row32_share``): each MAC iteration stretched by 1 + 0.5 c_row32 / c1, against
  the same probes on aligned rows above (the fidelity runs' k and n are multiples of 8: half of
  them read such rows; LOG.md v41d)
* dram-scattered: S x S whole tiles (S = sms x ctas_per_sm, one wave) in a Latin-square order, so
  no two tiles of a wave share a row or column of tiles, on operands twice the L2: every slice
  read comes from DRAM, and each step takes its misses' bytes x dram_us_per_mb where that
  exceeds c

Short k (1-4 iterations) in dp-one-per-sm are the memory-bound units (the output tile's store
dominates); together the families pin every term, which ``fit`` checks (a rank-deficient design
is an error, not a silent guess). Every probe with waits fits the device at once, so no wait can
point at a CTA that is not resident. Every probe but dp-shifted and dp-packed reads 16-byte-aligned
rows, so neither c_shifted nor the pack is priced by the others.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from typing import Callable

import numpy as np

from ..errors import ScheduleError
from ..schedule import Schedule
from ..shapes import GemmShape, Machine, TileShape
from ..gpu.catalogue import DOT_T_TILE, DOT_TILE
from ..target import streams_unaligned

DP_ITERS = (1, 2, 4, 8, 16, 32, 64, 128)  # k iterations of dp-one-per-sm: memory-bound to compute-bound
WAVE_ITERS = (8, 32, 128)                  # k iterations of dp-waves
SPLIT_ITERS = (64, 128)                    # k iterations of split-even
SPLITS = (2, 4, 8)                         # ways a split-even tile is split
PEERS = (1, 2, 4)                          # peers of split-long-owner (k = 128: owner 96, peers 32 in all)
REDUCE_SPLITS = (2, 4, 8, 16)              # ways a separate-reduce tile is split (k = 128)
UNITS = ((2, 8), (4, 8), (8, 8), (2, 32), (4, 32))  # (tiles per CTA, k iterations) of multi-unit
ATOMIC_SPLITS = (2, 4, 8)                  # ways an atomic tile is split (k = 128)
CHAIN_SPLITS = (4, 8, 16, 32)              # ways a turnstile-chain tile is split (k = 128): 2 to 30 links (LOG.md v52)
PARTIAL_SHARES = (8, 4, 2)                 # dp-partial: 1/s of the SMs busy (k = 128)
WIDE_ROWS = (4, 2)                         # dp-wide: one wave of whole tiles in this many tile rows (k = 128)
SHIFTED_ITERS = (8, 32, 128)               # k iterations of dp-shifted one CTA per SM (and sms/4 at LONG_K)
PACKED_ITERS = (8, 32, 128)                # k iterations of dp-packed
ROW32_ITERS = (32, 128)                    # k iterations of dp-row32 one CTA per SM (and sms/4 at LONG_K)
ROW32_SHORT_BYTES = 16                     # dp-row32's k and n this much short of whole tiles
TPC_QUARTERS = (1, 2, 3, 4)                # dp-tpc: q/4 of the SMs busy, one CTA an SM (k = 128; LOG.md v49)
TPC_PREFIX = "calibrate:tpc-"              # the fit prices c_tpc only where the design holds these probes
LONG_K = 128
QUICK = {"DP_ITERS": (1, 8, 64), "WAVE_ITERS": (8, 32), "SPLIT_ITERS": (64,), "SPLITS": (2, 4), "PEERS": (1, 4),
         "REDUCE_SPLITS": (2, 4, 8), "UNITS": ((4, 8), (2, 32)),
         "ATOMIC_SPLITS": (2, 8), "CHAIN_SPLITS": (8, 32), "PARTIAL_SHARES": (4,),
         "WIDE_ROWS": (2,), "SHIFTED_ITERS": (32,), "PACKED_ITERS": (8, 128), "ROW32_ITERS": (128,)}  # the GPU test's reduced design: every term


@dataclass(frozen=True, slots=True)
class Probe:
    """One timed Schedule of the design: its family, a label, the Schedule itself, and the MB of A
    and B the GPU packs before it (contiguous operands)."""

    family: str
    label: str
    schedule: Schedule
    packed_mb: float = 0.0


def _shape(tiles: int, iters: int, tile: TileShape, shifted: bool = False) -> GemmShape:
    """A GEMM of ``tiles`` whole tiles of ``iters`` iterations, as near square in tiles as divides;
    on the dot tiles one tile column (row), as the GEMVs they run: each tile streams its own rows,
    which ``shifted`` makes one element short of whole iterations (A's k; B's n, transposed), so
    they are not 16-byte aligned."""
    if tile in (DOT_TILE, DOT_T_TILE):
        tm = tiles if tile == DOT_TILE else 1
        k_short, n_short = (int(shifted and tile == DOT_TILE), int(shifted and tile == DOT_T_TILE))
        return GemmShape(tile.bm * tm, tile.bn * (tiles // tm) - n_short, tile.bk * iters - k_short)
    tm = max(d for d in range(1, math.isqrt(tiles) + 1) if tiles % d == 0)
    return GemmShape(tile.bm * tm, tile.bn * (tiles // tm), tile.bk * iters)


def _split(tile: int, bounds: list[int]) -> list[list[tuple[int, int, int]]]:
    """One CTA per range [bounds[i], bounds[i+1]) of ``tile``, the k = 0 owner first."""
    return [[(tile, lo, hi)] for lo, hi in zip(bounds, bounds[1:])]


def _schedule(label: str, tiles: int, iters: int, tile: TileShape, ctas: list, machine: Machine,
              fixup: str = "owner-waits", shifted: bool = False) -> Schedule:
    return Schedule.from_ctas(f"calibrate:{label}", _shape(tiles, iters, tile, shifted), tile, ctas, machine=machine,
                              fixup=fixup)


def _scattered(tile: TileShape, sms: int, ctas_per_sm: int, l2_bytes: float, element_bytes: int) -> Schedule:
    """S x S tiles (S resident CTAs), CTA w * S + i on tile row i, column (i + w) mod S (a Latin
    square: a wave's tiles share no row or column), k the least that makes A and B twice the L2."""
    side = sms * ctas_per_sm
    iters = max(16, math.ceil(2 * l2_bytes / (side * (tile.bm + tile.bn) * tile.bk * element_bytes)))
    shape = GemmShape(side * tile.bm, side * tile.bn, iters * tile.bk)
    row = np.arange(side)
    tiles = (row[None, :] * side + (row[None, :] + row[:, None]) % side).ravel()  # wave w, slot i
    units = np.stack([tiles, np.zeros_like(tiles), np.full_like(tiles, iters)], axis=1)
    return Schedule(f"calibrate:scattered-k{iters}", shape, tile, units, np.arange(len(tiles) + 1),
                    machine=Machine(sms, ctas_per_sm))


def probes(tile: TileShape, sms: int, ctas_per_sm: int, l2_bytes: float, element_bytes: int,
           quick: bool = False, packed_mb: Callable[[GemmShape], float] | None = None, *,
           row32: bool = False, tpc: bool = False) -> tuple[Probe, ...]:
    """The design for a kernel on ``tile`` of ``ctas_per_sm`` resident CTAs on ``sms`` SMs with an
    L2 of ``l2_bytes``, operands of ``element_bytes`` (``quick``: the reduced design of the GPU test);
    ``packed_mb``: the MB of contiguous A and B the kernel packs for a shape (``gpu.decide.tiles.packed_bytes``),
    where it packs any: then the dp-packed probes price the pack pass; ``row32``: the kernel reads A
    and B in place through TMA boxes (``KernelSpec.tma``): then the dp-row32 probes price c_row32; ``tpc``:
    the dp-tpc probes (whole tiles of k = 128 on 1/4, 1/2, 3/4 and all of the SMs, one CTA an SM, the
    same work a CTA) price c_tpc: a wave at most half the SMs runs each CTA alone on its TPC (not yet
    run on a GPU; LOG.md v49)."""
    need = max(2 * max(REDUCE_SPLITS), max(CHAIN_SPLITS))  # a tile of every split at least
    if sms < need:
        raise ScheduleError(f"calibration needs at least {need} SMs (got {sms})")
    q = QUICK if quick else {}
    dp_iters, wave_iters = q.get("DP_ITERS", DP_ITERS), q.get("WAVE_ITERS", WAVE_ITERS)
    split_iters, splits = q.get("SPLIT_ITERS", SPLIT_ITERS), q.get("SPLITS", SPLITS)
    peers, reduce_splits = q.get("PEERS", PEERS), q.get("REDUCE_SPLITS", REDUCE_SPLITS)
    units, atomic_splits = q.get("UNITS", UNITS), q.get("ATOMIC_SPLITS", ATOMIC_SPLITS)
    shares, wide_rows = q.get("PARTIAL_SHARES", PARTIAL_SHARES), q.get("WIDE_ROWS", WIDE_ROWS)
    one = Machine(sms, 1)
    out: list[Probe] = []
    for k in dp_iters:
        ctas = [[(t, 0, k)] for t in range(sms)]
        out.append(Probe("dp-one-per-sm", f"k={k}", _schedule(f"dp-k{k}", sms, k, tile, ctas, one)))
    for rows in wide_rows:
        cols = sms // rows
        shape = GemmShape(rows * tile.bm, cols * tile.bn, LONG_K * tile.bk)
        ctas = [[(t, 0, LONG_K)] for t in range(rows * cols)]
        out.append(Probe("dp-wide", f"rows={rows}", Schedule.from_ctas(f"calibrate:wide-{rows}", shape, tile, ctas,
                                                                        machine=one)))
    for s in shares:
        tiles = sms // s
        ctas = [[(t, 0, LONG_K)] for t in range(tiles)]
        out.append(Probe("dp-partial", f"sms/{s}", _schedule(f"partial-{s}", tiles, LONG_K, tile, ctas, one)))
    # two wave counts, so launch and a separate; a kernel of one CTA per SM has its single wave above
    waves = (1, 2) if ctas_per_sm > 1 else (2, 3)
    for w in waves:
        tiles = w * sms * ctas_per_sm
        for k in wave_iters:
            ctas = [[(t, 0, k)] for t in range(tiles)]
            out.append(Probe("dp-waves", f"waves={w} k={k}",
                             _schedule(f"waves{w}-k{k}", tiles, k, tile, ctas, Machine(sms, ctas_per_sm))))
    for k in split_iters:
        for p in splits:
            tiles = sms // p
            ctas = [cta for t in range(tiles) for cta in _split(t, [i * k // p for i in range(p + 1)])]
            out.append(Probe("split-even", f"k={k} p={p}", _schedule(f"even-k{k}-p{p}", tiles, k, tile, ctas, one)))
    owner = LONG_K * 3 // 4
    for p in peers:
        tiles = sms // (p + 1)
        bounds = [0] + [owner + i * (LONG_K - owner) // p for i in range(p + 1)]
        ctas = [cta for t in range(tiles) for cta in _split(t, bounds)]
        schedule = _schedule(f"long-owner-p{p}", tiles, LONG_K, tile, ctas, one)
        out.append(Probe("split-long-owner", f"peers={p}", schedule))
    for p in reduce_splits:
        tiles = sms // p
        ctas = [cta for t in range(tiles) for cta in _split(t, [i * LONG_K // p for i in range(p + 1)])]
        out.append(Probe("separate-reduce", f"p={p}", _schedule(f"reduce-p{p}", tiles, LONG_K, tile, ctas, one,
                                                                 "separate-reduce")))
    for u, k in units:
        ctas = [[(c * u + j, 0, k) for j in range(u)] for c in range(sms)]
        out.append(Probe("multi-unit", f"u={u} k={k}", _schedule(f"units{u}-k{k}", sms * u, k, tile, ctas, one)))
    for p in atomic_splits:
        tiles = sms // p
        ctas = [cta for t in range(tiles) for cta in _split(t, [i * LONG_K // p for i in range(p + 1)])]
        out.append(Probe("atomic", f"p={p}", _schedule(f"atomic-p{p}", tiles, LONG_K, tile, ctas, one, "atomic")))
    for p in q.get("CHAIN_SPLITS", CHAIN_SPLITS):  # the only probes with turnstile handoffs: they price handoff
        tiles = sms // p
        ctas = [cta for t in range(tiles) for cta in _split(t, [i * LONG_K // p for i in range(p + 1)])]
        out.append(Probe("turnstile-chain", f"p={p}", _schedule(f"chain-p{p}", tiles, LONG_K, tile, ctas, one,
                                                                 "turnstile")))
    if streams_unaligned(_shape(1, 1, tile, shifted=True), tile, element_bytes):
        for k in q.get("SHIFTED_ITERS", SHIFTED_ITERS):
            ctas = [[(t, 0, k)] for t in range(sms)]
            out.append(Probe("dp-shifted", f"k={k}", _schedule(f"shifted-k{k}", sms, k, tile, ctas, one,
                                                                shifted=True)))
        ctas = [[(t, 0, LONG_K)] for t in range(sms // 4)]
        out.append(Probe("dp-shifted", f"sms/4 k={LONG_K}", _schedule("shifted-partial-4", sms // 4, LONG_K, tile, ctas,
                                                                       one, shifted=True)))
    if packed_mb is not None:
        for k in q.get("PACKED_ITERS", PACKED_ITERS):
            ctas = [[(t, 0, k)] for t in range(sms)]
            s = Schedule.from_ctas(f"calibrate:packed-k{k}", replace(_shape(sms, k, tile), k=k * tile.bk - 1), tile,
                                   ctas, machine=one)
            if packed_mb(s.shape) > 0:
                out.append(Probe("dp-packed", f"k={k}", s, packed_mb(s.shape)))
    if row32:
        short = ROW32_SHORT_BYTES // element_bytes
        for tiles, k in [(sms, k) for k in q.get("ROW32_ITERS", ROW32_ITERS)] + [(sms // 4, LONG_K)]:
            ctas = [[(t, 0, k)] for t in range(tiles)]
            full = _shape(tiles, k, tile)
            s = Schedule.from_ctas(f"calibrate:row32-{tiles}-k{k}", replace(full, n=full.n - short, k=full.k - short),
                                   tile, ctas, machine=one)
            out.append(Probe("dp-row32", f"{'sms/4 ' if tiles < sms else ''}k={k}", s,
                             packed_mb(s.shape) if packed_mb is not None else 0.0))
    if tpc:
        for q in TPC_QUARTERS:
            tiles = sms * q // 4
            ctas = [[(t, 0, LONG_K)] for t in range(tiles)]
            out.append(Probe("dp-tpc", f"{q}/4 sms", _schedule(f"tpc-{q}", tiles, LONG_K, tile, ctas, one)))
    scattered = _scattered(tile, sms, ctas_per_sm, l2_bytes, element_bytes)
    out.append(Probe("dram-scattered", f"k={scattered.problem.iters_per_tile}", scattered))
    return tuple(out)
