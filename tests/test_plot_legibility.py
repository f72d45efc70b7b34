"""Plots a reader needs no help with: tick labels that do not run into each other, legends that
hide no curve, titles that are not cut off."""

from __future__ import annotations

import struct
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

from streamk.plot import load_sweep_csv, plot_bench  # noqa: E402
from streamk.plot.bench import draw_vs_cublas  # noqa: E402
from streamk.plot.landscape import speedup_figure  # noqa: E402
from streamk.sim.corpus import corpus  # noqa: E402
from streamk.cli import main  # noqa: E402


def png_width(path: Path) -> int:
    return struct.unpack(">I", Path(path).read_bytes()[16:20])[0]


def bench_rows(count: int = 60) -> dict[str, np.ndarray]:
    """Bench-like columns over the corpus (flops spanning four decades), times made up."""
    m, n, k = (corpus(count, 3).astype(float)).T
    flops = 2 * m * n * k
    base = flops / 1e11 + 5e-3
    return {"m": m, "n": n, "k": k, "intensity": 2 * m * n * k / (2 * (m * k + k * n) + 4 * m * n),
            "cublas_raw": base * 1.6, "cublas_padded": base * 0.7, "data-parallel": base * 1.2, "auto": base,
            "data-parallel_grid": np.full(count, 132.0), "auto_grid": np.full(count, 132.0)}


def overlapping(labels) -> list[tuple[str, str]]:
    """Neighbouring tick labels whose boxes overlap along x."""
    boxes = sorted(((t.get_window_extent(), t.get_text()) for t in labels if t.get_visible() and t.get_text()),
                   key=lambda box_text: box_text[0].x0)
    return [(a, b) for (box_a, a), (box_b, b) in zip(boxes, boxes[1:]) if box_b.x0 < box_a.x1]


def test_the_vs_cublas_panel_labels_a_wide_flops_axis_without_overlaps():
    rows = bench_rows()
    flops = 2 * rows["m"] * rows["n"] * rows["k"]
    assert flops.max() / flops.min() > 1e3  # the corpus spans more than three decades of flops
    fig, ax = plt.subplots(figsize=(5, 4.4))  # a third of the bench figure's width
    draw_vs_cublas(ax, rows, "auto", flops, "flops of the problem")
    fig.canvas.draw()
    assert overlapping(ax.get_xticklabels()) == []
    assert len([t for t in ax.get_xticklabels() if t.get_text()]) >= 3  # still labelled
    plt.close(fig)


def test_the_speedup_cdf_legend_covers_no_curve(tmp_path):
    csv = tmp_path / "sweep.csv"
    assert main(["sweep", "--sms", "108", "--count", "300", "--costs", "32,32,1,8", "--out", str(csv)]) == 0
    fig = speedup_figure(load_sweep_csv(csv))
    fig.canvas.draw()
    cdf = fig.axes[0]
    legend = cdf.get_legend().get_window_extent()
    for line in cdf.get_lines():
        points = cdf.transData.transform(np.column_stack(line.get_data()))
        inside = (points[:, 0] > legend.x0) & (points[:, 0] < legend.x1) & \
                 (points[:, 1] > legend.y0) & (points[:, 1] < legend.y1)
        assert not inside.any(), f"the legend hides part of {line.get_label()!r}"
    plt.close(fig)


def test_a_long_title_widens_the_image_instead_of_being_cut_off(tmp_path):
    rows = bench_rows(20)
    short = png_width(plot_bench(rows, tmp_path / "short.png", "H100"))
    long = png_width(plot_bench(rows, tmp_path / "long.png", "H100 80GB HBM3, float16, 400 corpus shapes, " * 4))
    assert long > short
