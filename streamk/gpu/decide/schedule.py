"""The Schedule a GEMM runs on a Target (``schedule_for``, which ``streamk schedule --target``
prints too): a named decomposition on the kernel's Machine, ``auto`` with the kernel's measured
facts (its ``TargetTile``) filling in every option the caller left out, or a given Schedule checked.
"""

from __future__ import annotations

from typing import Any

from ...errors import ScheduleError
from ...sched import make_schedule
from ...sched.basic import persistent_tiles
from ...sched.paired import paired_splits
from ...schedule import Schedule
from ...shapes import GemmShape, Machine, Problem, TileShape
from ...target import Target, TargetTile
from ..catalogue import KernelSpec, SM90_M64_192_TILE, SM90_M64_TILE, SM90_TILE, SM90_WIDE_TILE, spec_for_tile
from .by_model import (WIDE_PERSISTENT_MIN_ITERS, model_pick, model_tiles, narrow_pick, paired_pick,
                       wide_persistent_pick)
from .launches import (QUAD_ORDER, STRADDLE_MULTICAST_TILES, auto_quads, column_rows, column_split_count, column_splits,
                       one_column_192, one_wave_m64, one_wave_m64_192,
                       pair_splits, pair_stream_k, persistent_in_place_of_dp, persistent_quads, persistent_quads_fit,
                       plain_partial_wave, split_wider)
from .operands import contiguous_b_row_bytes, decode_like
from .tiles import choose_tile, packed_bytes


def auto_options(kernel: TargetTile, shape: GemmShape, machine: Machine, fixup: str | None,
                 given: dict[str, Any], paired: bool = False) -> dict[str, Any]:
    """``auto``'s options on ``kernel``: those ``given`` (a None counts as not given), then the
    kernel's measured facts (streamk.target) for the rest; a forced ``fixup`` keeps the caller's
    policy (no reduce constants, no reduce spreads but the dot tiles' under atomic); ``paired``:
    its Stream-K runs paired (launches.pair_stream_k)."""
    facts: dict[str, Any] = {
        "model_costs": kernel.model_costs,
        "tile_order": kernel.order_for(Problem(shape, kernel.tile), machine.slots),
        "persistent_upto": kernel.persistent_upto,
    }
    split_costs = kernel.split_costs()
    if given.get("split_costs") is None and split_costs is not None:  # their shares only with them
        facts.update(split_costs=split_costs, split_busy_share=kernel.split_busy_share,
                     split_wide_share=kernel.split_wide_share)
    facts.update(hybrid_max_waves=kernel.hybrid_max_waves, hybrid_busy_share=kernel.hybrid_busy_share,
                 hybrid_max_fill=kernel.hybrid_max_fill, reduce_costs=kernel.reduce_costs if fixup is None else None)
    options = dict(given)
    options.update({name: value for name, value in facts.items() if value is not None and given.get(name) is None})
    switches = {
        "few_tiles_reduce": fixup is None and kernel.few_tiles_reduce,
        "decode_reduce": fixup is None and kernel.decode_reduce and decode_like(shape.m, shape.n),
        # the dot tiles' spread also under a forced atomic policy: a 2 KB output tile's atomic add
        # is cheap and no pass trails the main kernel (1.05-1.19x faster than the reduce pass on
        # fresh decode shapes, not deterministic; benchmarks/LOG.md v35)
        "spread_reduce": fixup in (None, "atomic") and kernel.spread_reduce,
        # a wave or more of tiles at one CTA per SM (the 128x256 tile): the SK CTAs of the two-tile
        # hybrid walk backwards under turnstile (streamk.sched.auto), unless a policy is given
        "sk_backward": fixup is None,
        # clusters of two share B (launches.pair_stream_k): Stream-K's CTAs in twin pairs
        "pair_rows": paired,
    }
    options.update({name: True for name, on in switches.items() if on and name not in given})
    return options


def wide_persistent_quads(shape: GemmShape, dtype: str, target: Target, multicast: bool, auto: Schedule,
                          b_row_bytes: int | None = None) -> Schedule | None:
    """Whole 128x256x64 tiles on one persistent CTA an SM in QUAD_ORDER where ``target`` runs 2x2
    clusters and launches.persistent_quads holds (many short tiles), where ``auto`` is plain data-parallel on
    that tile over more than a wave (launches.persistent_in_place_of_dp), or where they fit and the model
    predicts them faster than ``auto``, auto's own Schedule (by_model.wide_persistent_pick); else None."""
    if not target.quad_clusters or SM90_WIDE_TILE not in target.tiles_for(dtype):
        return None
    machine = target.machine(dtype, SM90_WIDE_TILE)
    spec = spec_for_tile(dtype, SM90_WIDE_TILE)
    in_place_of_dp = persistent_in_place_of_dp(auto, spec, machine.sms, multicast)
    if not in_place_of_dp and not persistent_quads_fit(shape, spec, machine.sms, multicast, WIDE_PERSISTENT_MIN_ITERS):
        return None
    wide = persistent_tiles("auto", shape, SM90_WIDE_TILE, machine, machine.sms).with_tile_order(QUAD_ORDER)
    if in_place_of_dp or persistent_quads(shape, spec, machine.sms, multicast) or \
            wide_persistent_pick(dtype, target, auto, wide, b_row_bytes):
        return wide
    return None


def b_rows(shape: GemmShape, spec: KernelSpec, b_row_bytes: int | None) -> int:
    """The bytes between B's rows as ``spec``'s kernel reads them: ``b_row_bytes``, or a contiguous B's where None."""
    return contiguous_b_row_bytes(shape.k, shape.n, spec) if b_row_bytes is None else b_row_bytes


def paired_twins(s: Schedule, dtype: str, target: Target, multicast: bool, b_row_bytes: int | None,
                 columns: bool = True) -> Schedule | None:
    """``s``'s aligned splits in twin pairs that share B (sched.paired_splits) where launches.pair_splits
    holds for them (B's rows ``b_row_bytes`` apart as schedule_for's), or grouped by whole tile columns where
    ``columns``, ``target`` runs such clusters and launches.column_splits holds; else None."""
    if s.tile not in target.tiles_for(dtype):
        return None
    spec = spec_for_tile(dtype, s.tile)
    rows = column_splits(multicast, spec, s, target.machine(dtype, s.tile).sms) if columns and target.quad_clusters else 0
    if rows and (grouped := paired_splits(s, rows)) is not None:
        return grouped
    return paired_splits(s) if pair_splits(multicast, spec, b_rows(s.shape, spec, b_row_bytes), s) else None


def paired_auto(shape: GemmShape, dtype: str, target: Target, tile: TileShape, multicast: bool,
                b_row_bytes: int | None) -> Schedule | None:
    """auto's aligned splits of ``shape`` on ``tile`` in twin pairs (paired_twins), else None: a
    candidate the calibrated model prices against auto's final pick (by_model.paired_pick)."""
    if tile not in target.tiles_for(dtype):
        return None
    kernel, machine = target.kernel(dtype, tile), target.machine(dtype, tile)
    auto = make_schedule("auto", shape, tile, machine, **auto_options(kernel, shape, machine, None, {}))
    return paired_twins(auto, dtype, target, multicast, b_row_bytes)


def auto_rules(chosen: Schedule, dtype: str, target: Target, sms: int, plain: bool, multicast: bool,
               b_row_bytes: int | None, row_major: bool, given_order: str | None, columns: bool = True) -> Schedule:
    """auto's ``chosen`` Schedule after the rules that may replace it or its tile order: where auto
    is ``plain`` (no option given), the calibrated model's pick (by_model.model_pick), the wide
    persistent launch and the narrow one-wave tiles; then aligned splits in twin pairs or column groups
    (paired_twins; the latter only where ``columns``) or the clusters' tile orders on ``sms`` SMs; last,
    where auto is plain and its launch runs no column clusters, the column launch (column_launch)."""
    ruled = _auto_rules(chosen, dtype, target, sms, plain, multicast, b_row_bytes, row_major, given_order, columns)
    if plain and columns and not column_rows(ruled):
        column = column_launch(chosen.shape, dtype, target, multicast)
        if column is not None:
            return column
    return ruled


def _auto_rules(chosen: Schedule, dtype: str, target: Target, sms: int, plain: bool, multicast: bool,
               b_row_bytes: int | None, row_major: bool, given_order: str | None, columns: bool = True) -> Schedule:
    """auto_rules but the column launch."""
    shape, tile = chosen.shape, chosen.tile
    if plain:
        launched = clusters_order(chosen, dtype, target, sms, multicast, b_row_bytes, given_order)
        picked = model_pick(shape, dtype, target, chosen, row_major, b_row_bytes, launched)
        if picked is chosen and tile in (SM90_TILE, SM90_WIDE_TILE):
            wide = wide_persistent_quads(shape, dtype, target, multicast, chosen, b_row_bytes)
            if wide is not None:
                return wide
        if picked is not chosen:
            chosen, launched = picked, clusters_order(picked, dtype, target, sms, multicast, b_row_bytes, given_order)
        narrow = narrow_one_wave(shape, dtype, target, chosen, b_row_bytes, multicast)
        if narrow is not None:
            return narrow
        narrow = narrow_by_model(launched, dtype, target, multicast, b_row_bytes)
        if narrow is not None:
            return narrow
    twins = paired_twins(chosen, dtype, target, multicast, b_row_bytes, columns)
    if twins is not None:
        return twins
    return clusters_order(chosen, dtype, target, sms, multicast, b_row_bytes, given_order)


def clusters_order(chosen: Schedule, dtype: str, target: Target, sms: int, multicast: bool, b_row_bytes: int | None,
                   given_order: str | None) -> Schedule:
    """``chosen`` in the tile order its launch runs on ``sms`` SMs where no order was given: row-major
    without clusters on a short wave of aligned rows (launches.plain_partial_wave), 2x2 clusters where
    launches.auto_quads takes them, else its own."""
    shape = chosen.shape
    spec = spec_for_tile(dtype, chosen.tile)
    a_rows = contiguous_b_row_bytes(shape.m, shape.k, spec)  # a contiguous A's rows
    chosen_b_rows = b_rows(shape, spec, b_row_bytes)
    if target.plain_partial_waves and given_order is None and not packed_bytes(shape, dtype, chosen.tile) \
            and plain_partial_wave(multicast, spec, chosen, sms, a_rows, chosen_b_rows):
        # no clusters where they share nothing on a short wave (launches.plain_partial_wave; measured
        # on operands read in place only, as launches.one_wave_m64)
        return chosen.with_tile_order("row-major")
    if target.quad_clusters and given_order is None and auto_quads(multicast, spec, chosen, sms, a_rows, chosen_b_rows):
        return chosen.with_tile_order(QUAD_ORDER)  # 2x2 clusters share A and B (launches.auto_quads)
    return chosen


def column_launch(shape: GemmShape, dtype: str, target: Target, multicast: bool) -> Schedule | None:
    """Fixed-split on 64x128x64 grouped by tile columns where ``target`` runs column clusters and
    launches.column_split_count takes it, and that kernel reads the operands in place; else None."""
    if not (target.quad_clusters and multicast) or SM90_M64_TILE not in target.tiles_for(dtype) \
            or packed_bytes(shape, dtype, SM90_M64_TILE) or decode_like(shape.m, shape.n):
        return None
    machine = target.machine(dtype, SM90_M64_TILE)
    splits = column_split_count(shape, machine.sms)
    if not splits:
        return None
    order = target.kernel(dtype, SM90_M64_TILE).order_for(Problem(shape, SM90_M64_TILE), machine.slots)
    s = make_schedule("fixed-split", shape, SM90_M64_TILE, machine, splits=splits, tile_order=order)
    return paired_splits(s, s.problem.tiles_m)


def narrow_by_model(launched: Schedule, dtype: str, target: Target, multicast: bool,
                    b_row_bytes: int | None) -> Schedule | None:
    """auto's own launch on 64x128x64 in place of ``launched`` (auto's pick on a model tile, in the tile
    order it launches in) where the model predicts it faster, each priced in the clusters it launches in
    (by_model.narrow_pick), and that kernel reads the operands in place; else None."""
    shape = launched.shape
    if not target.one_wave_m64 or launched.tile not in model_tiles() or SM90_M64_TILE not in target.tiles_for(dtype) \
            or packed_bytes(shape, dtype, SM90_M64_TILE) or decode_like(shape.m, shape.n):
        return None
    narrow = schedule_for("auto", shape, dtype, target, tile=SM90_M64_TILE, b_row_bytes=b_row_bytes, multicast=multicast)
    priced = narrow
    if column_rows(narrow):  # priced as the splits ungrouped: the model misses what column clusters share (v164)
        priced = schedule_for("auto", shape, dtype, target, tile=SM90_M64_TILE, b_row_bytes=b_row_bytes,
                              multicast=multicast, column_clusters=False)
    return narrow if narrow_pick(dtype, target, launched, priced, b_row_bytes) else None


def narrow_one_wave(shape: GemmShape, dtype: str, target: Target, chosen: Schedule, b_row_bytes: int | None,
                    multicast: bool) -> Schedule | None:
    """auto's own launch on 64x128x64 or 64x192x64 tiles in place of ``chosen`` where ``target`` takes one
    wave of them (launches.one_column_192, one_wave_m64, one_wave_m64_192) and that kernel reads the operands in place
    (the rules were measured on aligned rows only), else None; not on 64x128x64 where ``chosen`` splits
    deep tiles over more CTAs (launches.split_wider)."""
    if not target.one_wave_m64:
        return None
    tiles = target.tiles_for(dtype)
    if SM90_M64_192_TILE in tiles and not packed_bytes(shape, dtype, SM90_M64_192_TILE):
        rows = b_rows(shape, spec_for_tile(dtype, SM90_M64_192_TILE), b_row_bytes)
        if one_column_192(shape, target.machine(dtype, SM90_M64_192_TILE).sms, chosen, rows):
            return schedule_for("auto", shape, dtype, target, tile=SM90_M64_192_TILE, b_row_bytes=b_row_bytes,
                                multicast=multicast)
    # (tile, the rule that takes it, the rule that keeps ``chosen`` after all, given the narrow launch)
    for tile, takes, keeps in ((SM90_M64_TILE, one_wave_m64, split_wider), (SM90_M64_192_TILE, one_wave_m64_192, None)):
        if tile in tiles and takes(shape, target.machine(dtype, tile).sms, chosen) and \
                not packed_bytes(shape, dtype, tile):
            narrow = schedule_for("auto", shape, dtype, target, tile=tile, b_row_bytes=b_row_bytes, multicast=multicast)
            return None if keeps is not None and keeps(chosen, narrow) else narrow
    return None


def schedule_for(schedule: str | Schedule, shape: GemmShape, dtype: str, target: Target, *,
                 tile: TileShape | None = None, fixup: str | None = None, machine: Machine | None = None,
                 b_row_bytes: int | None = None, multicast: bool = True, row_major: bool = True,
                 column_clusters: bool = True, **options: Any) -> Schedule:
    """What ``streamk.gpu.gemm`` runs on ``target``: a named decomposition on ``tile`` (default:
    auto's choice for ``auto``, else the paper's tile) and that kernel's Machine, ``auto`` with the
    target's measured constants and the kernel's tile order where the caller gives none; or a given
    Schedule, checked against the shape and tile. auto's Stream-K runs paired where the launch's
    clusters share B (launches.pair_stream_k: ``multicast``, and the bytes between the rows the
    kernel reads B by, ``b_row_bytes``; None: a contiguous row-major B, as the CLI assumes); its aligned
    splits run grouped by tile columns where launches.column_splits holds, unless ``column_clusters`` is False."""
    if isinstance(schedule, Schedule):
        if schedule.shape != shape:
            raise ScheduleError(f"the schedule is for {schedule.shape}, the operands are {shape}")
        if tile is not None and schedule.tile != tile:
            raise ScheduleError(f"the schedule's tile is {schedule.tile}; this kernel runs {tile} tiles")
        target.kernel(dtype, schedule.tile)
        return schedule if fixup is None or fixup == schedule.fixup else schedule.with_fixup(fixup)
    if not isinstance(schedule, str):
        raise ScheduleError(f"schedule must be a name or a Schedule (got {type(schedule).__name__})")
    # auto on its own tile, Machine and policy, no option given: the calibrated model may overrule it
    plain = (schedule == "auto" and tile is None and fixup is None and machine is None
             and all(v is None for v in options.values()))
    if tile is None:
        tile = choose_tile(shape, dtype, target, row_major) if schedule == "auto" else target.tiles_for(dtype)[0]
    kernel = target.kernel(dtype, tile)
    machine = machine or target.machine(dtype, tile)
    if schedule == "auto":
        spec = spec_for_tile(dtype, tile)
        rows = b_rows(shape, spec, b_row_bytes)
        paired = pair_stream_k(multicast, spec, rows, Problem(shape, tile).iters_per_tile)
        given_order = options.get("tile_order")
        options = auto_options(kernel, shape, machine, fixup, options, paired)
        chosen = make_schedule(schedule, shape, tile, machine, fixup=fixup, **options)
        ruled = auto_rules(chosen, dtype, target, machine.sms, plain, multicast, b_row_bytes, row_major, given_order,
                           column_clusters)
        if not plain or tile not in model_tiles() or decode_like(shape.m, shape.n):
            return ruled
        paired = [c for t in STRADDLE_MULTICAST_TILES  # not auto's own twins again
                  if (c := paired_auto(shape, dtype, target, t, multicast, b_row_bytes)) is not None and c != ruled]
        return paired_pick(dtype, target, ruled, paired, b_row_bytes)
    return make_schedule(schedule, shape, tile, machine, fixup=fixup, **options)
