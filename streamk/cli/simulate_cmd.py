"""``streamk simulate``: run a decomposition on the SM simulator and print its timeline summary."""

from __future__ import annotations

import argparse
import math

from ..costs import Costs
from ..limits import check_memory, check_seconds
from ..schedule import Schedule
from ..sim import simulate
from .common import (_typed, add_decomposition_args, add_problem_args, costs_from, note_uncalibrated, print_json,
                     schedule_from)


# The event simulator per work unit, its --json output included (measured: 1.07M units in 27 s, 2.3 GB):
SIM_UNIT_S = 30e-6  # seconds
SIM_UNIT_BYTES = 2500  # bytes of segments, per-CTA arrays and JSON text


def check_simulate_size(schedule: Schedule, verb: str = "simulate", draw_unit_s: float = 0.0) -> None:
    """Refuse a simulation (and drawing, at ``draw_unit_s`` a unit) over the time or memory limits."""
    units = len(schedule.units)
    what = f"{verb} of {schedule.decomposition} on {schedule.shape} ({units:,} work units, grid {schedule.grid:,})"
    check_memory(units * SIM_UNIT_BYTES, what)
    check_seconds(units * (SIM_UNIT_S + draw_unit_s), what, "use a larger --tile, a smaller --shape or --grid")


def add_costs_arg(p: argparse.ArgumentParser) -> None:
    """--costs A,B,C,D (shared with ``sweep``)."""
    p.add_argument("--costs", default=None, type=_typed(Costs.parse), metavar="A,B,C,D",
                   help="appendix cost model: a per CTA, b per partial stored, c per MAC iteration, "
                        "d per partial read (default 0,0,1,0, the ideal model of the paper's figures; with "
                        "--target the constants auto uses for that tile there)")


def add_parser(sub) -> argparse.ArgumentParser:
    p = sub.add_parser("simulate", description="Simulate a decomposition on sms x ctas-per-sm slots: CTAs dispatched in "
                                   "blockIdx order to the earliest free slot, waits from the fixup plan. "
                                   "Prints makespan, utilization, wait time, a deadlock verdict and "
                                   "per-CTA start/end (or one JSON object with --json).",
                       epilog="Example: streamk simulate stream-k --shape 384x384x128 --tile 128x128x4 --sms 4 --json")
    add_decomposition_args(p)
    add_problem_args(p)
    add_costs_arg(p)
    p.add_argument("--json", action="store_true",
                   help="print one JSON object (makespan, utilization, grid, deadlock, ctas, segments, ...)")
    return p


def _fmt(x: float) -> str:
    return f"{x:g}" if math.isfinite(x) else "-"


def prediction(args: argparse.Namespace, schedule) -> dict:
    """With --target: the calibrated simulator's microseconds for the schedule, or why there are none."""
    if args.target is None:
        return {}
    cal = args.target.kernel(args.dtype, schedule.tile).calibration
    if note_uncalibrated(args.target, args.dtype, schedule.tile):
        return {"predicted_us": None, "calibration": None,
                "calibration_note": f"no prediction: {args.target.name} has no calibration of the {args.dtype} "
                                    f"{schedule.tile} kernel (streamk calibrate on that GPU writes one)"}
    from ..calibrate.candidates import launch_requests
    from ..calibrate.predict import predict_us
    from ..gpu.decide.tiles import packed_bytes

    packed_mb = packed_bytes(schedule.shape, args.dtype, schedule.tile) / 1e6  # contiguous operands, as auto assumes
    us = predict_us(schedule, cal, args.target.sms, packed_mb=packed_mb,
                    requests=launch_requests(schedule, args.dtype, args.target))
    return {"predicted_us": us if math.isfinite(us) else None, "packed_mb": packed_mb, "calibration": cal.to_json_dict()}


def candidate_rows(args: argparse.Namespace, schedule) -> list:
    """With --target: every candidate of the shape with its prediction, auto's marked (its schedule
    is ``schedule`` where DECOMP is auto, else auto's on the tile it would choose)."""
    if args.target is None:
        return []
    from ..calibrate.candidates import candidates
    from ..gpu.decide.schedule import schedule_for

    auto = schedule if args.decomposition == "auto" else schedule_for("auto", args.shape, args.dtype, args.target)
    return candidates(args.shape, args.dtype, args.target, auto)


def run(args: argparse.Namespace) -> int:
    schedule = schedule_from(args)
    args.costs = costs_from(args)
    check_simulate_size(schedule)
    timeline = simulate(schedule, args.costs)
    predicted = prediction(args, schedule)
    cands = candidate_rows(args, schedule)
    if args.json:
        print_json({**timeline.to_json_dict(), **predicted,
                    **({"candidates": [c.to_json_dict() for c in cands]} if cands else {})})
        return 0
    p = schedule.problem
    print(f"{schedule.decomposition}: {schedule.shape} with {schedule.tile} tiles ({p.tiles} tiles, "
          f"{p.total_iters} MAC iterations) on {args.sms} SMs x {args.ctas_per_sm}; costs a,b,c,d = "
          f"{args.costs}; fixup {timeline.policy}")
    print(f"grid {schedule.grid}  makespan {_fmt(timeline.makespan)}  utilization "
          f"{timeline.utilization:.4f}  total wait {timeline.total_wait:g}  "
          f"deadlock {'YES' if timeline.deadlock else 'no'}")
    if timeline.deadlock:
        print(f"deadlock: {timeline.deadlock_reason}")
    if predicted.get("predicted_us") is not None:  # where there is none, stderr said so in one line
        us = predicted["predicted_us"]
        packs = f", the pack pass of {predicted['packed_mb']:.3g} MB included" if predicted.get("packed_mb") else ""
        print(f"predicted {_fmt(us)} us on "
              f"{args.target.name} (calibrated on {predicted['calibration']['device']}{packs})")
    if cands:
        from ..calibrate.candidates import table

        print(f"candidates on {args.target.name} ({args.dtype}), each predicted by the calibrated simulator:")
        print(table(cands))
    print(f"{'CTA':>5} {'SM':>4} {'slot':>4} {'start':>10} {'end':>10}")
    for c in range(schedule.grid):
        print(f"{c:>5} {int(timeline.cta_sm[c]):>4} {int(timeline.cta_slot[c]):>4} "
              f"{_fmt(timeline.cta_start[c]):>10} {_fmt(timeline.cta_end[c]):>10}")
    return 0
