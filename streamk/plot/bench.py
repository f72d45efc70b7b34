"""GPU benchmark results (the CSV `streamk bench` writes) as pictures, not a table of 400 rows.

Three panels, each point one corpus shape:

* auto (and every other variant) against our data-parallel kernel, over the tile count: where
  Stream-K pays (few tiles, deep k) and where auto rightly stays DP;
* our auto against cuBLAS on the raw and on the zero-padded shape, over the problem's flops;
* TFLOP/s of cuBLAS (raw, padded) and ours against arithmetic intensity.

The last two are panels of their own (``draw_vs_cublas``, ``draw_throughput``: the paper's
Figure 7 and its "roofline" Figures 5-6), which benchmarks/reproduce_figures.py lays out per dtype.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Mapping, Sequence

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import matplotlib.ticker  # noqa: E402
import numpy as np  # noqa: E402

from ..errors import InputError  # noqa: E402
from .csvfile import column, read_rows  # noqa: E402
from .figure import save  # noqa: E402
from .landscape import DPI, INTENSITY_BINS, LINE_STYLES, MARKERS, binned  # noqa: E402

BIG = (8192, 8192, 8192)  # the bench's --big shape, left out of the corpus panels
TILE = 128  # the FP16 kernel's tile edge (tile counts on the first panel)
BASE = ("cublas_raw", "cublas_padded")
Rows = Mapping[str, np.ndarray]


def load_bench_csv(path: str | Path) -> dict[str, np.ndarray]:
    """Columns of a `streamk bench` CSV (times in ms) as float arrays; text columns dropped. A
    file that is not such a CSV raises InputError naming what is wrong."""
    fields, records = read_rows(path, ["m", "n", "k"], "streamk bench")
    shapes = np.stack([column(path, records, c, int, np.int64) for c in "mnk"], axis=1)
    records = [r for r, shape in zip(records, shapes.tolist()) if tuple(shape) != BIG]
    if not records:
        raise InputError(f"{path} has no corpus rows, only {BIG[0]}^3; run streamk bench with --count N")
    out: dict[str, np.ndarray] = {}
    for key in fields:
        try:
            out[key] = np.array([float(r[key]) if r[key] != "" else math.nan for r in records])
        except (TypeError, ValueError):
            continue  # kernel names, dtypes
    return out


def variants(rows: Rows) -> list[str]:
    """Our decompositions in the CSV: the columns with a grid."""
    return [key[: -len("_grid")] for key in rows if key.endswith("_grid")]


def geomean(values: np.ndarray) -> float:
    """The geometric mean of the finite values."""
    values = np.asarray(values, dtype=float)
    return math.exp(float(np.mean(np.log(values[np.isfinite(values)]))))


def tflops(rows: Rows, key: str) -> np.ndarray:
    """TFLOP/s of column ``key`` (milliseconds) on each shape: 2mnk / time."""
    return 2 * rows["m"] * rows["n"] * rows["k"] / rows[key] / 1e9


def plain_log(axis: matplotlib.axis.Axis) -> None:
    """A log axis labelled 1, 2.5, 5 times powers of ten as plain numbers (no 3x10^1, no overlaps)."""
    axis.axes.set(**{f"{axis.axis_name}scale": "log"})
    axis.set_major_locator(matplotlib.ticker.LogLocator(base=10, subs=(1.0, 2.5, 5.0)))
    axis.set_major_formatter(matplotlib.ticker.FormatStrFormatter("%g"))
    axis.set_minor_formatter(matplotlib.ticker.NullFormatter())


def decades_log(axis: matplotlib.axis.Axis) -> None:
    """A log axis over many decades: a tick per power of ten, labelled in SI prefixes (10M, 1G):
    1-2.5-5 ticks over four decades print a dozen long labels that run into each other."""
    axis.axes.set(**{f"{axis.axis_name}scale": "log"})
    axis.set_major_locator(matplotlib.ticker.LogLocator(base=10, subs=(1.0,)))
    axis.set_major_formatter(matplotlib.ticker.EngFormatter(sep=""))
    axis.set_minor_formatter(matplotlib.ticker.NullFormatter())


PLAIN_LOG_DECADES = 2.0  # an axis spanning more decades than this gets decades_log, not plain_log


def draw_throughput(ax: plt.Axes, rows: Rows, keys: Sequence[str], labels: Mapping[str, str] | None = None, *,
                    log_y: bool = True, medians: bool = False) -> None:
    """The roofline layout: TFLOP/s of each column in ``keys`` against arithmetic intensity (the
    CSV's flop per compulsory byte), one marker per shape; with ``medians`` a line through each
    column's median in log-spaced intensity bins (its own line style: coinciding columns stay
    apart), and the markers fainter."""
    labels = labels or {}
    intensity = rows["intensity"]
    bins = np.geomspace(intensity.min(), intensity.max() * 1.0001, INTENSITY_BINS + 1)
    for i, key in enumerate(keys):
        style = {"color": plt.get_cmap("tab10").colors[i % 10], "marker": MARKERS[i % len(MARKERS)]}
        rate = tflops(rows, key)
        label = labels.get(key, key.replace("_", " "))
        ax.scatter(intensity, rate, s=10, alpha=0.35 if medians else 0.6, label=None if medians else label, **style)
        if medians:
            ok = np.isfinite(rate)
            ax.plot(np.sqrt(bins[:-1] * bins[1:]), binned(intensity[ok], rate[ok], bins), linewidth=2,
                    linestyle=LINE_STYLES[i % len(LINE_STYLES)], markersize=5, label=label, **style)
    plain_log(ax.xaxis)
    if log_y:
        plain_log(ax.yaxis)
    ax.set_xlabel("arithmetic intensity (flop per compulsory byte)")
    ax.set_ylabel("TFLOP/s")


def draw_vs_cublas(ax: plt.Axes, rows: Rows, ours: str, x: np.ndarray, xlabel: str, *,
                   threshold: float | None = None) -> None:
    """cuBLAS time / ``ours`` time on each shape (above 1: ours faster) against ``x``, for cuBLAS on
    the raw and on the padded shape, geomeans in the legend; with ``threshold`` (flop/B) also the
    geomean of the shapes above it, and a vertical line there."""
    above = rows["intensity"] > threshold if threshold is not None else None
    for base, marker in zip(BASE, ("o", "s")):
        ratio = rows[base] / rows[ours]
        label = f"vs cuBLAS {base.split('_')[-1]} (geomean {geomean(ratio):.2f}"
        if above is not None and above.any():
            label += f"; {geomean(ratio[above]):.2f} above {threshold:g} flop/B"
        ax.scatter(x, ratio, s=12, marker=marker, alpha=0.6, label=label + ")")
    ax.axhline(1.0, color="k", lw=0.8)
    if threshold is not None:
        ax.axvline(threshold, color="grey", lw=0.8, linestyle="--")
    wide = np.log10(np.max(x) / np.min(x)) > PLAIN_LOG_DECADES
    (decades_log if wide else plain_log)(ax.xaxis)
    plain_log(ax.yaxis)
    ax.set_xlabel(xlabel)
    ax.set_ylabel(f"cuBLAS time / {ours} time")
    ax.legend(fontsize=8)


def plot_bench(rows: Rows, path: str | Path, title: str = "") -> Path:
    """Draw the three panels to ``path`` (PNG); returns the path."""
    ours = variants(rows)
    if "data-parallel" not in ours:
        raise InputError("the CSV has no data-parallel column: run the bench with data-parallel among --decomps")
    m, n = rows["m"], rows["n"]
    tiles = np.ceil(m / TILE) * np.ceil(n / TILE)
    best = "auto" if "auto" in ours else ours[-1]
    fig, axes = plt.subplots(1, 3, figsize=(15, 4.4))

    ax = axes[0]
    for i, d in enumerate(v for v in ours if v != "data-parallel"):
        ax.scatter(tiles, rows["data-parallel"] / rows[d], s=12, marker=MARKERS[i % len(MARKERS)], alpha=0.7, label=d)
    ax.axhline(1.0, color="k", lw=0.8)
    ax.set_xscale("log")
    ax.set_xlabel("output tiles (128x128)")
    ax.set_ylabel("speedup over our data-parallel")
    ax.set_title("Stream-K where tiles are few")
    ax.legend(fontsize=8)

    draw_vs_cublas(axes[1], rows, best, 2 * m * n * rows["k"], "flops of the problem")
    axes[1].set_title(f"{best} against cuBLAS (above 1: ours faster)")

    draw_throughput(axes[2], rows, list(BASE) + (["data-parallel", best] if best != "data-parallel" else [best]))
    axes[2].set_title("throughput")
    axes[2].legend(fontsize=8)

    if title:
        fig.suptitle(title)
    fig.tight_layout()
    return save(fig, path, DPI)
