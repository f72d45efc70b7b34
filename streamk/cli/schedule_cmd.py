"""``streamk schedule``: build a decomposition and print it (a table, or the CLI contract's JSON)."""

from __future__ import annotations

import argparse

from ..fixup import Action, plan_fixup
from .common import add_decomposition_args, add_problem_args, note_uncalibrated, print_json, schedule_from

_MARK = {Action.WRITE: "", Action.PARTIAL: " >slot", Action.REDUCE: " +fixup", Action.HANDOFF: " >>",
         Action.FINISH: " +fixup", Action.ARRIVE: " >slot", Action.ATOMIC: " +atomic", Action.DEFER: " >slot"}


def add_parser(sub) -> argparse.ArgumentParser:
    p = sub.add_parser("schedule", description="Build a decomposition and print, per CTA, its (tile, k_begin, k_end) "
                                   "MAC-iteration ranges. k counts MAC iterations, not elements.")
    add_decomposition_args(p)
    add_problem_args(p)
    p.add_argument("--json", action="store_true", help="print the schedule as one JSON object")
    return p


def run(args: argparse.Namespace) -> int:
    schedule = schedule_from(args)
    if args.target is not None and args.decomposition == "auto":  # auto's calibrated constants
        note_uncalibrated(args.target, args.dtype, schedule.tile)
    if args.json:
        print_json(schedule.to_json_dict())
        return 0
    plan = plan_fixup(schedule)
    pr = schedule.problem
    print(f"{schedule.decomposition}: {schedule.shape} with {schedule.tile} tiles -> {pr.tiles_m}x{pr.tiles_n} "
          f"tiles, {pr.iters_per_tile} iterations per tile, {pr.total_iters} in all")
    iters = schedule.iters_per_cta
    print(f"grid {schedule.grid} CTAs on {args.sms} SMs x {args.ctas_per_sm}; iterations per CTA "
          f"{int(iters.min())}..{int(iters.max())}; fixup {plan.policy}, {len(plan.split_tiles)} split tiles, "
          f"{plan.num_slots} workspace slots")
    if args.target is not None:
        _print_clusters(schedule, plan, args.dtype)
    print(f"{'CTA':>5} {'iters':>6}  units (tile[k_begin:k_end], >slot stores a partial, +fixup reduces)")
    offsets = schedule.cta_offsets
    for cta in range(schedule.grid):
        cells = []
        for row in range(int(offsets[cta]), int(offsets[cta + 1])):
            t, kb, ke = (int(v) for v in schedule.units[row])
            cells.append(f"{t}[{kb}:{ke}]{_MARK[Action(plan.action[row])]}")
        print(f"{cta:>5} {int(iters[cta]):>6}  " + "  ".join(cells))
    return 0


def _print_clusters(schedule, plan, dtype: str) -> None:
    """Where streamk.gpu launches this schedule in clusters that share operands (gpu/clusters.py), say so."""
    from ..gpu.catalogue import spec_for_tile
    from ..gpu.clusters import held_pairs
    from ..gpu.decide.launches import QUAD_CLUSTER, cluster_shape

    spec = spec_for_tile(dtype, schedule.tile)  # B contiguous and row-major, n columns
    shape = cluster_shape(True, False, spec, schedule)
    if shape == QUAD_CLUSTER:
        print("clusters of 4 CTAs on 2x2 blocks of tiles share A and B by TMA multicast, where the GPU "
              "holds them in as many waves (else the blocks' column pairs share B)")
        return
    if shape[0] > 2:  # a tile column's rows (decide.launches.column_rows)
        print(f"clusters of {shape[0]} CTAs on one tile column's {shape[0]} tile rows share each stage's B by TMA "
              "multicast, where the GPU holds every cluster at once (else its pairs do)")
        return
    slots = schedule.machine.slots if schedule.machine is not None else 0
    pairs = held_pairs(plan, spec, schedule.shape.n * spec.itemsize, slots)
    if pairs is not None:
        print(f"clusters of 2 CTAs: {int(pairs.sum())} of {len(pairs)} pairs share each stage's B by TMA multicast")
