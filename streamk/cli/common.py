"""Arguments several verbs share: the problem (shape, tile, machine) and a decomposition."""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from ..costs import AUTO_COSTS, IDEAL, Costs
from ..errors import ScheduleError, StreamkError
from ..schedule import FIXUP_POLICIES, Schedule, check_tile_order
from ..sched import make_schedule, names
from ..sched.basic import FIXED_SPLITS
from ..sched.registry import check_options
from ..shapes import GemmShape, Machine, TileShape
from ..target import PRESETS, Target, preset

DTYPES = ("float16", "bfloat16", "float64")


def _typed(parse):
    def convert(text: str):
        try:
            return parse(text)
        except ScheduleError as exc:
            raise argparse.ArgumentTypeError(str(exc)) from None
    convert.__name__ = parse.__qualname__.split(".")[0]
    return convert


def _int_at_least(text: str, low: int) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be an integer >= {low} (got {text!r})") from None
    if value < low:
        raise argparse.ArgumentTypeError(f"must be >= {low} (got {value})")
    return value


def positive_int(text: str) -> int:
    return _int_at_least(text, 1)


def seed(text: str) -> int:
    """A NumPy seed: an integer >= 0."""
    return _int_at_least(text, 0)


def add_seed_arg(p: argparse.ArgumentParser, default: int = 0, what: str = "random seed") -> None:
    p.add_argument("--seed", type=seed, default=default, metavar="S", help=f"{what} (default {default})")


DEFAULT_TILE = TileShape(128, 128, 32)


def add_problem_args(p: argparse.ArgumentParser, *, shape: bool = True) -> None:
    """--shape, --tile, --sms, --ctas-per-sm, or --target (with --dtype) for all but the shape."""
    if shape:
        p.add_argument("--shape", required=True, type=_typed(GemmShape.parse), metavar="MxNxK",
                       help="GEMM problem size, e.g. 384x384x128")
    p.add_argument("--tile", default=None, type=_typed(TileShape.parse), metavar="BMxBNxBK",
                   help="CTA tile (blocking factor); one MAC iteration is BMxBNxBK (default 128x128x32; with "
                        "--target the dtype's paper tile, or for auto the tile the GPU backend would take)")
    p.add_argument("--sms", type=positive_int, metavar="P",
                   help="number of SMs of the machine (e.g. 4 for the paper's figures, 108 for an A100); "
                        "needed unless --target gives it")
    p.add_argument("--ctas-per-sm", type=positive_int, metavar="O",
                   help="resident CTA slots per SM (default 1; with --target that tile's kernel's)")
    p.add_argument("--target", type=_typed(preset), metavar="GPU",
                   help=f"plan as streamk.gpu does on this GPU ({', '.join(PRESETS)}): its SMs, the CTAs per SM "
                        f"of the tile's kernel, its tiles, and auto's measured constants; replaces --sms and "
                        f"--ctas-per-sm")
    p.add_argument("--dtype", choices=DTYPES, default=None,
                   help="with --target: the inputs' dtype, whose kernels' tiles apply (default float16); "
                        "refused without --target, where it would change nothing")
    add_calibration_arg(p)


def calibration_file(text: str) -> Target:
    """An argparse type: the Target a calibration file is for (``target.target_from_file``)."""
    from pathlib import Path

    from ..target import target_from_file

    if not Path(text).is_file():
        raise argparse.ArgumentTypeError(f"must be a calibration file (got {text!r}, which is not a file)")
    try:
        return target_from_file(Path(text))
    except StreamkError as exc:
        raise argparse.ArgumentTypeError(" ".join(str(exc).split())) from None


def add_calibration_arg(p: argparse.ArgumentParser) -> None:
    p.add_argument("--calibration", type=calibration_file, default=None, metavar="FILE",
                   help="a calibration file (streamk calibrate --all --out FILE on the GPU; docs/calibration.md): its "
                        "GPU is the target (--target, if given, must name its family), and its kernels' terms predict "
                        "microseconds and set auto's calibrated constants; a kernel it lacks has none (default: "
                        "$STREAMK_CALIBRATION, then the files the package ships)")


def target_of(args: argparse.Namespace) -> Target | None:
    """--target, or the GPU --calibration's file is for (which --target, if given, must name)."""
    loaded: Target | None = getattr(args, "calibration", None)
    if loaded is None:
        return args.target
    if args.target is not None and args.target.name != loaded.name:
        raise StreamkError(f"--calibration calibrates {loaded.name}, not --target {args.target.name}: drop --target "
                           f"(the file's GPU is the target) or load that GPU's file")
    return loaded


def note_uncalibrated(target: Target, dtype: str, tile: TileShape) -> bool:
    """Say on stderr, in one line, that ``target``'s kernel has no calibration (predictions fall
    back to the appendix model); True where it has none."""
    if target.kernel(dtype, tile).calibration is not None:
        return False
    print(f"streamk: {target.name} has no calibration of the {dtype} {tile} kernel: the appendix model's "
          f"constants, no microseconds (streamk calibrate --all on that GPU writes a file for --calibration)",
          file=sys.stderr)
    return True


def problem_from(args: argparse.Namespace) -> None:
    """Fill in ``args.tile``, ``args.sms`` and ``args.ctas_per_sm`` (from ``--target`` where given);
    StreamkError where the machine is missing or given twice. Idempotent."""
    if getattr(args, "_problem_done", False):
        return
    args._problem_done = True
    args.target = target_of(args)
    target: Target | None = args.target
    if target is None:
        if args.dtype is not None:  # the simulator times MAC iterations: a dtype changes nothing without a GPU's tiles
            raise StreamkError(f"--dtype {args.dtype} applies only with --target GPU ({', '.join(PRESETS)}), whose "
                               f"kernels for that dtype give the tile and CTAs per SM; add --target or drop --dtype")
        if args.sms is None:
            raise StreamkError("give the machine: --sms P (and --ctas-per-sm O), or --target GPU "
                               f"({', '.join(PRESETS)})")
        args.tile = args.tile or DEFAULT_TILE
        args.ctas_per_sm = args.ctas_per_sm or 1
        return
    if args.sms is not None or args.ctas_per_sm is not None:
        raise StreamkError("--target gives the SMs and CTAs per SM; drop --sms and --ctas-per-sm")
    args.dtype = args.dtype or DTYPES[0]
    if args.tile is None and getattr(args, "decomposition", None) == "auto" and getattr(args, "shape", None):
        from ..gpu.decide.tiles import choose_tile

        args.tile = choose_tile(args.shape, args.dtype, target)
        args.tile_chosen = True  # auto's own tile: schedule_from lets the calibrated model overrule it
    args.tile = args.tile or target.tiles_for(args.dtype)[0]
    machine = target.machine(args.dtype, args.tile)
    args.sms, args.ctas_per_sm = machine.sms, machine.ctas_per_sm


def add_decomposition_args(p: argparse.ArgumentParser) -> None:
    """DECOMP, --grid, --splits, --fixup, --tile-order."""
    p.add_argument("decomposition", metavar="DECOMP",
                   help=f"one of: {', '.join(names())} (or a registered scheduler of your own)")
    p.add_argument("--grid", type=positive_int, metavar="G",
                   help="stream-k grid size (default sms x ctas-per-sm); data-parallel and dp-one-tile-sk: "
                        "run the tiles (the full waves) on G persistent CTAs")
    p.add_argument("--splits", type=positive_int, metavar="S",
                   help=f"fixed-split splitting factor (default min({FIXED_SPLITS}, iterations per tile))")
    p.add_argument("--fixup", choices=FIXUP_POLICIES, default=None,
                   help="how split tiles are consolidated (default owner-waits, the paper's)")
    p.add_argument("--tile-order", type=_typed(check_tile_order), default=None, metavar="ORDER",
                   help="which tile index is which (tile_m, tile_n): row-major, column-major, grouped-G "
                        "(G tile rows at a time, for L2 reuse, e.g. grouped-8), or quads-G (2x2 blocks of tiles, "
                        "four consecutive indices each, in grouped order; G even) (default row-major; auto with "
                        "--target: the target's order for the tile, grouped-8 on the sm90 tiles but row-major where "
                        "128x128x64's tiles fit one wave in more tile rows than a quarter of their k iterations)")
    p.add_argument("--walk", choices=["forward", "backward"], default="forward",
                   help="order of each CTA's units: forward, or backward as CUTLASS's SK units walk "
                        "(pair backward with --fixup turnstile) (default forward)")
    p.add_argument("--model-costs", type=_typed(Costs.parse), metavar="A,B,C,D",
                   help="auto: the appendix model's constants in MAC iterations (default 32,32,1,8, inside "
                        "the region that reproduces the paper's Figure 8; docs/auto-model.md)")
    p.add_argument("--reduce-costs", type=_typed(Costs.parse), metavar="A,B,C,D",
                   help="auto: below a tile per SM also plan the separate-reduce fixup with these constants "
                        "and take it where the model says it is faster (the GPU backend uses 32,24,1,0.5 "
                        "on an H100)")


def machine_from(args: argparse.Namespace) -> Machine:
    problem_from(args)
    return Machine(args.sms, args.ctas_per_sm)


def costs_from(args: argparse.Namespace) -> Costs:
    """--costs, else the target's model constants for the tile, else the ideal model."""
    problem_from(args)
    if args.costs is not None:
        return args.costs
    if args.target is not None:
        return args.target.kernel(args.dtype, args.tile).model_costs or AUTO_COSTS
    return IDEAL


def schedule_from(args: argparse.Namespace) -> Schedule:
    flags = dict(grid=args.grid, splits=args.splits, model_costs=args.model_costs, reduce_costs=args.reduce_costs)
    check_options(args.decomposition, flags, flags)  # a refusal names only the flags above
    options = dict(fixup=args.fixup, tile_order=args.tile_order, walk=args.walk, **flags)
    if options["tile_order"] is None:  # the scheduler's own default, or with --target the kernel's
        del options["tile_order"]
    if options["walk"] == "forward":  # the default: auto on its own tile stays plain (decide/by_model.py)
        del options["walk"]
    machine = machine_from(args)
    if args.target is not None:  # what streamk.gpu runs on that GPU, measured constants included
        from ..gpu.decide.schedule import schedule_for

        chosen = getattr(args, "tile_chosen", False)
        s = schedule_for(args.decomposition, args.shape, args.dtype, args.target, tile=None if chosen else args.tile,
                         **options)
        if chosen and s.tile != args.tile:  # the model's pick (gpu/decide/by_model.py) runs another tile
            args.tile, args.ctas_per_sm = s.tile, args.target.machine(args.dtype, s.tile).ctas_per_sm
        return s
    return make_schedule(args.decomposition, args.shape, args.tile, machine, **options)


def print_json(obj: Any) -> None:
    sys.stdout.write(json.dumps(obj) + "\n")  # dumps encodes in C; dump to a stream in Python, ~10x slower
