"""The paper's figures on the H100: its roofline scatters (Figures 5-6) and speedup over cuBLAS
(Figure 7) from `streamk bench` CSVs measured on the GPU, and its wave schedules (Figures 1-3) and
the appendix's Figure 8 under the H100 calibration of the simulator (no GPU needed).

    python benchmarks/reproduce_figures.py roofline --f16 benchmarks/data/bench_h100_f16_tables.csv.gz \\
        --f64 benchmarks/data/bench_h100_f64_tables.csv.gz --out docs/img/h100-roofline.png
    python benchmarks/reproduce_figures.py speedup --f16 benchmarks/data/bench_h100_f16_tables.csv.gz \\
        --f64 benchmarks/data/bench_h100_f64_tables.csv.gz --out docs/img/h100-speedup-vs-cublas.png
    python benchmarks/reproduce_figures.py waves --out docs/img/h100-waves-calibrated.png \\
        --csv benchmarks/data/h100_waves_calibrated.csv
    python benchmarks/reproduce_figures.py model --out docs/img/h100-fig8-model.png \\
        --csv benchmarks/data/h100_fig8_model.csv

Each subcommand prints the numbers its figure shows (docs/reproduction.md quotes them).
"""

from __future__ import annotations

import argparse
import csv

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

from streamk import GemmShape, TileShape, make_schedule  # noqa: E402
from streamk.calibrate.model import Calibration  # noqa: E402
from streamk.calibrate.predict import calibrated_timeline as predicted_timeline, predict_us  # noqa: E402
from streamk.costs import AUTO_COSTS, Costs, model_grid, model_time  # noqa: E402
from streamk.gpu.decide.schedule import schedule_for  # noqa: E402
from streamk.plot import load_bench_csv, plot_schedules  # noqa: E402
from streamk.plot.bench import BIG, draw_throughput, draw_vs_cublas, geomean, plain_log, tflops  # noqa: E402
from streamk.plot.gantt import count  # noqa: E402
from streamk.plot.csvfile import read_rows  # noqa: E402
from streamk.plot.landscape import DPI, INTENSITY_BINS, binned  # noqa: E402
from streamk.schedule import Schedule  # noqa: E402
from streamk.shapes import Problem  # noqa: E402
from streamk.sim import Timeline, simulate  # noqa: E402
from streamk.target import preset  # noqa: E402

# The paper's compute-bound thresholds (section 6): FP16->32 above 400 flop/B, FP64 above 150.
THRESHOLD = {"float16": 400.0, "float64": 150.0}
LABELS = {"cublas_padded": "cuBLAS, shape padded to multiples of 8", "cublas_raw": "cuBLAS, raw shape",
          "data-parallel#128x128": "ours: data-parallel 128x128x32", "data-parallel": "ours: data-parallel 64x64x16",
          "auto#128x128": "ours: auto on 128x128x32 only (one Stream-K kernel)", "auto": "ours: auto"}
OURS = {("float16", "auto"): "auto (any tile, sm80 and sm90 kernels)",
        ("float16", "auto#128x128"): "auto#128x128 (the one 128x128x32 Stream-K kernel)",
        ("float64", "auto"): "auto (the one 64x64x16 kernel)"}
SERIES = {"float16": "cublas_padded;cublas_raw;data-parallel#128x128;auto#128x128;auto",
          "float64": "cublas_padded;cublas_raw;data-parallel;auto"}


def bench(path: str) -> tuple[dict, float]:
    """A bench CSV's corpus rows, and cuBLAS's padded TFLOP/s on its 8192^3 row (the ceiling)."""
    _, records = read_rows(path, ["m", "n", "k", "cublas_padded"], "streamk bench --big")
    big = [r for r in records if (int(r["m"]), int(r["n"]), int(r["k"])) == BIG]
    return load_bench_csv(path), (2 * BIG[0] ** 3 / float(big[0]["cublas_padded"]) / 1e9 if big else float("nan"))


def roofline(args: argparse.Namespace) -> None:
    fig, axes = plt.subplots(1, 2, figsize=(15, 5.6))
    print(f"{'dtype':8} {'series':22} {'median TFLOP/s':>14} {'above thr.':>10} {'p90/p10 in a bin':>16}")
    for ax, path, dtype in zip(axes, (args.f16, args.f64), ("float16", "float64")):
        rows, ceiling = bench(path)
        keys = (args.f16_series if dtype == "float16" else args.f64_series).split(";")
        draw_throughput(ax, rows, keys, LABELS, log_y=False, medians=True)
        ax.axhline(ceiling, color="black", linestyle="--", linewidth=0.8, label=f"cuBLAS at 8192^3: {ceiling:.0f}")
        ax.axvline(THRESHOLD[dtype], color="grey", linestyle=":", linewidth=0.8)
        bins = np.geomspace(rows["intensity"].min(), rows["intensity"].max() * 1.0001, INTENSITY_BINS + 1)
        above = rows["intensity"] > THRESHOLD[dtype]
        for key in keys:  # the paper's claim: Stream-K's band is narrower at any intensity than DP's
            rate = tflops(rows, key)
            spread = binned(rows["intensity"], rate, bins, lambda v: np.percentile(v, 90) / np.percentile(v, 10))
            print(f"{dtype:8} {key:22} {np.median(rate):14.1f} {np.median(rate[above]):10.1f} "
                  f"{np.nanmedian(spread):16.2f}")
        ax.set_title(f"{dtype}: {len(rows['m'])} corpus shapes, H100 SXM (markers: shapes; lines: medians\n"
                     f"per intensity bin; dotted: the paper's compute-bound threshold, {THRESHOLD[dtype]:g} flop/B)",
                     fontsize=10)
        ax.legend(fontsize=8, loc="upper left")
    fig.suptitle("The paper's Figures 5-6 on an H100: GEMM throughput against arithmetic intensity", fontsize=12)
    save(fig, args.out)


def speedup(args: argparse.Namespace) -> None:
    panels = [(args.f16, "float16", ours) for ours in args.f16_ours.split(";")] + [(args.f64, "float64", "auto")]
    fig, axes = plt.subplots(1, len(panels), figsize=(6.2 * len(panels), 5.4), sharey=True)
    print(f"{'dtype':8} {'ours':13} {'vs':14} {'geomean':>7} {'above thr.':>10} {'min':>5} {'max':>5} "
          f"{'ours faster above thr.':>22}")
    for ax, (path, dtype, ours) in zip(axes, panels):
        rows, _ = bench(path)
        draw_vs_cublas(ax, rows, ours, rows["intensity"], "arithmetic intensity (flop per compulsory byte)",
                       threshold=THRESHOLD[dtype])
        above = rows["intensity"] > THRESHOLD[dtype]
        for base in ("cublas_padded", "cublas_raw"):
            r = rows[base] / rows[ours]
            print(f"{dtype:8} {ours:13} {base:14} {geomean(r):7.2f} {geomean(r[above]):10.2f} {r.min():5.2f} "
                  f"{r.max():5.2f} {int((r[above] >= 1).sum()):>12} of {int(above.sum())}")
        ax.set_title(f"{dtype}: {OURS.get((dtype, ours), ours)}\n{len(rows['m'])} shapes on an H100 SXM; above 1: "
                     f"ours faster; dashed: the paper's threshold", fontsize=10)
    fig.suptitle("The paper's Figure 7 on an H100: speedup over cuBLAS per shape", fontsize=12)
    save(fig, args.out)


def calibrated_timeline(schedule: Schedule, cal: Calibration, sms: int) -> tuple[Timeline, float, float]:
    """The simulation ``predict_us`` prices ``schedule`` by (streamk.calibrate.predict), its
    microseconds and the MAC iteration's cost it ran with; checked against ``predict_us``."""
    timeline, c = predicted_timeline(schedule, cal, sms)
    us = predict_us(schedule, cal, sms)
    if abs(us - cal.us("launch") - timeline.makespan) > 1e-6 * us:  # a policy with a second pass
        raise SystemExit(f"{schedule.decomposition}: predict_us {us} != launch + makespan {timeline.makespan}")
    return timeline, us, c


# The paper's Figures 1-3 (384x384x128 on 4 SMs) scaled to the H100: (figure, decomposition,
# tile (None: auto's own choice), options); --shape's default gives the same wave counts.
ROWS = [("1a", "data-parallel", "128x256x64", {}), ("1b", "data-parallel", "128x128x64", {}),
        ("2a", "fixed-split", "128x256x64", {"splits": 2}), ("2b", "stream-k", "128x256x64", {"grid": "sms"}),
        ("3b", "dp-one-tile-sk", "128x256x64", {}), ("3c", "two-tile-sk-dp", "128x256x64", {}),
        ("-", "auto", None, {}),
        ("1a", "data-parallel", "128x128x32", {}), ("2a", "fixed-split", "128x128x32", {"splits": 2}),
        ("2b", "stream-k", "128x128x32", {"grid": "sms"}), ("2b", "stream-k", "128x128x32", {}),
        ("3b", "dp-one-tile-sk", "128x128x32", {}), ("3c", "two-tile-sk-dp", "128x128x32", {}),
        ("-", "auto", "128x128x32", {})]
DRAWN = (0, 2, 3, 5)  # the rows drawn as wave schedules: Figures 1a, 2a, 2b and 3c on the sm90 tile


def waves(args: argparse.Namespace) -> None:
    target, shape = preset(args.target), GemmShape.parse(args.shape)
    out, drawn = [], []
    print(f"{shape} on {target.name} ({target.sms} SMs), float16, calibrated simulator")
    print(f"{'fig':4} {'decomposition':15} {'tile':11} {'grid':>5} {'slots':>7} {'ideal util':>10} "
          f"{'util':>5} {'predicted us':>12} {'TFLOP/s':>7}")
    for i, (fig, name, tile, options) in enumerate(ROWS):
        options = {k: target.sms if v == "sms" else v for k, v in options.items()}
        s = schedule_for(name, shape, "float16", target, tile=TileShape.parse(tile) if tile else None, **options)
        cal = target.kernel("float16", s.tile).calibration
        timeline, us, c = calibrated_timeline(s, cal, target.sms)
        machine = timeline.schedule.machine
        ideal = simulate(timeline.schedule).utilization
        util = s.problem.total_iters * c / (machine.slots * timeline.makespan)
        rate = 2 * shape.m * shape.n * shape.k / us / 1e6
        out.append({"figure": fig, "decomposition": name, "tile": str(s.tile), "grid": s.grid, "fixup": s.fixup,
                    "sms": machine.sms, "ctas_per_sm": machine.ctas_per_sm, "ideal_utilization": round(ideal, 4),
                    "calibrated_utilization": round(util, 4), "predicted_us": round(us, 2), "tflops": round(rate, 1),
                    "wait_us": round(timeline.total_wait, 2)})
        print(f"{fig:4} {name:15} {str(s.tile):11} {s.grid:>5} {machine.sms}x{machine.ctas_per_sm:<3} {ideal:>10.2f} "
              f"{util:>5.2f} {us:>12.1f} {rate:>7.0f}")
        if i in DRAWN:
            drawn.append((timeline, f"Figure {fig} on the H100: {name}, {s.tile} tiles ({s.problem.tiles}), "
                                    f"g={s.grid}: {us:.0f} us predicted, utilization {util:.2f} (ideal {ideal:.2f})"))
    write_csv(args.csv, out)
    plot_schedules([t for t, _ in drawn], args.out, [title for _, title in drawn],
                   suptitle=f"The paper's Figures 1-3 on an H100 ({target.sms} SMs): {shape} FP16, simulated with "
                            f"the calibrated constants", time_label="time (us, calibrated simulator)", max_panel_in=2.6)
    print(f"wrote {args.out}, {args.csv}")


def derived_costs(cal: Calibration, restart: bool = True) -> Costs:
    """The appendix model's constants from a calibration, in MAC iterations of a CTA alone on its
    SM: a, b (+ the mainloop restart a split CTA pays on its next tile), d over c1; c = 1."""
    c1 = cal.us("c1")
    return Costs(cal.us("a") / c1, (cal.us("b") + (cal.us("unit") if restart else 0.0)) / c1, 1.0, cal.us("d") / c1)


def model(args: argparse.Namespace) -> None:
    target, tile = preset(args.target), TileShape.parse(args.tile)
    kernel = target.kernel("float16", tile)
    cal, c1 = kernel.calibration, kernel.calibration.us("c1")
    models = {"paper": AUTO_COSTS, "calibrated": derived_costs(cal)}
    print(f"derived from the {target.name} calibration of float16 {tile}: a,b,c,d = {models['calibrated']} "
          f"(c1 = {c1:.4f} us); without the restart in b: {derived_costs(cal, False)}")
    picks = {"A100 paper": (preset("a100").sms, AUTO_COSTS), "AUTO_COSTS": (target.sms, AUTO_COSTS),
             "preset": (target.sms, kernel.model_costs), "calibrated": (target.sms, models["calibrated"]),
             "no restart": (target.sms, derived_costs(cal, False))}
    print(f"{'shape':15} {'tiles x ipt':>11} " + " ".join(f"{name:>10}" for name in [*picks, "simulator"])
          + "  simulator at the preset's / calibrated pick over its minimum")
    shapes = args.shapes.split(",")
    fig, axes = plt.subplots(1, len(shapes), figsize=(5.6 * len(shapes), 4.8), squeeze=False)
    out = []
    for ax, text in zip(axes[0], shapes):
        p = Problem(GemmShape.parse(text), tile)
        g = np.arange(1, min(target.sms, p.total_iters) + 1)
        curves = {f"model, {name} constants": model_time(p, g, costs) * c1 for name, costs in models.items()}
        curves["calibrated simulator"] = np.array(
            [predict_us(make_schedule("stream-k", p.shape, tile, target.machine("float16", tile), grid=int(x)),
                        cal, target.sms) for x in g])
        for name, y in curves.items():
            best = int(np.argmin(y))  # the first minimum: ties go to the smaller grid, as in model_grid
            line, = ax.plot(g, y, label=f"{name}: g = {g[best]}")
            ax.plot(g[best], y[best], marker="*", markersize=12, color=line.get_color())
        sim = curves["calibrated simulator"]
        chosen = [model_grid(p, sms, costs) for sms, costs in picks.values()] + [int(g[np.argmin(sim)])]
        print(f"{text:15} {p.tiles:>4} x {p.iters_per_tile:<4} " + " ".join(f"{x:>10}" for x in chosen)
              + f"  {sim[chosen[2] - 1] / sim.min():.3f} / {sim[chosen[3] - 1] / sim.min():.3f}")
        out += [{"shape": text, "grid": int(x), "model_paper_us": round(float(ys[0][j]), 3),
                 "model_calibrated_us": round(float(ys[1][j]), 3), "simulator_us": round(float(ys[2][j]), 3)}
                for ys in [list(curves.values())] for j, x in enumerate(g)]
        plain_log(ax.yaxis)
        ax.set(xlabel="grid size g (CTAs, one per SM)", ylabel=f"time (us; model: MAC iterations x c1 = {c1:.3f} us)",
               title=f"{text}: {count(p.tiles, 'tile')} x {p.iters_per_tile} iterations")
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize=8)
    fig.suptitle(f"The appendix's Figure 8 on an H100 ({target.sms} SMs, FP16 {tile}): Stream-K time against "
                 f"grid size (stars: each curve's minimum)", fontsize=12)
    write_csv(args.csv, out)
    save(fig, args.out)


def write_csv(path: str, rows: list[dict]) -> None:
    with open(path, "w", newline="") as fh:
        w = csv.DictWriter(fh, fieldnames=list(rows[0]))
        w.writeheader()
        w.writerows(rows)


def save(fig: plt.Figure, path: str) -> None:
    fig.tight_layout()
    fig.savefig(path, dpi=DPI)
    plt.close(fig)
    print(f"wrote {path}")


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], epilog=__doc__.split("\n\n")[1],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="figure", required=True)
    parsers = {}
    for name, fn, what in (
            ("roofline", roofline, "TFLOP/s against intensity, FP16 and FP64 panels (the paper's Figures 5-6)"),
            ("speedup", speedup, "cuBLAS time / ours per shape against intensity (the paper's Figure 7)"),
            ("waves", waves, "the paper's Figures 1-3 on an H100 shape, calibrated simulator: a table (CSV) of "
                             "utilization and predicted microseconds per decomposition, four wave schedules (PNG)"),
            ("model", model, "the appendix's Figure 8 with calibrated constants: the model's Stream-K time against "
                             "grid size with the paper's constants and with ones derived from the calibration, and "
                             "the calibrated simulator's prediction at each grid, minima marked")):
        parsers[name] = s = sub.add_parser(name, help=what.split(":")[0], description=what)
        s.add_argument("--out", required=True, help="the PNG to write")
        s.set_defaults(run=fn)
    for name in ("roofline", "speedup"):
        parsers[name].add_argument("--f16", required=True, help="a `streamk bench --big` CSV of float16")
        parsers[name].add_argument("--f64", required=True, help="a `streamk bench --dtype float64 --big` CSV")
    for name in ("waves", "model"):
        parsers[name].add_argument("--csv", required=True, help="the CSV to write")
        parsers[name].add_argument("--target", default="h100", help="the preset whose calibration prices schedules")
    for dtype in ("float16", "float64"):
        parsers["roofline"].add_argument(
            f"--{dtype.replace('float', 'f')}-series", default=SERIES[dtype],
            help=f"';'-separated columns to draw on the {dtype} panel (default {SERIES[dtype]})")
    parsers["speedup"].add_argument("--f16-ours", default="auto;auto#128x128",
                                    help="';'-separated float16 columns of ours, one panel each (FP64: auto)")
    parsers["waves"].add_argument(
        "--shape", default="3456x2816x4096",
        help="default: 27 x 11 tiles of 128x256, 2.25 waves on 132 SMs as the paper's 3 x 3 tiles on 4 SMs")
    parsers["model"].add_argument("--tile", default="128x128x32", help="the float16 kernel whose calibration is used")
    parsers["model"].add_argument("--shapes", default="256x3584x8192,1024x1024x1024,128x128x16384",
                                  help="comma-separated (default: the paper's three Figure 8 shapes)")
    args = p.parse_args()
    args.run(args)


if __name__ == "__main__":
    main()
