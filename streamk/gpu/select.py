"""What runs for a GEMM: the tile ``auto`` takes, auto's measured model constants, the schedule,
how many reduce blocks a split tile gets, and when kernels use programmatic dependent launch.

Each rule carries the measurement it rests on (benchmarks/LOG.md has the history).
"""

from __future__ import annotations

from typing import Any, Callable

from ..costs import Costs
from ..errors import ScheduleError
from ..schedule import Schedule
from ..sched import make_schedule
from ..shapes import GemmShape, TileShape
from .operands import RECT_SPECS, SMALL_SPECS, TINY_SPECS, WIDE_SPECS, KernelSpec, tile_specs

# Programmatic dependent launch between one GEMM's kernels (pack -> main -> separate-reduce): by
# default only where the main grid is at most one CTA per SM. H100, 400 shapes, one call (LOG.md
# v13): such launches 1.046x faster geomean with it (208 shapes; worst 0.962x), larger grids
# 1.006-1.009x but down to 0.87x on some big packed GEMMs (main-kernel CTAs placed while the pack
# pass still ran).
def use_pdl(pdl: bool | None, main_grid: int, sms: int, arch: str) -> bool:
    """Whether this launch's kernels after the first use programmatic dependent launch."""
    if int("".join(ch for ch in arch if ch.isdigit())) < 90:
        return False  # griddepcontrol is sm_90's
    return main_grid <= sms if pdl is None else pdl


REDUCE_MAX_VECS = 4  # fixup.cuh: accumulator vectors per thread of one reduce block


def reduce_slices(items: int, spec: KernelSpec, threads: int, sms: int) -> int:
    """Blocks per split tile of the separate-reduce pass: enough for two blocks per SM where the
    split tiles are few (one block per tile read its slots at ~1.3 us per 64 KB, LOG.md v10), a
    power of two dividing the tile's 16-byte vectors per thread, with at most REDUCE_MAX_VECS of
    them per block (fixup.cuh reduce_slice)."""
    acc_bytes = 4 if spec.out_dtype == "float32" else 8
    vecs = spec.tile.bm * spec.tile.bn * acc_bytes // (16 * threads)
    slices = max(1, vecs // REDUCE_MAX_VECS)
    while slices < vecs and items * slices < 2 * sms:
        slices *= 2
    return slices


# auto's model constants as measured for our kernels on a GPU family and tile (a, b, c, d in MAC
# iterations), used when the caller passes none; others get streamk.costs.AUTO_COSTS (the
# paper's A100 Figure 8 region). sm_90a (H100, FP16/BF16 128x128x32): b = 16 chosen from b in
# {32, 16, 8, 5} and d in {8, 9.5} on the 400-shape sample, both halves alike: 1.074 / 1.110
# geomean vs DP on shapes 0-199 / 200-399 against 1.064 / 1.092 with b = 32, and wherever it
# picked Stream-K it won (worst 1.011x, kernels of LOG.md v10b; 0.957x on v10c's faster DP); b = 8
# gains a little more on average but loses to 0.888x near one tile per SM. b + d = 24 stays inside
# Figure 8's region. The smaller tiles (in their own MAC iterations) take the same: for 64x64, b = 8,
# d = 4 and b = 32, d = 8 (with reduce b = 12 and 48) both measured worse on the 131 shapes auto
# runs it on (0.995x and 0.979x geomean, worst 0.82x and 0.68x; LOG.md v13).
_HALF_TILES = tuple(tile_specs("float16"))  # every FP16/BF16 tile: 128x128x32 and the smaller ones
# The 128x256 tile (one CTA per SM, so auto weighs two-tile SK + DP against DP there) takes b = 48:
# on the 114 shapes of three corpus seeds that run it, b = 16 left 8 shapes under 0.95x of its DP
# (the forward two-tile hybrid near one to three waves), b = 48 two, at the same geomean (b = 96
# lost 5%); with the hybrid walked backwards, b = 48 left none under its DP on two seeds' shapes
# (offline from one call's timings; LOG.md v15).
MEASURED_AUTO_COSTS = {**{("sm_90a", t): Costs(a=32.0, b=16.0, c=1.0, d=8.0) for t in _HALF_TILES},
                       ("sm_90a", TileShape(128, 256, 32)): Costs(a=32.0, b=48.0, c=1.0, d=8.0),
                       ("sm_90a", TileShape(64, 64, 16)): Costs(a=32.0, b=16.0, c=1.0, d=8.0)}
# The same model's constants for the separate-reduce fixup, which auto weighs against owner-waits
# below a tile per SM (streamk.sched.auto): sm_90a (H100, FP16 128x128x32, sliced reduce pass)
# b = 24, d = 0.5 from b in {16, 20, 24, 28, 32, 40} x d in {0.5, 1, 2} on the 400-shape sample
# (benchmarks/LOG.md v11): 1.144 geomean vs DP, 1.221 mean, worst 0.952 (owner-waits alone: 1.081,
# 1.108, 0.952); b <= 20 also takes it on tiles split two ways, where it loses up to 0.73x.
# FP64 64x64x16 on sm_90a: OW (32, 16, 1, 8) with SR (32, 16, 1, 1), the best of four pairs on
# 120 shapes of seed 7 (1.255 geomean vs DP, against 1.186 for the paper's defaults without
# separate-reduce); on the default 120-shape sample it measured 1.204 against 1.120 (LOG.md v11).
MEASURED_REDUCE_COSTS = {**{("sm_90a", t): Costs(a=32.0, b=24.0, c=1.0, d=0.5) for t in _HALF_TILES},
                         ("sm_90a", TileShape(64, 64, 16)): Costs(a=32.0, b=16.0, c=1.0, d=1.0)}


# auto's tile, when the caller names none (FP16/BF16; FP64 runs the paper's 64x64x16 only), in the
# order choose_tile tries them:
# * where k is at most RECT_MAX_ITERS MAC iterations, 32x32 or else 32x64 where its tiles fit one
#   wave: a small GEMM's CTA spends ~0.6 us starting, runs a latency-bound mainloop and writes C at
#   ~20 GB/s from its SM, so a smaller tile on more SMs. H100, 400 shapes (LOG.md v14): 32x64
#   against auto on 64x64 1.05-1.08x where 32x64 tiles fit a wave (1.13-1.15x for k < 512), 0.81x
#   beyond it, 0.89-0.96x with longer k; 32x32 against 32x64 1.08-1.10x where 32x32 tiles fit a
#   wave (worst 0.99x), 0.84x beyond.
# * 64x64 where those tiles fit one wave on the SMs. A GEMM of few 128x128 tiles leaves most SMs
#   idle under DP, splits each tile many ways under Stream-K, and each tile's 64 KB of C (or of
#   partials) leaves one SM at ~25 GB/s (~2.5 us, LOG.md v10); 64x64 tiles give four times the
#   CTAs a quarter of that each. H100, 400 shapes (LOG.md v13): 1.50x geomean below 33 128x128
#   tiles; of the rules tried, "64x64 tiles <= SMs" lost least (worst 0.85x) for the most gain.
# * also 64x64, for k <= SMALL_WAVE_MAX_ITERS, where its tiles are more than two and at most
#   SMALL_PER_SM per SM: the 64x64 kernel keeps three CTAs per SM (sm80_f16_t64.cu), so they all
#   run at once and every SM holds two or three, where 128x128 tiles (66-99 of them) leave SMs idle
#   and the rectangles (133-198) load some SMs twice as much as others. H100, two calls, 400 shapes
#   (LOG.md v14): 1.060x and 1.064x on the 23 shapes with k <= 1024 against the rectangle or
#   128x128 auto took (worst 0.89x), 1.01-1.06x on 7 more up to k = 2048, but on seed 7 two shapes
#   with k ~1800 lost (0.86x, 0.94x against our 128x128 DP); with one or two per SM the rectangles
#   won (0.90x), beyond k = 2048 128x128 did (0.83x).
# * else 128x64 or 64x128 (the fewer tiles; a tie: 64x128) where 128x128 tiles leave SMs idle
#   and k is at most RECT_MAX_ITERS MAC iterations: such GEMMs ran DP on 128x128 tiles
#   (Stream-K's fixup not worth it for short k) on under a wave of SMs. H100 (LOG.md v13): with
#   one rectangle per SM, 38 of 400 shapes, every one faster (1.41x geomean on them; 12 of 200
#   of seed 7, 1.40x); with longer k, Stream-K on 128x128 tiles won on some (down to 0.58x).
#   Two rectangles per SM (DP at two CTAs per SM) only where the rectangle's kernel reads both
#   operands 16 bytes wide (aligned or packed): 30 shapes 1.08x (worst 0.95x); where it would
#   read one with 8- or 4-byte copies, 17 shapes lost down to 0.82x against 128x128 tiles.
# * 128x256 where those tiles fill at least one wave and k is at least WIDE_MIN_ITERS MAC iterations:
#   8 warps of 64x64 at one CTA per SM bring a quarter fewer global->shared bytes and copy
#   instructions per mma than two 128x128 CTAs, and large GEMMs run the H100 into its 700 W cap
#   (SM clock 1980 -> 1300-1650 MHz), where the fewer bytes and instructions per mma pay. H100
#   (LOG.md v15), each alone after a 1 s pause: 8192^3 450 TFLOP/s against 391 for auto on
#   128x128 tiles, 5120^3 442 / 401, 4096^3 433 / 409; on the 400 shapes, auto on 128x256 against
#   auto on the tile it took before: 1.083x geomean on the 50 shapes this rule takes (worst
#   0.898x), 0.97-1.01x with k < 1024 there, far slower below a wave; with its two-tile hybrid
#   walked backwards (resolve_schedule) a further 1.02-1.03x on two seeds' shapes of this rule.
# * else the paper's 128x128.
RECT_MAX_ITERS = 64
WIDE_MIN_ITERS = 32
SMALL_PER_SM = 3
SMALL_WAVE_MAX_ITERS = 32


def choose_tile(shape: GemmShape, dtype: str, sms: int,
                narrow_copies: Callable[[KernelSpec], bool] = lambda spec: False,
                fits: Callable[[KernelSpec], bool] = lambda spec: True) -> TileShape:
    """The tile ``schedule="auto"`` runs when the caller names none; ``narrow_copies(spec)``: whether
    that kernel would read an operand with 8- or 4-byte copies; ``fits(spec)``: whether the device
    can hold a block of the 128x256 kernels (150 KB of shared memory; asked only where that tile
    would be taken)."""
    default = next(iter(tile_specs(dtype)))
    if dtype not in SMALL_SPECS:
        return default

    def count(t: TileShape) -> int:
        return -(-shape.m // t.bm) * -(-shape.n // t.bn)

    iters = -(-shape.k // default.bk)  # MAC iterations of a tile
    short = iters <= RECT_MAX_ITERS
    if short:
        for spec in sorted(TINY_SPECS[dtype], key=lambda s: s.tile.bm * s.tile.bn):
            if count(spec.tile) <= sms:
                return spec.tile
    small = SMALL_SPECS[dtype].tile
    balanced = iters <= SMALL_WAVE_MAX_ITERS and 2 * sms < count(small) <= SMALL_PER_SM * sms
    if count(small) <= sms or balanced:
        return small
    if count(default) < sms and short:
        rects = sorted(RECT_SPECS[dtype], key=lambda s: (count(s.tile), s.tile.bm))  # a tie: 64x128
        for spec in rects:
            if count(spec.tile) <= sms or (count(spec.tile) <= 2 * sms and not narrow_copies(spec)):
                return spec.tile
    wide = WIDE_SPECS[dtype].tile
    if iters >= WIDE_MIN_ITERS and count(wide) >= sms and fits(WIDE_SPECS[dtype]):
        return wide
    return default


def resolve_schedule(schedule: str | Schedule, shape: GemmShape, spec: KernelSpec, machine_fn,
                     fixup: str | None, options: dict[str, Any], arch: str = "") -> Schedule:
    """A Schedule for this shape and the kernel's tile: built by name, or checked if given."""
    if isinstance(schedule, Schedule):
        if schedule.shape != shape:
            raise ScheduleError(f"the schedule is for {schedule.shape}, the operands are {shape}")
        if schedule.tile != spec.tile:
            raise ScheduleError(f"the schedule's tile is {schedule.tile}; this kernel runs {spec.tile} tiles")
        return schedule if fixup is None or fixup == schedule.fixup else schedule.with_fixup(fixup)
    if not isinstance(schedule, str):
        raise ScheduleError(f"schedule must be a name or a Schedule (got {type(schedule).__name__})")
    if schedule == "auto":  # measured constants fill in what the caller did not give
        measured = MEASURED_AUTO_COSTS.get((arch, spec.tile))
        if options.get("model_costs") is None and measured is not None:
            options = {**options, "model_costs": measured}
        reduce = MEASURED_REDUCE_COSTS.get((arch, spec.tile))
        if options.get("reduce_costs") is None and fixup is None and reduce is not None:
            options = {**options, "reduce_costs": reduce}
        # a wave or more of tiles at one CTA per SM (the 128x256 tile): the SK CTAs of the two-tile
        # hybrid walk backwards under turnstile (streamk.sched.auto), unless a policy is given
        if fixup is None and "sk_backward" not in options:
            options = {**options, "sk_backward": True}
    return make_schedule(schedule, shape, spec.tile, machine_fn(), fixup=fixup, **options)
