"""``streamk demo`` (what ``make demo`` runs): the paper's examples simulated and drawn, a corpus
sample swept and plotted, and a small GPU check where a GPU is present."""

from __future__ import annotations

import argparse
import math
import time
from pathlib import Path

import numpy as np

from .. import env
from ..costs import AUTO_COSTS, IDEAL, Costs
from ..errors import StreamkError
from ..plot import METRICS
from ..sched import make_schedule
from ..shapes import GemmShape, Machine, TileShape
from ..sim import simulate
from .common import add_seed_arg, positive_int
from .paths import make_folder, output_folder
from .plot_cmd import run_sweep

PAPER_SMS = 4  # the hypothetical four-SM GPU of the paper's Figures 1-4
CORPUS_SMS = 108  # an A100, as in the paper's evaluation
CORPUS_TILE = TileShape(128, 128, 32)  # the paper's FP16->32 blocking factor
CORPUS_COUNT = 2000  # shapes in the demo's corpus sample
QUICK_COUNT, QUICK_SMS = 40, 16  # --quick: a tiny sweep for tests
GPU_SHAPE = (1000, 700, 500)  # the GPU check's GEMM: edge tiles in m, n and k
GPU_DECOMPS = ("data-parallel", "stream-k", "two-tile-sk-dp")

# (file, title, decomposition, shape, tile, options, the paper's utilization)
FIGURES = [
    ("fig1a-data-parallel-128x128x128.png", "Figure 1a", "data-parallel", "384x384x128", "128x128x128", {}, 0.75),
    ("fig1b-data-parallel-128x64x128.png", "Figure 1b", "data-parallel", "384x384x128", "128x64x128", {}, 0.90),
    ("fig2a-fixed-split-s2.png", "Figure 2a", "fixed-split", "384x384x128", "128x128x64", {"splits": 2}, 0.90),
    ("fig2b-stream-k-g4.png", "Figure 2b", "stream-k", "384x384x128", "128x128x4", {"grid": 4}, 1.00),
]
FIXUP_COSTS = Costs(2, 4, 1, 4)  # a, b, d in MAC iterations: small enough to keep 32-iteration tiles readable
HYBRIDS = ("stream-k", "dp-one-tile-sk", "two-tile-sk-dp")  # Figure 3, on 896x384x128 with 128x128x4 tiles


def add_parser(sub) -> argparse.ArgumentParser:
    p = sub.add_parser("demo", description="Simulate the paper's Figures 1-4 (4 SMs, ideal costs), write their wave "
                                   "schedules, sweep a seeded corpus sample (108 SMs, 128x128x32 tiles), "
                                   "write its landscapes, and run a small GPU check if a GPU is present.",
                       epilog="Example: streamk demo --out out/demo")
    p.add_argument("--out", type=output_folder, default=Path("out/demo"), metavar="DIR",
                   help="folder for the PNGs and the sweep CSV (default out/demo)")
    p.add_argument("--count", type=positive_int, default=None, metavar="N",
                   help=f"corpus shapes to sweep (default {CORPUS_COUNT})")
    add_seed_arg(p, what="corpus seed")
    p.add_argument("--no-gpu", action="store_true", help="skip the GPU check")
    p.add_argument("--quick", action="store_true", help=argparse.SUPPRESS)  # tests: tiny sweep, no GPU
    return p


def paper_figures(out: Path) -> list[Path]:
    """Simulate Figures 1-3 of the paper, print utilizations, write the PNGs."""
    from ..plot.gantt import count, plot_schedule, plot_schedules, timeline_title  # pyplot: only when drawing

    machine = Machine(PAPER_SMS)
    print(f"The paper's examples, {PAPER_SMS} SMs, ideal costs (a=b=d=0, c=1):")
    print(f"  {'figure':<10} {'decomposition':<15} {'shape':<12} {'tile':<12} {'grid':>4} {'makespan':>8} "
          f"{'utilization':>11}  paper")
    written = []
    for file, fig, name, shape, tile, options, paper in FIGURES:
        t = simulate(make_schedule(name, GemmShape.parse(shape), TileShape.parse(tile), machine, **options))
        print(f"  {fig:<10} {name:<15} {shape:<12} {tile:<12} {t.schedule.grid:>4} {t.makespan:>8g} "
              f"{t.utilization:>11.2f}  {paper:.2f}")
        written.append(plot_schedule(t, out / file, f"The paper's {fig}: {timeline_title(t)}"))
    shape, tile = GemmShape(896, 384, 128), TileShape(128, 128, 4)
    timelines = [simulate(make_schedule(name, shape, tile, machine)) for name in HYBRIDS]
    for t in timelines:
        print(f"  {'Figure 3':<10} {t.schedule.decomposition:<15} {str(shape):<12} {str(tile):<12} "
              f"{t.schedule.grid:>4} {t.makespan:>8g} {t.utilization:>11.2f}")
    written.append(plot_schedules(timelines, out / "fig3-hybrids-896x384x128.png",
                                  suptitle="The paper's Figure 3: basic Stream-K vs the hybrids, 896x384x128, "
                                           f"128x128x4 tiles, {count(PAPER_SMS, 'SM')}, ideal costs"))
    timelines = [simulate(make_schedule(name, shape, tile, machine), FIXUP_COSTS) for name in HYBRIDS]
    print(f"  with costs a,b,c,d = {FIXUP_COSTS}: " + ", ".join(
        f"{t.schedule.decomposition} makespan {t.makespan:g} (wait {t.total_wait:g})" for t in timelines))
    written.append(plot_schedules(timelines, out / "fig3-hybrids-896x384x128-costs.png",
                                  suptitle=f"The paper's Figure 3 with costs a,b,c,d = {FIXUP_COSTS}: partial "
                                           f"stores, waits and fixups take time"))
    return written


def corpus_landscapes(out: Path, count: int, seed: int, sms: int) -> list[Path]:
    """Sweep ``count`` corpus shapes on ``sms`` SMs twice (ideal costs, then the model's default
    constants, under which fixups cost time), print a summary, write the landscape PNGs."""
    from ..plot.landscape import decompositions, load_sweep_csv, plot_landscape, speedup_vs_dp

    started = time.perf_counter()
    csv_path = run_sweep(out / "sweep.csv", count, seed, CORPUS_TILE, sms, 1, None, IDEAL, table=False)
    costed = load_sweep_csv(run_sweep(out / "sweep-costs.csv", count, seed, CORPUS_TILE, sms, 1, None, AUTO_COSTS,
                                      table=False))
    rows = load_sweep_csv(csv_path)
    took = time.perf_counter() - started
    print(f"\nCorpus sample: {count} shapes (seed {seed}), {sms} SMs, {CORPUS_TILE} tiles, swept twice in {took:.1f} s "
          f"-> {csv_path} (ideal costs), {out / 'sweep-costs.csv'} (costs a,b,c,d = {AUTO_COSTS})")
    speed, speed_costed = speedup_vs_dp(rows), speedup_vs_dp(costed)

    def geo(table, name) -> str:
        return "-" if name not in table or not len(table[name][1]) else f"{math.exp(np.log(table[name][1]).mean()):.3f}"

    def dead(table, name) -> int:
        return int(((table["decomposition"] == name) & table["deadlock"]).sum())

    print(f"  {'':<15} {'ideal costs':^42} {'costs ' + str(AUTO_COSTS):^32}")
    print(f"  {'decomposition':<15} {'mean util':>9} {'geomean speedup vs DP':>22} {'deadlocks':>9} "
          f"{'geomean speedup vs DP':>22} {'deadlocks':>9}")
    for name in decompositions(rows):  # a speedup leaves deadlocked shapes out: their count sits beside it
        ok = (rows["decomposition"] == name) & ~rows["deadlock"]
        print(f"  {name:<15} {rows['utilization'][ok].mean():>9.3f} {geo(speed, name):>22} {dead(rows, name):>9} "
              f"{geo(speed_costed, name):>22} {dead(costed, name):>9}")
    print("  (ideal costs: only MAC iterations take time, so every full-grid Stream-K variant balances perfectly;\n"
          "   with fixup costs, splitting tiles costs time and auto's model picks where it pays off)")
    return [plot_landscape(table, out / f"landscape-{metric}{suffix}.png", metric)
            for table, suffix in ((rows, ""), (costed, "-costs")) for metric in METRICS]


def gpu_check() -> bool:
    """A few GEMMs through the GPU backend, checked against float64; True unless one fails."""
    try:
        from .. import gpu  # noqa: PLC0415 (optional backend)
    except ImportError as exc:
        print(f"\nGPU check skipped: streamk.gpu cannot be imported ({exc})")
        return True
    ok, why = gpu.available()
    if not ok:
        print(f"\nGPU check skipped: {why}")
        return True
    m, n, k = GPU_SHAPE
    print(f"\nGPU check on {why}: {m}x{n}x{k} fp16 -> fp32 against a float64 reference")
    rng = np.random.default_rng(0)
    A = rng.standard_normal((m, k)).astype(np.float16)
    B = rng.standard_normal((k, n)).astype(np.float16)
    ref = A.astype(np.float64) @ B.astype(np.float64)
    eps = float(np.finfo(np.float32).eps)
    bound = 4 * math.sqrt(k) * eps * (np.abs(A.astype(np.float64)) @ np.abs(B.astype(np.float64))) + eps * np.abs(ref)
    passed = True
    for name in GPU_DECOMPS:
        try:
            C = np.asarray(gpu.gemm(A, B, schedule=name), dtype=np.float64)
        except StreamkError as exc:
            print(f"  {name:<15} FAILED: {exc}")
            passed = False
            continue
        err = np.abs(C - ref)
        good = bool(np.all(err <= bound))
        passed &= good
        print(f"  {name:<15} max |C - ref| {err.max():.2e}, worst error / bound {np.max(err / bound):.2f}: "
              f"{'ok' if good else 'FAIL'}")
    return passed


def run(args: argparse.Namespace) -> int:
    gpu = not (args.no_gpu or args.quick)
    if gpu:
        env.device_ordinal()  # a bad STREAMK_DEVICE is one line now, not a traceback after the plots
    out: Path = make_folder(args.out)
    count = args.count or (QUICK_COUNT if args.quick else CORPUS_COUNT)
    sms = QUICK_SMS if args.quick else CORPUS_SMS
    written = paper_figures(out)
    written += corpus_landscapes(out, count, args.seed, sms)
    passed = gpu_check() if gpu else True
    print(f"\n{len(written)} plots written to {out}/:")
    for path in written:
        print(f"  {path.name}")
    return 0 if passed else 1
