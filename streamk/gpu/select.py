"""What runs for a GEMM on a Target: the tile ``auto`` takes, the schedule (``schedule_for``, which
``streamk schedule --target`` prints too), how many reduce blocks a split tile gets, and when
kernels use programmatic dependent launch or clusters.

Each rule carries the measurement it rests on (benchmarks/LOG.md has the history).
"""

from __future__ import annotations

from typing import Any, Callable

from ..errors import ScheduleError
from ..schedule import Schedule
from ..sched import make_schedule
from ..shapes import ITEMSIZE, GemmShape, Machine, Problem, TileShape
from ..target import DOT_T_TILE, DOT_TILE, LARGE_RUNGS, Target
from .kernel_registry import SHIFTED_TILES
from .operands import (RECT_TILES, SMALL_TILE, TINY_TILES, KernelSpec, Operand, copy_widths, decode_like,
                       spec_for_tile)

# Programmatic dependent launch between one GEMM's kernels (pack -> main -> separate-reduce): by
# default only where the main grid is at most one CTA per SM. H100, 400 shapes, one call (LOG.md
# v13): such launches 1.046x faster geomean with it (208 shapes; worst 0.962x), larger grids
# 1.006-1.009x but down to 0.87x on some big packed GEMMs (main-kernel CTAs placed while the pack
# pass still ran).
def use_pdl(pdl: bool | None, main_grid: int, sms: int, arch: str, *, behind_pack: bool = True) -> bool:
    """Whether a kernel of this launch after the first uses programmatic dependent launch. Behind
    the pack pass, by default only where the main grid fits one CTA per SM: main-kernel CTAs placed
    while a large multi-wave pack still ran cost up to 1.15x (LOG.md v13). Behind the main kernel
    (the reduce pass) or the one-wave atomic prescale, every grid: nothing waits to be placed."""
    if int("".join(ch for ch in arch if ch.isdigit())) < 90:
        return False  # griddepcontrol is sm_90's
    if pdl is not None:
        return pdl
    return main_grid <= sms or not behind_pack


# sm90 clusters of two CTAs sharing B by TMA multicast (clusters.py) on the tile whose mainloop asks the
# most of the L2 (128x128x64: 32 KB a CTA per 0.38 us MAC iteration; 128x256x64: 48 KB per 0.69 us).
# H100, auto vs auto without clusters, corpus shapes of each tile (LOG.md v26): 128x128x64 1.015x,
# 1.015x (seed 20260121, twice) and 1.017x (seed 7); 128x256x64 1.000x, 1.005x, 0.996x and 8192^3
# 0.98x: no gain, so no clusters there.
MULTICAST_TILES = (TileShape(128, 128, 64),)


def use_multicast(multicast: bool, spec: KernelSpec) -> bool:
    """Whether launches of ``spec``'s main kernel run in clusters that share B where the table pairs CTAs."""
    return multicast and spec.tma and spec.tile in MULTICAST_TILES


REDUCE_MAX_VECS = 4  # fixup.cuh: accumulator vectors per thread of one reduce block


def reduce_slices(items: int, spec: KernelSpec, threads: int, sms: int) -> int:
    """Blocks per split tile of the separate-reduce pass: enough for two blocks per SM where the
    split tiles are few (one block per tile read its slots at ~1.3 us per 64 KB, LOG.md v10), a
    power of two dividing the tile's 16-byte vectors per thread, with at most REDUCE_MAX_VECS of
    them per block (fixup.cuh reduce_slice)."""
    acc_bytes = ITEMSIZE[spec.out_dtype]
    vecs = spec.tile.bm * spec.tile.bn * acc_bytes // (16 * threads)
    slices = max(1, vecs // REDUCE_MAX_VECS)
    while slices < vecs and items * slices < 2 * sms:
        slices *= 2
    return slices


# auto's tile where the caller names none (FP16/BF16; FP64 has the paper's 64x64x16 only), the first
# rule that holds; each won on H100 corpus samples (benchmarks/LOG.md v13-v15, v21 give the figures):
# * at most 8 columns, and deeper than DOT_SHALLOW_ITERS of its MAC iterations or an A of
#   DOT_MIN_A_BYTES or more: the 64x8x128 tile (kernels/sm80/dot.cuh), which reads A in place at any
#   alignment; on shallower small GEMMs its split and reduce pass cost more than they gain, where the
#   rules below ran them faster (H200, 96 decode shapes of two seeds: 0.948x cuBLAS raw under the 4 MB
#   rule alone, 1.000x under this one; on every deeper shape 0.986x, every shape from 1 MB of A 0.981x;
#   LOG.md v31);
# * at most 8 rows and a B of DOT_T_MIN_B_BYTES or more: the 8x128x64 tile (the same mainloop on the
#   transposed problem), which reads B in place at any alignment; below that the rules below ran
#   them faster (H200, 206 decode shapes of at most 8 rows, four seeds: 0.988x cuBLAS raw before,
#   1.046x with it from 12 MB of B, 1.024 / 1.037 / 1.040x from 4 / 8 / 16 MB; LOG.md v31);
# * decode-like GEMMs (operands.decode_like) whose contiguous operands would be packed by the MB
#   (operands.copy_widths): the tiles with shifted copies, which read them in place: 32x64 under the
#   rule for 32-row tiles below, else the rectangle along the long side (128x64 on a tall GEMM,
#   64x128 on a wide one: a stage brings twice the large operand's bytes for one shift pass and
#   barrier; 1.10x / 1.07x the speed of 64x64 on the 43 decode shapes that read in place, LOG.md v21);
# * other decode-like GEMMs deeper than RECT_MAX_ITERS: 32x32, else 32x64, where its tiles number at
#   most DECODE_TINY_MOST (a quarter wave), else the rectangle along the long side where its tiles fit
#   a wave (64x64 took them before: 1.005 / 0.967x cuBLAS raw against 0.985 / 0.952 on two seeds of
#   200 decode shapes, each tile's time measured; LOG.md v28);
# * k <= RECT_MAX_ITERS MAC iterations: 32x32, else 32x64, where its tiles fit one wave (a small
#   GEMM's CTA is latency-bound and writes C at ~20 GB/s from one SM: more, smaller CTAs win);
# * 64x64 where its tiles fit one wave, or, for k <= SMALL_WAVE_MAX_ITERS, 2-3 of them per SM
#   (its kernel keeps 3 CTAs per SM, so all run at once);
# * k <= RECT_MAX_ITERS and under a wave of 128x128 tiles: 128x64 or 64x128 (the fewer tiles; a
#   tie: 64x128), one per SM, or two where contiguous operands are read 16 bytes wide (8- or 4-byte
#   copies lost there, down to 0.82x);
# * 128x256 (one CTA per SM, a quarter fewer copy instructions per mma, which pays when large GEMMs
#   hold the H100 at its 700 W cap) where its tiles fill a wave and k >= WIDE_MIN_ITERS iterations;
# * else the paper's 128x128.
# The last two rungs take the tiles of the Target's ``large_rungs`` family (Target.large_tiles):
# 128x256x32 and 128x128x32 of the sm80 kernels, or 128x256x64 and 128x128x64 of the sm90 TMA +
# wgmma ones (the same thresholds, measured on the sm80 tiles; iterations counted 32 deep). The h100
# and h200 presets take sm90 (``sm90_rungs``): TMA needs 16-byte rows, so the sm90 path packs every
# other operand, and it keeps the sm80 tiles only where they would read rows of 8 or 4 bytes in place
# that the sm90 path would pack at more than a byte per SM90_PACK_FLOPS_PER_BYTE flops. Where the
# sm90 rungs hold they also come before the small tiles from half a wave of 128x128 tiles on, but
# on decode-like GEMMs. H100, 400 shapes (LOG.md v27), the sm90 tiles with their pack against the
# sm80 tiles auto took before: 1.21x on the 64 of 128x128x32 (0.65x where the pack cost 1.5x the
# math), k of 131-256 included; 1.06-1.20x on 64x64, 64x128 and 128x64 from half a wave on, less
# below; 0.69-0.88x on decode-like GEMMs. And between one and two waves of 128x128x64 tiles the sm90
# rungs take 128x256x64 at any k, a wave or less: 1.10-1.21x faster on 124 of 137 such shapes of
# three seeds (LOG.md v27b); from two waves on 128x128x64 stays (0.80-0.90x). The whole rule against
# the one before: 1.063-1.071x on those three seeds, 1.075x on a fourth (worst 0.83x), BF16 1.063x.
SM90_PACK_FLOPS_PER_BYTE = 300
DOT_MIN_A_BYTES = 4 << 20
DOT_SHALLOW_ITERS = 3
DOT_T_MIN_B_BYTES = 12 << 20
DECODE_TINY_MOST = 33
RECT_MAX_ITERS = 64
WIDE_MIN_ITERS = 32
SMALL_PER_SM = 3
SMALL_WAVE_MAX_ITERS = 32


def contiguous_narrow(shape: GemmShape, dtype: str) -> Callable[[TileShape], bool]:
    """Whether a tile's kernel would read contiguous row-major operands of ``shape`` (A m x k, B
    k x n, 16-byte-aligned bases) with copies narrower than 16 bytes (operands.copy_widths). auto
    assumes such operands whatever the caller passes, so its choice is a function of (shape, dtype,
    Target)."""
    return lambda tile: any(0 < w < 16 for w in contiguous_widths(shape, dtype, tile))


def contiguous_shifted(shape: GemmShape, dtype: str, tile: TileShape) -> bool:
    """Whether ``tile``'s kernel would read contiguous operands of ``shape`` (as contiguous_narrow)
    in place with shifted copies of 2-byte-aligned rows."""
    return 2 in contiguous_widths(shape, dtype, tile)


def packed_bytes(shape: GemmShape, dtype: str, tile: TileShape) -> int:
    """Bytes of contiguous row-major A and B (as contiguous_narrow) that ``tile``'s kernel packs
    before its main kernel: what the calibrated simulator prices the pack pass by."""
    wa, wb = contiguous_widths(shape, dtype, tile)
    return ((shape.m * shape.k if wa == 0 else 0) + (shape.k * shape.n if wb == 0 else 0)) * ITEMSIZE[dtype]


def contiguous_widths(shape: GemmShape, dtype: str, tile: TileShape) -> tuple[int, int]:
    """The copy widths ``tile``'s kernel reads contiguous row-major operands of ``shape`` with."""
    a = Operand(None, "cuda", 0, (shape.m, shape.k), (shape.k, 1), dtype)
    b = Operand(None, "cuda", 0, (shape.k, shape.n), (shape.n, 1), dtype)
    return copy_widths(a, b, spec_for_tile(dtype, tile))


def choose_tile(shape: GemmShape, dtype: str, target: Target) -> TileShape:
    """The tile ``schedule="auto"`` runs on ``target`` when the caller names none (rules above)."""
    tiles = target.tiles_for(dtype)
    default = tiles[0]
    if SMALL_TILE not in tiles:
        return default
    sms = target.sms

    def count(t: TileShape) -> int:
        return -(-shape.m // t.bm) * -(-shape.n // t.bn)

    def smallest_tiny(most: int) -> TileShape | None:
        """The smallest 32-row tile of at most ``most`` tiles."""
        return next((t for t in sorted((t for t in TINY_TILES if t in tiles), key=lambda t: t.bm * t.bn)
                     if count(t) <= most), None)

    if shape.n <= DOT_TILE.bn and DOT_TILE in tiles and (
            shape.k > DOT_SHALLOW_ITERS * DOT_TILE.bk or shape.m * shape.k * ITEMSIZE[dtype] >= DOT_MIN_A_BYTES):
        return DOT_TILE
    if shape.m <= DOT_T_TILE.bm and DOT_T_TILE in tiles and shape.k * shape.n * ITEMSIZE[dtype] >= DOT_T_MIN_B_BYTES:
        return DOT_T_TILE
    iters = -(-shape.k // default.bk)  # MAC iterations of a tile
    short = iters <= RECT_MAX_ITERS
    along = RECT_TILES[0] if shape.m >= shape.n else RECT_TILES[1]  # 128x64 on a tall GEMM, 64x128 on a wide one
    if decode_like(shape.m, shape.n) and contiguous_shifted(shape, dtype, SMALL_TILE):
        # every tile with shifted copies reads these operands alike: only which tiles have them matters
        tiny = next((t for t in TINY_TILES if t in tiles and t in SHIFTED_TILES), None)
        if tiny is not None and short and count(tiny) <= sms:
            return tiny
        return along if along in tiles and along in SHIFTED_TILES else SMALL_TILE
    square, wide = target.large_tiles(dtype)
    sm80_square, sm80_wide = LARGE_RUNGS["sm80"]
    narrow = contiguous_narrow(shape, dtype)
    sm90 = square != sm80_square and sm90_rungs(shape, dtype, narrow(sm80_square))
    if not (sm90 and 2 * count(square) >= sms and not decode_like(shape.m, shape.n)):
        if decode_like(shape.m, shape.n) and not short:  # deep decode-like GEMMs: more, smaller CTAs
            if (tiny := smallest_tiny(DECODE_TINY_MOST)) is not None:
                return tiny
            if along in tiles and count(along) <= sms:
                return along
        if short and (tiny := smallest_tiny(sms)) is not None:
            return tiny
        balanced = iters <= SMALL_WAVE_MAX_ITERS and 2 * sms < count(SMALL_TILE) <= SMALL_PER_SM * sms
        if count(SMALL_TILE) <= sms or balanced:
            return SMALL_TILE
        if count(default) < sms and short:
            for tile in sorted((t for t in RECT_TILES if t in tiles), key=lambda t: (count(t), t.bm)):  # a tie: 64x128
                if count(tile) <= sms or (count(tile) <= 2 * sms and not narrow(tile)):
                    return tile
    if square != sm80_square and not sm90:
        square, wide = sm80_square, (sm80_wide if sm80_wide in tiles else None)
    if wide is not None and iters >= WIDE_MIN_ITERS and count(wide) >= sms:
        return wide
    if sm90 and wide is not None and count(wide) <= sms <= count(square) < 2 * sms:
        return wide  # one wave of the wide tile, where the square one would run a partial second
    return square


# What auto's orientation rule prices, in the time the pack takes per byte of a row-major source
# (H100, LOG.md v32-v33c: ~0.77 us/MB): a source the pack transposes (a column-major operand, read
# down its columns) ~2x that (~1.5 us/MB); a C whose rows are not contiguous (the transposed
# problem's view of a row-major C), written with 4-byte stores, about one per byte of C (v32b's fit
# on x @ W.t() at 128-8192 rows: 0.47 of a transposing pack byte).
TRANSPOSING_PACK_RATIO = 2.0
STRIDED_C_PACK_RATIO = 1.0


def _copy_cost(a: Operand, b: Operand, c: Operand, target: Target) -> float:
    """The bytes the pack pass copies for C = A @ B on the tile auto picks (a transposed source's at
    TRANSPOSING_PACK_RATIO), plus the price of writing C where its rows are not contiguous, in
    row-major pack bytes."""
    shape = GemmShape(a.shape[0], b.shape[1], a.shape[1])
    spec = spec_for_tile(a.dtype, choose_tile(shape, a.dtype, target))
    widths = copy_widths(a, b, spec)
    packed = sum(op.shape[0] * op.shape[1] * (1.0 if op.rows_contiguous else TRANSPOSING_PACK_RATIO)
                 for op, width in zip((a, b), widths) if width == 0) * spec.itemsize
    return packed + (0.0 if c.rows_contiguous else STRIDED_C_PACK_RATIO * shape.m * shape.n * ITEMSIZE[spec.out_dtype])


def runs_transposed(a: Operand, b: Operand, c: Operand | None, schedule: str | Schedule, tile: object,
                    target: Target) -> bool:
    """Whether auto runs C = A @ B as C^T = B^T @ A^T: where that copies fewer bytes, C's strided
    writes priced in (``c`` None: the row-major C auto allocates). Typically torch's Linear, x @
    W.t() with W row-major: the direct GEMM packs all of W (no kernel reads a column-major operand
    in place), the transposed one reads W's rows in place (at any alignment on the dot tiles of a
    GEMV, kernels/sm80/dot.cuh) and packs x, writing C down its columns. Only for ``auto`` with no
    tile asked (a tile or a named decomposition is the caller's problem as given)."""
    if a.on_host or tile is not None or not isinstance(schedule, str) or schedule != "auto":
        return False
    if c is None:
        c = Operand(None, a.kind, 0, (a.shape[0], b.shape[1]), (b.shape[1], 1), a.dtype)
    return _copy_cost(b.transposed(), a.transposed(), c.transposed(), target) < _copy_cost(a, b, c, target)


def in_place_tile(a: Operand, b: Operand, c: Operand | None, schedule: str | Schedule, tile: object,
                  target: Target) -> TileShape | None:
    """The sm90 square tile, where auto (no tile asked) would copy an operand, in either orientation,
    that the sm90 kernels read in place as given: column-major operands (torch's x @ W.t()) of GEMMs
    below auto's sm90 rungs, whose sm80 tiles pack them. Not on decode-like GEMMs (their small and dot
    tiles were measured against the pack). H100, x @ W.t() at 96 and 128 rows on the 4096-wide Llama
    layers (auto had taken 64x64 tiles with x^T packed, transposed): 1.54-2.03x faster (LOG.md v37)."""
    if a.on_host or tile is not None or not isinstance(schedule, str) or schedule != "auto":
        return None
    square, _ = target.large_tiles(a.dtype)
    spec = spec_for_tile(a.dtype, square)
    if not spec.tma or decode_like(a.shape[0], b.shape[1]) or copy_widths(a, b, spec) != (16, 16):
        return None
    if c is None:
        c = Operand(None, a.kind, 0, (a.shape[0], b.shape[1]), (b.shape[1], 1), a.dtype)
    if not c.rows_contiguous:
        return None
    cost = min(_copy_cost(a, b, c, target), _copy_cost(b.transposed(), a.transposed(), c.transposed(), target))
    return square if cost > 0 else None


def sm90_rungs(shape: GemmShape, dtype: str, sm80_in_place: bool) -> bool:
    """Whether auto's large rungs take the sm90 tiles for contiguous operands of ``shape``: yes,
    unless the sm80 tiles would read operands in place (``sm80_in_place``) that TMA needs packed and
    that pack would copy more than a byte per SM90_PACK_FLOPS_PER_BYTE flops of the GEMM."""
    if not sm80_in_place:
        return True
    item = ITEMSIZE[dtype]
    packed = sum(rows * cols * item for rows, cols in ((shape.m, shape.k), (shape.k, shape.n)) if (cols * item) % 16)
    return packed * SM90_PACK_FLOPS_PER_BYTE <= 2 * shape.m * shape.n * shape.k


def schedule_for(schedule: str | Schedule, shape: GemmShape, dtype: str, target: Target, *,
                 tile: TileShape | None = None, fixup: str | None = None, machine: Machine | None = None,
                 **options: Any) -> Schedule:
    """What ``streamk.gpu.gemm`` runs on ``target``: a named decomposition on ``tile`` (default:
    auto's choice for ``auto``, else the paper's tile) and that kernel's Machine, ``auto`` with the
    target's measured constants and the kernel's tile order where the caller gives none; or a given
    Schedule, checked against the shape and tile."""
    if isinstance(schedule, Schedule):
        if schedule.shape != shape:
            raise ScheduleError(f"the schedule is for {schedule.shape}, the operands are {shape}")
        if tile is not None and schedule.tile != tile:
            raise ScheduleError(f"the schedule's tile is {schedule.tile}; this kernel runs {tile} tiles")
        target.kernel(dtype, schedule.tile)
        return schedule if fixup is None or fixup == schedule.fixup else schedule.with_fixup(fixup)
    if not isinstance(schedule, str):
        raise ScheduleError(f"schedule must be a name or a Schedule (got {type(schedule).__name__})")
    if tile is None:
        tile = choose_tile(shape, dtype, target) if schedule == "auto" else target.tiles_for(dtype)[0]
    kernel = target.kernel(dtype, tile)
    if schedule == "auto":  # the target's measured constants fill in what the caller did not give
        if options.get("model_costs") is None and kernel.model_costs is not None:
            options["model_costs"] = kernel.model_costs
        machine = machine or target.machine(dtype, tile)
        if options.get("tile_order") is None:
            order = kernel.order_for(Problem(shape, tile), machine.slots)
            if order is not None:
                options["tile_order"] = order
        if options.get("persistent_upto") is None and kernel.persistent_upto is not None:
            options["persistent_upto"] = kernel.persistent_upto
        split_costs = kernel.split_costs()
        if options.get("split_costs") is None and split_costs is not None:
            options["split_costs"] = split_costs
            if options.get("split_busy_share") is None and kernel.split_busy_share is not None:
                options["split_busy_share"] = kernel.split_busy_share
            if options.get("split_wide_share") is None and kernel.split_wide_share is not None:
                options["split_wide_share"] = kernel.split_wide_share
        if options.get("hybrid_max_waves") is None and kernel.hybrid_max_waves is not None:
            options["hybrid_max_waves"] = kernel.hybrid_max_waves
        if options.get("hybrid_busy_share") is None and kernel.hybrid_busy_share is not None:
            options["hybrid_busy_share"] = kernel.hybrid_busy_share
        if options.get("hybrid_max_fill") is None and kernel.hybrid_max_fill is not None:
            options["hybrid_max_fill"] = kernel.hybrid_max_fill
        if options.get("reduce_costs") is None and fixup is None and kernel.reduce_costs is not None:
            options["reduce_costs"] = kernel.reduce_costs
        if "few_tiles_reduce" not in options and fixup is None and kernel.few_tiles_reduce:
            options["few_tiles_reduce"] = True
        if "decode_reduce" not in options and fixup is None and kernel.decode_reduce and decode_like(shape.m, shape.n):
            options["decode_reduce"] = True
        # the dot tiles' spread also under a forced atomic policy: a 2 KB output tile's atomic add
        # is cheap and no pass trails the main kernel (1.05-1.19x faster than the reduce pass on
        # fresh decode shapes, not deterministic; benchmarks/LOG.md v35)
        if "spread_reduce" not in options and fixup in (None, "atomic") and kernel.spread_reduce:
            options["spread_reduce"] = True
        # a wave or more of tiles at one CTA per SM (the 128x256 tile): the SK CTAs of the two-tile
        # hybrid walk backwards under turnstile (streamk.sched.auto), unless a policy is given
        if fixup is None and "sk_backward" not in options:
            options["sk_backward"] = True
    return make_schedule(schedule, shape, tile, machine or target.machine(dtype, tile), fixup=fixup, **options)
