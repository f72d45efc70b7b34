"""Plots: wave schedules of simulated timelines and corpus landscapes are written as PNGs of the
expected pixel size; the plot and demo CLIs run end to end on tiny settings."""

from __future__ import annotations

import csv
import struct
from pathlib import Path

import numpy as np
import pytest

from streamk import GemmShape, Machine, TileShape, make_schedule
from streamk.cli import main
from streamk.plot import load_sweep_csv, plot_landscape, plot_schedule, plot_schedules
from streamk.plot.landscape import arithmetic_intensity, speedup_vs_dp
from streamk.sched import names
from streamk.sim import simulate

PAPER = GemmShape(384, 384, 128)


def png_size(path: Path) -> tuple[int, int]:
    """(width, height) in pixels from the PNG's IHDR chunk."""
    data = Path(path).read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n", f"{path} is not a PNG"
    return struct.unpack(">II", data[16:24])


def timeline(name: str, tile: str, sms: int = 4, shape: GemmShape = PAPER, **options):
    return simulate(make_schedule(name, shape, TileShape.parse(tile), Machine(sms), **options))


def test_schedule_png_has_one_row_per_slot(tmp_path):
    t = timeline("stream-k", "128x128x4", grid=4)
    path = plot_schedule(t, tmp_path / "sk.png")
    # 11 in wide at 110 dpi; 4 rows x 0.42 in + title 0.35 + axis 0.55 + legend 0.45 = 3.03 in
    assert png_size(path) == (1210, 333)
    assert path.stat().st_size > 10_000


def test_stacked_schedules_share_one_figure(tmp_path):
    shape = GemmShape(896, 384, 128)
    ts = [timeline(n, "128x128x4", shape=shape) for n in ("stream-k", "dp-one-tile-sk", "two-tile-sk-dp")]
    path = plot_schedules(ts, tmp_path / "fig4.png", suptitle="896x384x128")
    # 3 panels x 4 rows x 0.42 + 2 gaps x 0.45 + title 0.35 + suptitle 0.3 + 1.0 = 7.59 in
    assert png_size(path) == (1210, 834)


def test_deadlocked_timeline_still_plots(tmp_path):
    t = timeline("stream-k", "128x128x4", sms=1, grid=2)
    assert t.deadlock
    path = plot_schedule(t, tmp_path / "dead.png")
    assert png_size(path)[0] == 1210 and path.stat().st_size > 5_000


def test_plot_schedules_rejects_mismatched_titles(tmp_path):
    with pytest.raises(ValueError, match="one title per timeline"):
        plot_schedules([timeline("data-parallel", "128x128x128")], tmp_path / "x.png", titles=["a", "b"])


# ---- landscapes ---------------------------------------------------------------------------
DECOMPS = ("data-parallel", "stream-k", "two-tile-sk-dp", "cutlass3-sk")
SHAPES = [(384, 384, 128), (1000, 700, 3000), (128, 4000, 512), (2048, 2048, 2048), (300, 300, 8000),
          (5000, 128, 200), (640, 1536, 1024), (777, 333, 4444)]


@pytest.fixture(scope="module")
def sweep_csv(tmp_path_factory) -> Path:
    """A sweep CSV with `streamk sweep --out`'s columns, timed by the event simulator (the reference)."""
    path = tmp_path_factory.mktemp("sweep") / "sweep.csv"
    tile, machine = TileShape(128, 128, 32), Machine(8)
    with open(path, "w", newline="") as fh:
        out = csv.writer(fh)
        out.writerow(["m", "n", "k", "decomposition", "grid", "makespan", "utilization", "deadlock"])
        for m, n, k in SHAPES:
            for name in DECOMPS:
                t = simulate(make_schedule(name, GemmShape(m, n, k), tile, machine))
                out.writerow([m, n, k, name, t.schedule.grid, t.makespan, t.utilization, t.deadlock])
    return path


def test_load_sweep_csv_types_columns(sweep_csv):
    rows = load_sweep_csv(sweep_csv)
    assert rows["m"].dtype == np.int64 and len(rows["m"]) == len(SHAPES) * len(DECOMPS)
    assert rows["deadlock"].dtype == bool and not rows["deadlock"].any()
    assert set(rows["decomposition"].tolist()) == set(DECOMPS)


def test_speedup_is_dp_makespan_over_makespan(sweep_csv):
    rows = load_sweep_csv(sweep_csv)
    ai, s = speedup_vs_dp(rows)["stream-k"]
    dp = rows["makespan"][rows["decomposition"] == "data-parallel"]
    sk = rows["makespan"][rows["decomposition"] == "stream-k"]
    assert np.allclose(s, dp / sk)
    assert np.allclose(ai, arithmetic_intensity(*(np.array(SHAPES).T)))


def test_arithmetic_intensity_fp16_in_fp32_out():
    # 2*128^3 flop over (2*(128*128*2) + 4*128*128) bytes = 4194304 / 131072 = 32
    assert arithmetic_intensity(128, 128, 128) == pytest.approx(32.0)


@pytest.mark.parametrize("metric, size", [("utilization", (1452, 352)), ("map", (1452, 352)),
                                          ("speedup", (1375, 528))])
def test_landscape_png_sizes(sweep_csv, tmp_path, metric, size):
    path = plot_landscape(load_sweep_csv(sweep_csv), tmp_path / f"{metric}.png", metric)
    # within 10%: the saved box is the drawn content's (legends and notes below a panel count)
    assert png_size(path) == pytest.approx(size, rel=0.1) and path.stat().st_size > 20_000


def test_landscape_without_data_parallel_rows_names_the_fix(sweep_csv, tmp_path):
    rows = load_sweep_csv(sweep_csv)
    keep = rows["decomposition"] != "data-parallel"
    rows = {k: v[keep] for k, v in rows.items()}
    with pytest.raises(ValueError, match="--decomp data-parallel"):
        plot_landscape(rows, tmp_path / "s.png", "speedup")


# ---- CLI ----------------------------------------------------------------------------------
def test_cli_plot_schedule_writes_png(tmp_path, capsys):
    out = tmp_path / "fs.png"
    assert main(["plot", "schedule", "fixed-split", "--shape", "384x384x128", "--tile", "128x128x64",
                 "--sms", "4", "--splits", "2", "--out", str(out)]) == 0
    assert "utilization 0.9000" in capsys.readouterr().out
    assert png_size(out) == (1210, 333)


def test_cli_plot_landscape_from_csv(sweep_csv, tmp_path):
    out = tmp_path / "speedup.png"
    assert main(["plot", "landscape", "--csv", str(sweep_csv), "--metric", "speedup", "--out", str(out)]) == 0
    assert png_size(out) == pytest.approx((1375, 528), rel=0.1)


def test_cli_plot_landscape_needs_csv_or_sms(tmp_path, capsys):
    with pytest.raises(SystemExit) as exc:
        main(["plot", "landscape", "--out", str(tmp_path / "x.png")])
    assert exc.value.code == 2
    assert "--csv" in capsys.readouterr().err


@pytest.mark.slow(10)
def test_cli_demo_writes_the_paper_figures_and_landscapes(tmp_path, capsys):
    assert main(["demo", "--out", str(tmp_path), "--quick", "--count", "12"]) == 0
    captured = capsys.readouterr()
    out = captured.out
    assert (captured.out + captured.err).count("mean util") == 1  # each sweep's table once: the demo's own
    lines = {line.split()[1]: line.split() for line in out.splitlines() if line.strip().startswith("Figure 1")}
    assert lines["1a"][-2:] == ["0.75", "0.75"] and lines["1b"][-2:] == ["0.90", "0.90"]
    assert "Figure 2b  stream-k" in out and f"plots written to {tmp_path}/" in out
    pngs = sorted(p.name for p in tmp_path.glob("*.png"))
    landscapes = [f"landscape-{m}{s}.png" for m in ("map", "speedup", "utilization") for s in ("-costs", "")]
    assert pngs == ["fig1a-data-parallel-128x128x128.png", "fig1b-data-parallel-128x64x128.png",
                    "fig2a-fixed-split-s2.png", "fig2b-stream-k-g4.png", "fig3-hybrids-896x384x128-costs.png",
                    "fig3-hybrids-896x384x128.png", *sorted(landscapes)]
    assert png_size(tmp_path / "fig3-hybrids-896x384x128.png") == (1210, 834)
    assert all(line.split()[-1] in pngs for line in out.splitlines()[-len(pngs):])  # the listing names each file
    assert len(load_sweep_csv(tmp_path / "sweep.csv")["m"]) == 12 * len(names())  # every decomposition


def write_bench_csv(path: Path, with_dp: bool = True) -> Path:
    """A `streamk bench` CSV of six shapes (and the --big row, which the plot leaves out)."""
    ours = (["data-parallel"] if with_dp else []) + ["auto"]
    fields = ["m", "n", "k", "dtype", "intensity", "cublas_raw", "cublas_padded"] + \
        [f"{d}{suffix}" for d in ours for suffix in ("", "_grid", "_steps")]
    with open(path, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=fields)
        w.writeheader()
        for i, (m, n, k) in enumerate([(8192, 8192, 8192), (128, 256, 4096), (1000, 999, 1001), (3000, 2000, 500),
                                       (512, 512, 8000), (4096, 300, 129), (200, 7000, 3000)]):
            row = {"m": m, "n": n, "k": k, "dtype": "float16", "intensity": 2 * m * n * k / ((m * k + k * n) * 2 + m * n * 4),
                   "cublas_raw": 0.02 * (i + 1), "cublas_padded": 0.01 * (i + 1)}
            for j, d in enumerate(ours):
                row.update({d: 0.015 * (i + 1) / (1 + 0.2 * j), f"{d}_grid": 40 + j, f"{d}_steps": "streamk_sm80_f16"})
            w.writerow(row)
    return path


def test_bench_plot_leaves_out_the_big_row_and_writes_one_png(tmp_path):
    from streamk.plot import load_bench_csv, plot_bench

    rows = load_bench_csv(write_bench_csv(tmp_path / "bench.csv"))
    assert len(rows["m"]) == 6 and 8192 not in rows["k"]
    assert np.allclose(rows["data-parallel"] / rows["auto"], 1.2)
    width, height = png_size(plot_bench(rows, tmp_path / "bench.png", "title"))
    assert width > 3 * height > 0  # three panels side by side


def test_cli_plot_bench_needs_a_data_parallel_column(tmp_path, capsys):
    csv_path = write_bench_csv(tmp_path / "bench.csv", with_dp=False)
    with pytest.raises(SystemExit) as exc:
        main(["plot", "bench", "--csv", str(csv_path), "--out", str(tmp_path / "b.png")])
    assert exc.value.code == 2
    assert "data-parallel among --decomps" in capsys.readouterr().err
    good = write_bench_csv(tmp_path / "good.csv")
    assert main(["plot", "bench", "--csv", str(good), "--out", str(tmp_path / "b.png")]) == 0
    assert png_size(tmp_path / "b.png")[0] > 0


def test_throughput_panel_plots_each_shapes_flops_over_its_time(tmp_path):
    import matplotlib.pyplot as plt

    from streamk.plot import load_bench_csv
    from streamk.plot.bench import draw_throughput

    rows = load_bench_csv(write_bench_csv(tmp_path / "bench.csv"))
    fig, ax = plt.subplots()
    draw_throughput(ax, rows, ["cublas_padded", "auto"], {"auto": "ours"}, log_y=False, medians=True)
    flops = 2 * rows["m"] * rows["n"] * rows["k"]
    for points, key in zip(ax.collections, ("cublas_padded", "auto")):
        xy = points.get_offsets()
        assert np.allclose(xy[:, 0], rows["intensity"]) and np.allclose(xy[:, 1], flops / (rows[key] * 1e-3) / 1e12)
    assert ax.get_legend_handles_labels()[1] == ["cublas padded", "ours"]  # one entry per column: its median line
    assert (ax.get_xscale(), ax.get_yscale()) == ("log", "linear")
    plt.close(fig)


def test_vs_cublas_panel_plots_time_ratios_with_their_geomeans(tmp_path):
    import matplotlib.pyplot as plt

    from streamk.plot import load_bench_csv
    from streamk.plot.bench import draw_vs_cublas

    rows = load_bench_csv(write_bench_csv(tmp_path / "bench.csv"))
    fig, ax = plt.subplots()
    draw_vs_cublas(ax, rows, "auto", rows["intensity"], "intensity", threshold=200.0)
    labels = ax.get_legend_handles_labels()[1]
    above = rows["intensity"] > 200.0
    assert 0 < above.sum() < len(above)
    for points, label, base in zip(ax.collections, labels, ("cublas_raw", "cublas_padded")):
        ratio = rows[base] / rows["auto"]
        assert np.allclose(points.get_offsets()[:, 1], ratio)
        geo, geo_above = np.exp(np.log(ratio).mean()), np.exp(np.log(ratio[above]).mean())
        assert f"geomean {geo:.2f}; {geo_above:.2f} above 200 flop/B" in label
    plt.close(fig)


def test_binned_statistic_leaves_sparse_bins_empty():
    from streamk.plot.landscape import binned

    x, y, bins = np.array([1, 1, 1, 10, 10]), np.array([1.0, 2, 3, 5, 7]), np.array([0.5, 5, 50])
    assert binned(x, y, bins, min_count=2).tolist() == [2.0, 6.0]
    assert np.isnan(binned(x, y, bins, min_count=3)[1])
    assert binned(x, y, bins, np.max, min_count=1).tolist() == [3.0, 7.0]


def test_a_panel_cap_shrinks_the_rows_of_a_many_sm_schedule(tmp_path):
    t = timeline("stream-k", "128x128x32", sms=132, shape=GemmShape(1024, 1024, 1024))
    default = png_size(plot_schedules([t, t], tmp_path / "a.png"))
    capped = png_size(plot_schedules([t, t], tmp_path / "b.png", time_label="time (us)", max_panel_in=2.0))
    # 2 panels x 2.0 in + gap 0.45 + title 0.35 + axis and legend 1.0 = 5.8 in at 110 dpi (default: 8 in panels)
    assert capped == (1210, 638) and default[1] > 2 * capped[1]


# ---- rows, legend and files of the CLI ------------------------------------------------------

def test_idle_slots_get_no_row_and_rows_keep_their_slot_names(tmp_path):
    # 288 one-iteration CTAs: on 100,000 SMs (or 10^8 slots of 4 SMs) only 288 slots ever run one
    wide = timeline("stream-k", "128x128x4", sms=100_000)
    assert png_size(plot_schedule(wide, tmp_path / "wide.png")) == \
        png_size(plot_schedule(timeline("stream-k", "128x128x4", sms=288), tmp_path / "288.png"))
    import matplotlib.pyplot as plt
    from streamk.plot.gantt import draw_timeline

    deep = simulate(make_schedule("stream-k", PAPER, TileShape(128, 128, 4), Machine(4, 10**8)))
    fig, ax = plt.subplots(figsize=(11, 20))
    draw_timeline(ax, deep)
    labels = [t.get_text() for t in ax.get_yticklabels()]
    plt.close(fig)
    assert tuple(ax.get_ylim()) == (287.5, -0.5)  # 288 rows, not 4 * 10^8
    assert len(labels) > 10 and labels == [f"SM 0.{int(r)}" for r in ax.get_yticks()]  # SM 0, slot r


def test_a_schedule_on_more_slots_than_a_chart_shows_is_refused(tmp_path, monkeypatch):
    from streamk.errors import ScheduleError
    from streamk.plot import gantt

    monkeypatch.setattr(gantt, "MAX_ROWS", 10)
    with pytest.raises(ScheduleError, match="runs CTAs on 16 SM slots, more rows than a chart can show \\(10\\)"):
        plot_schedule(timeline("stream-k", "128x128x4", sms=16), tmp_path / "x.png")


@pytest.mark.parametrize("sms, height_in, named", [(72, 4.0, False), (36, 30.0, True)])
def test_the_legend_says_labels_name_tiles_only_where_they_do(sms, height_in, named):
    import matplotlib.pyplot as plt
    from streamk.plot.gantt import _legend, draw_timeline

    t = timeline("data-parallel", "128x128x4", sms=sms, shape=GemmShape(128 * 9, 128 * 8, 128))  # 72 tiles
    fig, ax = plt.subplots(figsize=(11, height_in))
    assert draw_timeline(ax, t) is named  # rows of 4 in / 72 are too thin for a label
    _legend(fig, [t], named)
    mac = fig.legends[0].get_texts()[0].get_text()
    plt.close(fig)
    assert "colours repeat every 60 tiles" in mac and ("labels name the tile" in mac) is named


def test_cli_plot_landscape_never_overwrites_a_csv_it_was_not_given(tmp_path, capsys):
    out, beside = tmp_path / "mine.png", tmp_path / "mine.csv"
    beside.write_text("precious\n")
    with pytest.raises(SystemExit) as exc:
        main(["plot", "landscape", "--out", str(out), "--count", "5", "--sms", "108"])
    err = capsys.readouterr().err
    assert exc.value.code == 2 and beside.read_text() == "precious\n" and not out.exists()
    assert err.startswith("streamk plot landscape: error: ") and f"pass --csv {beside}" in err
    beside.unlink()  # absent: the sweep's rows are kept there, as --help says
    assert main(["plot", "landscape", "--out", str(out), "--count", "5", "--sms", "108"]) == 0
    assert beside.read_text().startswith("m,n,k,decomposition") and png_size(out)[0] > 0
    five = len(beside.read_text().splitlines())
    # the command again (3 shapes): the CSV there is a sweep's, so it is written afresh
    assert main(["plot", "landscape", "--out", str(out), "--count", "3", "--sms", "108"]) == 0
    assert len(beside.read_text().splitlines()) - 1 == (five - 1) * 3 // 5
    main_help = pytest.raises(SystemExit, main, ["plot", "landscape", "--help"])
    assert main_help.value.code == 0 and "kept beside it as FILE.csv" in " ".join(capsys.readouterr().out.split())


@pytest.mark.parametrize("argv, head", [
    (["plot", "landscape", "--count", "1000000000", "--sms", "108"], "streamk plot landscape: error: a sweep of"),
    (["plot", "schedule", "stream-k", "--shape", "384x384x128"], "streamk plot schedule: error: give the machine"),
])
def test_cli_plot_errors_name_the_plot_command(argv, head, tmp_path, capsys):
    with pytest.raises(SystemExit) as exc:
        main([*argv, "--out", str(tmp_path / "x.png")])
    err = capsys.readouterr().err
    assert exc.value.code == 2 and err.startswith(head) and err.rstrip().endswith(f"(see {head.split(':')[0]} --help)")
