"""Where the calibrated model overrules auto's rules (issue 43): auto's Schedule against a few
candidates, each priced by the Target's calibrated simulator; auto runs the cheapest where the model
says it saves more than a margin (the constants below):
* on the sm90 large-GEMM tiles: data-parallel and two-way fixed-split on each of those tiles;
* where auto's rules fall back to an sm80 tile (64x64x32 and smaller): data-parallel on the sm90
  64x128x64 tile alone (FALLBACK_CANDIDATES);
* on decode-like shapes whose A and B the kernels read row-major (as the decode oracles ran):
  data-parallel on each tile those oracles timed (DECODE_CANDIDATES).

Only on a Target whose ``model_picks`` holds (the h200 preset: no other GPU has been measured for
it). Where the model is measured to be blind, auto's rules stand (benchmarks/LOG.md v47):
* other candidates over an sm80 fallback: they were mispriced there, and added nothing (LOG.md v76, v88);
* a persistent grid (one CTA per SM over more tiles): overruling it with these candidates lost (v47); the
  wide persistent launch of launches.persistent_quads may replace it where the model says so
  (wide_persistent_pick, LOG.md v126);
* Stream-K under separate-reduce off decode shapes: the model prices it well over its time, and its
  picks there ran slower (LOG.md v61, v72). On decode-like shapes such launches are priced within 5%
  (v105) and give way past DECODE_REDUCE_MARGIN (v110).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from ...schedule import Schedule
from ...shapes import GemmShape, Problem, TileShape
from ...target import Target
from ..catalogue import (DOT_T_TILE, LARGE_RUNGS, SM90_192_TILE, SM90_M64_TILE, SM90_M64_WIDE_TILE, SM90_TILE,
                         SMALL_TILE, TINY_TILES)
from .operands import decode_like
from .tiles import packed_bytes

# A candidate must be predicted this much faster than auto's Schedule to replace it: auto's own
# data-parallel (grouped order, clusters) runs 4-6% faster than the same launch row-major, which the
# model does not price (LOG.md v47).
MODEL_MARGIN = 0.06
# A fixed-split candidate must be predicted this much faster: the model prices auto's launches below a
# wave too slow there, and its fixed-split picks past smaller margins ran slower (LOG.md v56, v61).
MODEL_SPLIT_MARGIN = 0.12
# The candidates: the decompositions whose predictions were closest; every other one lost (LOG.md v47)
MODEL_CANDIDATES = ("data-parallel", "fixed-split")
# Above this many waves of auto's tiles the model is not asked: it overruled nothing there, and pricing
# deep launches costs up to a second a shape (the DRAM traffic model replays every MAC iteration)
MODEL_MAX_WAVES = 3
# Nor above this many MAC iterations of auto's Schedule, so that a shape's first call stays cheap: pricing
# the candidates of deeper ones took 15-131 ms of decide(), against 0.2-0.7 ms by the rules (LOG.md v47)
MODEL_MAX_ITERS = 12_000
# auto's sm80 fallback tiles, and what the model may run in their place (data-parallel, MODEL_MARGIN;
# LOG.md v88): only where the oracles measured it, on rows the candidate reads in place and off
# decode-like shapes. The pick runs the kernel's grouped order in pairs, as auto's own 64x128x64 launches.
FALLBACK_TILES = (SMALL_TILE, *TINY_TILES)
FALLBACK_CANDIDATES = ((SM90_M64_TILE, "data-parallel"),)
# Decode-like shapes on a row-major A and B (Target.row_major_decode, n and k multiples of 8, as measured):
# auto's launch against data-parallel on each tile the decode oracles timed, by DECODE_MARGIN (past
# smaller margins the picks moved to slower tiles; LOG.md v95)
DECODE_CANDIDATES = tuple((t, "data-parallel") for t in (SMALL_TILE, *TINY_TILES, SM90_M64_TILE, SM90_M64_WIDE_TILE,
                                                          SM90_TILE))
DECODE_MARGIN = 0.35
# ... and DECODE_REDUCE_MARGIN over auto's separate-reduce launches there (its dot and small tiles'): at
# DECODE_MARGIN every pick that lost had been predicted 39-48% faster (LOG.md v109, v110). The transposed
# dot tile's launches take DECODE_MARGIN: their picks ran faster by their measured rows (LOG.md v117, v119).
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
               b_row_bytes: int | None = None, launched: Schedule | None = None) -> Schedule:
    """``auto`` (auto's Schedule of ``shape`` on its own tile), or the fastest predicted of its
    ``model_candidates`` that the calibrated model predicts faster by their margin (rules above;
    ``row_major``: the kernels read A and B row-major, as the decode oracles ran; ``b_row_bytes``:
    the bytes between B's rows as the kernels read them, None: a contiguous row-major B). ``auto`` is
    priced as ``launched`` where given: the same units in the tile order its launch runs them in (its
    2x2 clusters share A and B, which the model prices; schedule.clusters_order)."""
    from ...calibrate.candidates import predicted
    from ...sched import make_schedule

    candidates = model_candidates(shape, dtype, auto.tile, row_major and target.row_major_decode)
    if (not target.model_picks or not candidates or is_persistent(auto)
            or (auto.fixup == "separate-reduce" and candidates is not DECODE_CANDIDATES)
            or auto.problem.tiles > MODEL_MAX_WAVES * target.sms or auto.problem.total_iters > MODEL_MAX_ITERS
            or not all(t in target.tiles_for(dtype) for t, _ in candidates)):
        return auto
    auto_us = predicted(launched or auto, dtype, target, b_row_bytes=b_row_bytes)
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


# The wide persistent launch's shortest tiles where the model may pick it: at 4-5 MAC iterations it ran
# 0.93-1.04x auto's time where predicted 1.07-1.21x faster, from 6 on 1.04-1.22x (LOG.md v126): its
# 128x256 tiles' C leaves through the shared epilogue, whose share of a short tile the model underprices
WIDE_PERSISTENT_MIN_ITERS = 6


def wide_persistent_pick(dtype: str, target: Target, auto: Schedule, wide: Schedule,
                         b_row_bytes: int | None = None) -> bool:
    """Whether auto runs ``wide`` (whole 128x256x64 tiles on persistent CTAs in QUAD_ORDER, where
    launches.persistent_quads_fit holds but its wave and fill guards do not) in place of ``auto``: where
    the model predicts it MODEL_MARGIN faster. Those guards were set on shapes where it lost by the waves'
    quantization, which the model prices; where auto's own 128x128x64 grid runs a longer tail it won (41 fresh
    shapes of 6-32 MAC iterations a tile: 40 faster, 1.13x geomean; LOG.md v126). A smaller margin won against
    the cooperative 128x128x64 kernel (v129), not against its ping-pong successor (v130)."""
    if not target.model_picks or auto.problem.total_iters > MODEL_MAX_ITERS:
        return False
    return predicted_faster(dtype, target, auto, wide, b_row_bytes)


def narrow_pick(dtype: str, target: Target, auto: Schedule, narrow: Schedule, b_row_bytes: int | None = None) -> bool:
    """Whether auto runs ``narrow`` (its own launch on the 64x128x64 tile, in the clusters it launches in)
    in place of ``auto`` (its launch on a model tile, likewise): where the model predicts it MODEL_MARGIN
    faster. On seed 4870's worst 128x128x64 shapes, 64x128x64 in 2x2 clusters (launches.auto_quads) ran
    1.09x auto's time, and the model's argmin was within 2% of the best (LOG.md v163)."""
    if (not target.model_picks or auto.problem.total_iters > MODEL_MAX_ITERS or is_persistent(auto)
            or auto.fixup == "separate-reduce"):
        return False  # where model_pick is blind too (above)
    return predicted_faster(dtype, target, auto, narrow, b_row_bytes)


def predicted_faster(dtype: str, target: Target, auto: Schedule, other: Schedule, b_row_bytes: int | None) -> bool:
    """Whether the calibrated model predicts ``other`` MODEL_MARGIN faster than ``auto`` (both priced)."""
    from ...calibrate.candidates import predicted

    auto_us = predicted(auto, dtype, target, b_row_bytes=b_row_bytes)
    other_us = predicted(other, dtype, target, b_row_bytes=b_row_bytes)
    return auto_us is not None and other_us is not None and other_us * (1 + MODEL_MARGIN) < auto_us


def paired_pick(dtype: str, target: Target, auto: Schedule, paired: Sequence[Schedule],
                b_row_bytes: int | None = None) -> Schedule:
    """``auto`` (auto's final Schedule, where its own tile was a model tile), or the fastest predicted
    of ``paired`` (auto's aligned splits on other tiles in twin pairs that share B, schedule.paired_auto)
    where the model predicts it MODEL_SPLIT_MARGIN faster (LOG.md v154)."""
    from ...calibrate.candidates import predicted

    if (not paired or not target.model_picks or is_persistent(auto) or auto.fixup == "separate-reduce"
            or auto.problem.total_iters > MODEL_MAX_ITERS):
        return auto
    auto_us = predicted(auto, dtype, target, b_row_bytes=b_row_bytes)
    if auto_us is None:
        return auto
    best, best_us = auto, auto_us / (1 + MODEL_SPLIT_MARGIN)
    for cand in paired:
        us = predicted(cand, dtype, target, b_row_bytes=b_row_bytes)
        if us is not None and us < best_us:
            best, best_us = cand, us
    return best
