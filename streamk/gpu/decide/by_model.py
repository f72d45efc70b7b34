"""Where the calibrated model overrules auto's rules (issue 43): on the sm90 large-GEMM tiles, auto's
Schedule against data-parallel and two-way fixed-split on each of those tiles, each priced by the
Target's calibrated simulator; auto runs the cheapest where the model says it saves more than
MODEL_MARGIN (fixed-split: MODEL_SPLIT_MARGIN). Where auto's rules fall back to an sm80 tile
(64x64x32 and smaller), its launch against data-parallel on the sm90 64x128x64 tile alone
(FALLBACK_CANDIDATES), by MODEL_MARGIN too. On decode-like shapes whose A and B the kernels read
row-major (as the decode oracles ran), its launch against data-parallel on each tile those oracles timed
(DECODE_CANDIDATES), by DECODE_MARGIN.

Only on a Target whose ``model_picks`` holds (the h200 preset: no other GPU has been measured for
it). Where the model is measured to be blind, auto's rules stand (H200, seed 4254, 200 aligned shapes,
the half of them the rule was derived on; benchmarks/LOG.md v47):
* auto's tile is an sm80 fallback and the candidate another decomposition or tile than
  FALLBACK_CANDIDATES: its Stream-K on resident slots was predicted 1.26x its time (median, 10
  shapes; v47), and the sm90 64x128x64 kernel of then (two CTAs an SM, 3 stages) was mispriced on
  full machines. Today the model prices auto's sm80 launches but separate-reduce at 0.97-0.98x their
  time (median, 41-59 shapes a seed; fidelity seeds 4333, 4340, 4285), and data-parallel on the
  7-stage 64x128x64 (v75) predicted past MODEL_MARGIN faster ran faster on every shape where it was
  (seed 4333: 2, the derivation; 4340 and 4285: 4, held out; LOG.md v88); fixed-split and the
  64x192x64 / 64x256x64 tiles picked nothing more there, and the 64-row tiles as candidates over
  auto's large tiles lost (v76; v88: 4333 -2.0 to +0 points, 4285 -1.0);
* auto's grid is persistent (one CTA per SM over more tiles): predicted 1.07x its time (7 shapes),
  and overruling it lost 1.22x and 1.11x on two shapes;
* auto runs Stream-K under separate-reduce (few deep tiles on every SM; the sm80 fallbacks' too,
  priced 1.19-1.21x, v88): the model prices it 1.11-1.46x its time (LOG.md v61), and its fixed-split
  picks there ran 1.16-1.25x slower. Held out on seed 4272: auto within 5% of the best 90.5 -> 91.0%
  (geomean 1.0133 -> 1.0123), seeds 4258, 4265 and 4267 unchanged (LOG.md v72). Not on decode-like
  shapes (DECODE_CANDIDATES), where auto's separate-reduce launches are the dot and small tiles', priced
  within 5% since v105: there a pick must be predicted DECODE_REDUCE_MARGIN faster (LOG.md v110).
"""

from __future__ import annotations

import math

from ...schedule import Schedule
from ...shapes import GemmShape, Problem, TileShape
from ...target import Target
from ..catalogue import (DOT_T_TILE, LARGE_RUNGS, SM90_192_TILE, SM90_M64_TILE, SM90_M64_WIDE_TILE, SM90_TILE,
                         SMALL_TILE, TINY_TILES)
from .operands import decode_like
from .tiles import packed_bytes

# A candidate must be predicted this much faster than auto's Schedule to replace it: auto's own
# data-parallel (grouped order, clusters) runs the same launch as the candidates' row-major one
# 1.038x (128x128x64, 14 shapes) to 1.058x (128x256x64, 23) faster (median), which the model does
# not price (H200 seed 4254, the derivation half; 0.02-0.10 scored 91.4-93.5% there, 0.06 best).
# The candidates now run in the kernel's order too (as auto's own launches), which the oracle's
# row-major rows measured at least that much slower: the margin stays as derived.
MODEL_MARGIN = 0.06
# A fixed-split candidate must be predicted this much faster: where the model picked fixed-split it
# priced auto's 128x128x64 launches below a wave at 0.85-1.46x their time, and of its fixed-split
# picks predicted 6-12% faster, 7 ran 1.04-1.25x slower than auto's and 2 faster (H200 oracles of
# seeds 4254, 4258, 4265, 4267). Auto within 5% of the best (LOG.md v61): 0.12 was chosen on the
# first three (v56, in every rotation of 0.03-0.20) and held out on 4267, 89.5 -> 90.5% (geomean
# 1.0117 -> 1.0103); leaving one seed out of the four: 0, +0.5, +0.5, +1.0 points.
MODEL_SPLIT_MARGIN = 0.12
# The candidates: data-parallel, and fixed-split at its default two ways (the decompositions whose
# predictions the same runs found closest; every other decomposition added lost 2-3 points there)
MODEL_CANDIDATES = ("data-parallel", "fixed-split")
# Above this many waves of auto's tiles the model is not asked: on the derivation half it overruled
# none of the 10 shapes there (the largest it overruled held 2.3 waves), and pricing the candidates
# costs 0.4-0.9 s a shape at 9-15 waves (the DRAM traffic model replays every MAC iteration)
MODEL_MAX_WAVES = 3
# Nor above this many MAC iterations of auto's Schedule, so that a shape's first call stays cheap: the
# 16 shapes the model overruled on seed 4254 held at most 10,944; pricing the candidates of deeper
# ones took 15-131 ms of decide() (aligned seed 4253's p90 to max), against 0.2-0.7 ms for the rules
MODEL_MAX_ITERS = 12_000
# auto's sm80 fallback tiles, and what the model may run in their place (data-parallel, MODEL_MARGIN): on
# fidelity seed 4333 (the derivation) 2 shapes moved, both faster (972x416x1872 1.161 -> 1.000 the best);
# margins 0-0.12 scored alike (94.0%), fixed-split and the 64x192x64 / 64x256x64 tiles added nothing. Held out:
# seed 4340 92.0 -> 93.5% within 5% (worst 1.281 -> 1.237), 4285 93.0 -> 93.5% (LOG.md v88). Only where the
# oracles measured it (as launches.one_wave_m64): rows the candidates' kernel reads in place (every oracle
# shape's n and k are multiples of 8) and no decode-like side (theirs are 130 and up). The pick runs the
# kernel's grouped order in pairs, as auto's own 64x128x64 launches, which ran 0.91-0.92x the time of the
# row-major rows it is scored by (geomean, 18-25 shapes a seed)
FALLBACK_TILES = (SMALL_TILE, *TINY_TILES)
FALLBACK_CANDIDATES = ((SM90_M64_TILE, "data-parallel"),)
# Decode-like shapes on a row-major A and B (Target.row_major_decode, n and k multiples of 8, as measured):
# auto's launch against data-parallel on each tile the decode oracles timed, by DECODE_MARGIN. Decode fidelity
# seeds 4362 / 4363 (the derivation, with v95's sm80 terms): every model pick past 0.3-0.4 was data-parallel;
# auto within 5% of the best 84.5 -> 85.0% / 77.0 -> 78.5%, the 8 shapes moved all faster (0.50-0.78x), all
# tall (n <= 40) launches of auto's 64x128x64; at 0.25 six 64x64x32 shapes moved to 32x32x32, 1.03-1.12x slower
# (LOG.md v95)
DECODE_CANDIDATES = tuple((t, "data-parallel") for t in (SMALL_TILE, *TINY_TILES, SM90_M64_TILE, SM90_M64_WIDE_TILE,
                                                          SM90_TILE))
DECODE_MARGIN = 0.35
# ... and DECODE_REDUCE_MARGIN over auto's separate-reduce launches there (its dot and small tiles'), which the
# guard below keeps elsewhere: at 0.35 the picks of 16 fresh decode shapes ran 1.12x faster but lost up to 0.73x,
# and every loss had been predicted 39-48% faster; at 0.5 (chosen there) the 12 picks of fresh decode seeds
# 4419-4426 ran 1.21x faster, 11 of 12 (3025x16x1304 0.86x: 64x64x32 to 32x32x32; LOG.md v109, v110). Not
# over the transposed dot tile's (at most 8 rows), held to DECODE_MARGIN: its picks moved 5 of the 1,200 shapes of
# decode seeds 4362-4364, 4373, 4411 and 4451, each from 1.05-1.72x the best to within 5% of it, and no other
# (their measured rows, oracle_auto.py; LOG.md v117)
DECODE_REDUCE_MARGIN = 0.5


def model_tiles() -> tuple[TileShape, ...]:
    """The sm90 large-GEMM tiles the model picks among: the square, 128x192 and wide tiles."""
    square, wide = LARGE_RUNGS["sm90"]
    return square, SM90_192_TILE, wide


def model_candidates(shape: GemmShape, dtype: str, tile: TileShape, decode: bool = False
                     ) -> tuple[tuple[TileShape, str], ...]:
    """(tile, decomposition) the model prices against auto's Schedule of ``shape`` on ``tile``: on a
    decode-like shape the decode oracles measured (``decode``: row-major A and B on a Target that
    measured them) DECODE_CANDIDATES; every MODEL_CANDIDATES on every model tile where ``tile`` is one,
    FALLBACK_CANDIDATES where it is an sm80 fallback on a shape like the oracles' (above), none elsewhere."""
    if decode and decode_like(shape.m, shape.n) and shape.n % 8 == 0 and shape.k % 8 == 0 and \
            not any(packed_bytes(shape, dtype, t) for t, _ in DECODE_CANDIDATES):
        return DECODE_CANDIDATES
    if tile in model_tiles():
        return tuple((t, name) for t in model_tiles() for name in MODEL_CANDIDATES)
    if tile not in FALLBACK_TILES or decode_like(shape.m, shape.n) or \
            any(packed_bytes(shape, dtype, t) for t, _ in FALLBACK_CANDIDATES):
        return ()
    return FALLBACK_CANDIDATES


def is_persistent(s: Schedule) -> bool:
    """Whether ``s`` runs more tiles than CTAs, every unit a whole tile (a persistent grid)."""
    ipt = s.problem.iters_per_tile
    return s.grid < s.problem.tiles and bool((s.units[:, 1] == 0).all() and (s.units[:, 2] == ipt).all())


def pick_margin(name: str, auto: Schedule, decode: bool) -> float:
    """How much faster than ``auto`` the model must predict a ``name`` candidate to run it (rules above;
    ``decode``: the candidates are DECODE_CANDIDATES)."""
    if name == "fixed-split":
        return MODEL_SPLIT_MARGIN
    if not decode:
        return MODEL_MARGIN
    return DECODE_REDUCE_MARGIN if auto.fixup == "separate-reduce" and auto.tile != DOT_T_TILE else DECODE_MARGIN


def model_pick(shape: GemmShape, dtype: str, target: Target, auto: Schedule, row_major: bool = False,
               b_row_bytes: int | None = None) -> Schedule:
    """``auto`` (auto's Schedule of ``shape`` on its own tile), or the fastest predicted of its
    ``model_candidates`` that the calibrated model predicts faster by their margin (rules above;
    ``row_major``: the kernels read A and B row-major, as the decode oracles ran; ``b_row_bytes``:
    the bytes between B's rows as the kernels read them, None: a contiguous row-major B)."""
    from ...calibrate.candidates import predicted
    from ...sched import make_schedule

    candidates = model_candidates(shape, dtype, auto.tile, row_major and target.row_major_decode)
    if (not target.model_picks or not candidates or is_persistent(auto)
            or (auto.fixup == "separate-reduce" and candidates is not DECODE_CANDIDATES)
            or auto.problem.tiles > MODEL_MAX_WAVES * target.sms or auto.problem.total_iters > MODEL_MAX_ITERS
            or not all(t in target.tiles_for(dtype) for t, _ in candidates)):
        return auto
    auto_us = predicted(auto, dtype, target, b_row_bytes=b_row_bytes)
    if auto_us is None:
        return auto
    best, best_us = auto, math.inf
    for tile, name in candidates:
        machine, problem = target.machine(dtype, tile), Problem(shape, tile)
        if name == "fixed-split" and problem.tiles >= target.sms:
            continue  # split tiles only below a wave (every fixed-split pick was; its event simulation is the cost)
        order = target.kernel(dtype, tile).order_for(problem, machine.slots)  # the kernel's, as auto's launches
        cand = make_schedule(name, shape, tile, machine, **({} if order is None else {"tile_order": order}))
        us = predicted(cand, dtype, target, b_row_bytes=b_row_bytes)
        margin = pick_margin(name, auto, candidates is DECODE_CANDIDATES)
        if us is not None and us * (1 + margin) < auto_us and us < best_us:
            best, best_us = cand, us
    return best
