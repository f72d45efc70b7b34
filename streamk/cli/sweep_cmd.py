"""``streamk sweep``: simulate every decomposition over the paper's shape corpus."""

from __future__ import annotations

import argparse
import sys

from ..errors import ScheduleError
from ..schedule import FIXUP_POLICIES
from ..sched import names
from ..sched.registry import WALKS
from ..sim.corpus import CORPUS_SIZE, corpus
from ..limits import PROGRESS_AFTER_S, check_seconds
from ..sched.registry import get_batch
from ..sched.basic import FIXED_SPLITS
from ..sim.sweep import CSV_COLUMNS, sweep, workers_available
from .common import add_problem_args, add_seed_arg, costs_from, machine_from, positive_int, print_json
from .paths import add_force_arg, output_file, refuse_overwriting_measurements, writing
from .simulate_cmd import add_costs_arg

# Shape-decompositions a sweep times per second and worker (measured on a 2-core CI machine):
CLOSED_FORM_RATE = 20_000.0  # built-in schedulers under their own fixup: closed-form ranges, fast path
PER_SHAPE_RATE = 1_000.0  # a user's scheduler: one Schedule per shape, then the fast path
EVENT_RATE = 120.0  # --fixup or --walk backward: mostly the event simulator


def add_parser(sub) -> argparse.ArgumentParser:
    p = sub.add_parser("sweep", description="Simulate each decomposition on N shapes with m, n, k log-uniform in "
                                   "[128, 8192] (seeded), the corpus of the paper's section 6. Writes one CSV "
                                   f"row per shape and decomposition; fixed-split uses --splits "
                                   f"min({FIXED_SPLITS}, iterations per tile), stream-k its default grid.",
                       epilog="Example: streamk sweep --tile 128x128x32 --sms 108 --out sweep.csv --json")
    p.add_argument("--count", type=positive_int, default=CORPUS_SIZE, metavar="N",
                   help=f"number of shapes (default {CORPUS_SIZE}, the paper's corpus)")
    add_seed_arg(p, what="corpus seed")
    add_problem_args(p, shape=False)
    p.add_argument("--decomp", default=None, metavar="D[,D...]",
                   help=f"decompositions to simulate (default all: {', '.join(names())})")
    add_costs_arg(p)
    p.add_argument("--fixup", choices=FIXUP_POLICIES, default=None,
                   help="consolidate split tiles by this policy instead of each scheduler's own (owner-waits); "
                        "timed from real schedules, so slower than the default")
    p.add_argument("--walk", choices=WALKS, default="forward",
                   help="order of each CTA's units (backward pairs with --fixup turnstile) (default forward)")
    p.add_argument("--out", metavar="FILE.csv", type=output_file(),
                   help=f"write one row per shape and decomposition ({', '.join(CSV_COLUMNS)})")
    add_force_arg(p)
    p.add_argument("--json", action="store_true",
                   help="print a summary object: shapes, mean_utilization, speedup_vs_dp, wins, ...")
    return p


def estimate_seconds(decomps: list[str], count: int, args: argparse.Namespace) -> float:
    """Rough seconds a sweep of ``count`` shapes takes, from the rates above."""
    own_order = args.fixup is None and args.walk == "forward"
    seconds = 0.0
    for name in decomps:
        closed = own_order and get_batch(name) is not None
        seconds += count / (CLOSED_FORM_RATE if closed else PER_SHAPE_RATE if own_order else EVENT_RATE)
    return seconds / workers_available()


def run(args: argparse.Namespace) -> int:
    from tqdm import tqdm

    decomps = names()
    if args.decomp is not None:
        decomps = list(dict.fromkeys(d.strip() for d in args.decomp.split(",") if d.strip()))  # once each, in order
        if not decomps:
            raise ScheduleError(f"--decomp needs at least one name (got {args.decomp!r})")
        unknown = [d for d in decomps if d not in names()]
        if unknown:
            raise ScheduleError(f"unknown decomposition {unknown[0]!r}; choose from: {', '.join(names())}")
    if args.out:
        refuse_overwriting_measurements(args.out, args.force)
    check_seconds(estimate_seconds(decomps, args.count, args),
                  f"a sweep of {args.count:,} shapes x {len(decomps)} decompositions",
                  "use a smaller --count or fewer --decomp")
    machine, args.costs = machine_from(args), costs_from(args)
    shapes = corpus(args.count, args.seed)
    with tqdm(total=len(shapes) * len(decomps), unit="shape", desc="sweep", file=sys.stderr, disable=None,
              delay=PROGRESS_AFTER_S) as bar:
        result = sweep(shapes, args.tile, machine, decomps, args.costs, progress=bar.update,
                       fixup=args.fixup, walk=args.walk)
    if args.out:
        with writing(args.out):
            result.write_csv(args.out)
    summary = result.summary()
    summary["seed"] = args.seed
    summary["fixup"] = args.fixup or "owner-waits"
    summary["walk"] = args.walk
    if args.json:
        print_json(summary)
        return 0
    print(f"{summary['shapes']} shapes (seed {args.seed}), tile {args.tile}, {args.sms} SMs x {args.ctas_per_sm}, "
          f"costs a,b,c,d = {args.costs}, fixup {summary['fixup']}, walk {args.walk}")
    speed = summary.get("speedup_vs_dp", {})
    print(f"{'decomposition':<16} {'mean util':>9} {'vs DP':>7} {'deadlocks':>9} {'wins':>7}")
    for d in summary["decompositions"]:
        vs = f"{speed[d]:.3f}" if speed.get(d) else "-"
        print(f"{d:<16} {summary['mean_utilization'][d]:>9.4f} {vs:>7} {summary['deadlocks'][d]:>9} "
              f"{summary['wins'][d]:>7}")
    if any(summary["deadlocks"].values()):  # a speedup over the shapes that ran says nothing of the rest
        print("vs DP: geomean over each decomposition's shapes that did not deadlock; mean util counts a "
              "deadlocked shape as 0")
    if args.out:
        print(f"wrote {args.out}")
    return 0
