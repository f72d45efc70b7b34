"""``streamk plot``: draw a simulated wave schedule, a corpus landscape, or GPU benchmark results to a PNG."""

from __future__ import annotations

import argparse
import contextlib
import io
import sys
from pathlib import Path

from ..costs import IDEAL, Costs
from ..errors import InputError, StreamkError
from ..plot import METRICS
from ..shapes import TileShape
from ..sim import simulate
from ..sim.sweep import CSV_COLUMNS
from .common import (add_decomposition_args, add_problem_args, add_seed_arg, costs_from, machine_from, positive_int,
                     schedule_from)
from .paths import PLOT_SUFFIXES, check_output_file, input_file, make_folder, output_file, writing
from .simulate_cmd import add_costs_arg, check_simulate_size

DRAW_UNIT_S = 1e-3  # seconds matplotlib takes to draw one work unit's bars (measured 0.1-0.8 ms)


def _sweep_rows(path: Path) -> bool:
    """Whether ``path`` starts with the header ``streamk sweep --out`` writes."""
    with open(path, newline="", errors="replace") as f:
        return f.readline().rstrip("\r\n") == ",".join(CSV_COLUMNS)


def run_sweep(csv_path: Path, count: int, seed: int, tile: TileShape, sms: int, ctas_per_sm: int = 1,
              decomp: str | None = None, costs: Costs = IDEAL, *, table: bool = True) -> Path:
    """Sweep a seeded corpus sample into ``csv_path`` through the ``streamk sweep`` verb (its
    CLI contract, so the rows are the ones a user's sweep writes); its table goes to stderr (or
    nowhere, ``table=False``, for a caller that prints its own), and its errors to the caller,
    which names its own verb."""
    from . import build_parser  # noqa: PLC0415 (the package imports this module)

    make_folder(csv_path.parent)
    argv = ["sweep", "--count", str(count), "--seed", str(seed), "--tile", str(tile), "--sms", str(sms),
            "--ctas-per-sm", str(ctas_per_sm), "--costs", str(costs), "--out", str(csv_path)]
    if decomp:
        argv += ["--decomp", decomp]
    args = build_parser().parse_args(argv)  # values already checked: they parse
    with contextlib.redirect_stdout(sys.stderr if table else io.StringIO()):
        args._run(args)
    return csv_path


def add_parser(sub) -> argparse.ArgumentParser:
    p = sub.add_parser("plot", description="Draw a simulated wave schedule (Gantt chart, like the paper's Figures 1-3) "
                                   "or a landscape of sweep results over many GEMM shapes.")
    what = p.add_subparsers(dest="what", metavar="WHAT", parser_class=type(p))
    what.required = True

    s = what.add_parser("schedule", help="the wave schedule of one decomposition",
                        description="Simulate one decomposition and draw one row per SM slot that runs a CTA, "
                                    "MAC segments coloured by tile; partial stores, waits and fixups hatched.",
                        epilog="Example: streamk plot schedule stream-k --shape 384x384x128 --tile 128x128x4 "
                               "--sms 4 --out sk.png")
    add_decomposition_args(s)
    add_problem_args(s)
    add_costs_arg(s)
    s.add_argument("--title", help="panel title (default: decomposition, shape, makespan, utilization)")
    s.add_argument("--out", required=True, type=output_file(*PLOT_SUFFIXES), metavar="FILE.png",
                   help="where to write the plot (.png, .pdf or .svg)")

    land = what.add_parser("landscape", help="utilization or speedup over a corpus of shapes",
                           description="Plot sweep results: utilization against arithmetic intensity "
                                       "(utilization), mean utilization over m*n and k (map), or speedup over "
                                       "data-parallel (speedup). Reads --csv from `streamk sweep --out`, or runs "
                                       "a small seeded sweep itself.",
                           epilog="Example: streamk plot landscape --csv sweep.csv --metric speedup --out speedup.png")
    land.add_argument("--csv", type=input_file, metavar="FILE.csv", help="rows written by `streamk sweep --out FILE.csv`")
    land.add_argument("--metric", choices=METRICS, default="utilization", help="what to plot (default utilization)")
    land.add_argument("--out", required=True, type=output_file(*PLOT_SUFFIXES), metavar="FILE.png",
                      help="where to write the plot (.png, .pdf or .svg); without --csv the sweep's rows are "
                           "kept beside it as FILE.csv (an existing file there must be a sweep's CSV)")
    corpus = land.add_argument_group("sweep options (without --csv)")
    corpus.add_argument("--count", type=positive_int, default=500, metavar="N", help="corpus shapes (default 500)")
    add_seed_arg(corpus, what="corpus seed")
    corpus.add_argument("--decomp", metavar="D[,D...]", help="decompositions (default: all)")
    add_problem_args(corpus, shape=False)
    add_costs_arg(corpus)
    bench = what.add_parser("bench", help="GPU benchmark results (the CSV of `streamk bench`)",
                            description="Speedup of each of our decompositions over our data-parallel kernel "
                                        "by tile count, ours against cuBLAS (raw and padded) by flops, and "
                                        "TFLOP/s by arithmetic intensity, one point per corpus shape.",
                            epilog="Example: streamk plot bench --csv bench_float16.csv --out bench.png")
    bench.add_argument("--csv", required=True, type=input_file, metavar="FILE.csv", help="written by `streamk bench`")
    bench.add_argument("--title", default="", help="figure title")
    bench.add_argument("--out", required=True, type=output_file(*PLOT_SUFFIXES), metavar="FILE.png",
                   help="where to write the plot (.png, .pdf or .svg)")
    return p


def run(args: argparse.Namespace) -> int:
    from ..plot import load_bench_csv, load_sweep_csv, plot_bench, plot_landscape, plot_schedule  # draws: pyplot

    if args.what == "schedule":
        schedule = schedule_from(args)
        check_simulate_size(schedule, "plot schedule", DRAW_UNIT_S)
        timeline = simulate(schedule, costs_from(args))
        with writing(args.out):
            path = plot_schedule(timeline, args.out, args.title)
        print(f"{timeline.schedule.decomposition}: utilization {timeline.utilization:.4f}, makespan "
              f"{timeline.makespan:g}{', DEADLOCK' if timeline.deadlock else ''}; wrote {path}")
        return 0
    if args.what == "bench":
        rows = load_bench_csv(args.csv)
        with writing(args.out):
            path = plot_bench(rows, args.out, args.title)
        print(f"wrote {path}", file=sys.stderr)
        return 0
    if args.csv is not None:
        rows = load_sweep_csv(args.csv)
    else:
        if args.sms is None and args.target is None and args.calibration is None:
            raise StreamkError("plot landscape needs --csv FILE.csv, or --sms P (or --target GPU) to run a sweep itself")
        machine, costs = machine_from(args), costs_from(args)
        csv_path = args.out.with_suffix(".csv")
        if csv_path.exists() and not _sweep_rows(csv_path):  # never overwrite a file the user did not name,
            # unless it holds a sweep's rows (the same command run again)
            raise InputError(f"{str(csv_path)!r} exists and is not a sweep's CSV, which the sweep would "
                             f"overwrite; pass --csv {csv_path} to plot rows in it, or move it away")
        check_output_file(str(csv_path))  # the sweep's rows go beside the plot: writable too
        run_sweep(csv_path, args.count, args.seed, args.tile, machine.sms, machine.ctas_per_sm, args.decomp, costs)
        rows = load_sweep_csv(csv_path)
    with writing(args.out):
        path = plot_landscape(rows, args.out, args.metric)
    print(f"{args.metric} landscape of {len(rows['m'])} rows; wrote {path}", file=sys.stderr)
    return 0
