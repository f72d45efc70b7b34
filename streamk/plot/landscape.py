"""Corpus landscapes from sweep rows: utilization and speedup over thousands of GEMM shapes.

Input is the CSV ``streamk sweep --out FILE.csv`` writes (one row per shape and decomposition,
columns at least ``m,n,k,decomposition,grid,makespan,utilization,deadlock``), loaded into a dict
of NumPy columns. Three figures:

* ``utilization``: per decomposition, utilization against arithmetic intensity, as the paper's
  "roofline" landscapes (Figures 10-11) plot percent of peak against flop/byte;
* ``map``: per decomposition, mean utilization over (m*n, k) in hexagonal bins;
* ``speedup``: speedup over data-parallel (makespan_dp / makespan, same shape) as a CDF per
  decomposition and as a binned median against arithmetic intensity.
Deadlocked rows are left out of every panel and counted in its label.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Callable, Mapping

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import matplotlib.ticker  # noqa: E402
import numpy as np  # noqa: E402

from ..errors import InputError  # noqa: E402
from . import METRICS  # noqa: E402
from .csvfile import column, number, read_rows  # noqa: E402
from .figure import save  # noqa: E402

DPI = 110  # dots per inch of the PNGs
PANEL_IN = (3.3, 2.6)  # width, height in inches of one small-multiple panel
PANEL_COLUMNS = 4  # small multiples per row
INTENSITY_BINS = 14  # log-spaced arithmetic-intensity bins of the speedup medians
MIN_BIN_COUNT = 5  # a bin with fewer shapes gets no median point
HEXBIN_GRID = 24  # hexagons across the log(m*n) axis of the utilization map
IN_BYTES, OUT_BYTES = 2, 4  # fp16 inputs, fp32 output: the paper's FP16->32 GEMM
LINE_STYLES = ("-", "--", "-.", ":")  # cycled per decomposition: equal speedups would hide each other
MARKERS = ("o", "s", "^", "v", "D", "P", "X", "*")
_TRUE = {"1", "true", "True", "TRUE", "yes"}

Rows = Mapping[str, np.ndarray]


def load_sweep_csv(path: str | Path) -> dict[str, np.ndarray]:
    """Read a sweep CSV into columns: m, n, k, grid (int), makespan, utilization (float),
    decomposition (str), deadlock (bool); other columns are kept as strings. A file that is not
    such a CSV raises InputError naming what is wrong."""
    need = ["m", "n", "k", "decomposition", "makespan", "utilization", "deadlock"]
    fields, records = read_rows(path, need, "streamk sweep --out FILE.csv")
    cols: dict[str, np.ndarray] = {}
    for name in fields:
        if name in ("m", "n", "k", "grid"):
            cols[name] = column(path, records, name, _whole, np.int64)
        elif name in ("makespan", "utilization"):
            cols[name] = column(path, records, name, number, float)
        elif name == "deadlock":
            cols[name] = np.array([r[name] in _TRUE for r in records], dtype=bool)
        else:
            cols[name] = np.array([r[name] for r in records], dtype=object)
    return cols


def _whole(text: str) -> int:
    value = int(text)
    if value < 1:
        raise ValueError(text)
    return value


def arithmetic_intensity(m: np.ndarray, n: np.ndarray, k: np.ndarray) -> np.ndarray:
    """flop/byte of C = A @ B with fp16 A, B and fp32 C: 2mnk / (2(mk + kn) + 4mn)."""
    m, n, k = (np.asarray(v, dtype=float) for v in (m, n, k))
    return 2 * m * n * k / (IN_BYTES * (m * k + k * n) + OUT_BYTES * m * n)


def decompositions(rows: Rows) -> list[str]:
    """Decomposition names in the order they first appear."""
    return list(dict.fromkeys(rows["decomposition"].tolist()))


def _color(names: list[str], name: str):
    return plt.get_cmap("tab10").colors[names.index(name) % 10]


def _style(names: list[str], name: str) -> dict:
    """Colour, line style and marker of a decomposition, so that coinciding curves stay apart."""
    i = names.index(name)
    return {"color": _color(names, name), "linestyle": LINE_STYLES[i % len(LINE_STYLES)],
            "marker": MARKERS[i % len(MARKERS)]}


def speedup_vs_dp(rows: Rows) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """Per decomposition (data-parallel left out): (arithmetic intensity, makespan_dp / makespan)
    of each shape that both ran without deadlock."""
    names = decompositions(rows)
    if "data-parallel" not in names:
        raise InputError("speedup needs data-parallel rows in the sweep (got only "
                         f"{', '.join(names)}); sweep with --decomp data-parallel,...")
    key = [f"{a}x{b}x{c}" for a, b, c in zip(rows["m"].tolist(), rows["n"].tolist(), rows["k"].tolist())]
    key = np.array(key, dtype=object)
    dec, ok = rows["decomposition"], ~rows["deadlock"] & np.isfinite(rows["makespan"])
    is_dp = (dec == "data-parallel") & ok
    dp_time = dict(zip(key[is_dp].tolist(), rows["makespan"][is_dp].tolist()))
    ai = arithmetic_intensity(rows["m"], rows["n"], rows["k"])
    out = {}
    for name in names:
        if name == "data-parallel":
            continue
        sel = np.flatnonzero((dec == name) & ok)
        base = np.array([dp_time.get(kk, math.nan) for kk in key[sel].tolist()])
        good = np.isfinite(base)
        out[name] = (ai[sel][good], base[good] / rows["makespan"][sel][good])
    return out


def binned(x: np.ndarray, y: np.ndarray, bins: np.ndarray, stat: Callable[[np.ndarray], float] = np.median,
           min_count: int = MIN_BIN_COUNT) -> np.ndarray:
    """``stat`` (default the median) of the ``y`` whose ``x`` falls in each bin (edges ``bins``);
    NaN for a bin of fewer than ``min_count`` points."""
    which = np.digitize(x, bins) - 1
    return np.array([stat(y[which == b]) if (which == b).sum() >= min_count else np.nan
                     for b in range(len(bins) - 1)])


def _small_multiples(count: int, *, sharey: bool = True):
    cols = min(PANEL_COLUMNS, count)
    nrows = -(-count // cols)
    fig, axes = plt.subplots(nrows, cols, figsize=(PANEL_IN[0] * cols, PANEL_IN[1] * nrows + 0.6),
                             sharex=True, sharey=sharey, squeeze=False)
    for ax in axes.flat[count:]:
        ax.set_visible(False)
    return fig, axes


def _finish(fig, path: str | Path, dpi: int) -> Path:
    return save(fig, path, dpi)


def _label_outer(axes, count: int, xlabel: str, ylabel: str) -> None:
    cols = axes.shape[1]
    for i, ax in enumerate(axes.flat[:count]):
        if i % cols == 0:
            ax.set_ylabel(ylabel)
        if i + cols >= count:  # no visible panel below this one
            ax.set_xlabel(xlabel)
            ax.xaxis.set_tick_params(labelbottom=True)


def _subtitle(rows: Rows) -> str:
    """"2,000 GEMM shapes, 108 SMs, tile 128x128x32, costs a,b,c,d = 0,0,1,0 (ideal)": the
    machine, tile and cost model from the sweep CSV's columns (older CSVs lack them)."""
    shapes = len({(a, b, c) for a, b, c in zip(rows["m"].tolist(), rows["n"].tolist(), rows["k"].tolist())})
    parts = [f"{shapes:,} GEMM shapes"]
    if "sms" in rows:
        per_sm = str(rows["ctas_per_sm"][0]) if "ctas_per_sm" in rows else "1"
        parts.append(f"{rows['sms'][0]} SMs" + (f" x {per_sm} CTA slots" if per_sm != "1" else ""))
    if "tile" in rows:
        parts.append(f"tile {rows['tile'][0]}")
    if "costs" in rows:
        costs = str(rows["costs"][0])
        parts.append(f"costs a,b,c,d = {costs}" + (" (ideal)" if costs == "0,0,1,0" else ""))
    return ", ".join(parts)


def coinciding(curves: Mapping[str, np.ndarray]) -> dict[str, str]:
    """For each curve equal to an earlier one, that earlier curve's name."""
    same: dict[str, str] = {}
    names = list(curves)
    for i, name in enumerate(names):
        for earlier in names[:i]:
            if earlier not in same and np.array_equal(curves[name], curves[earlier]):
                same[name] = earlier
                break
    return same


def plot_utilization(rows: Rows, path: str | Path, *, dpi: int = DPI) -> Path:
    """Per decomposition: utilization vs arithmetic intensity (the paper's roofline landscapes)."""
    names = decompositions(rows)
    fig, axes = _small_multiples(len(names))
    ai = arithmetic_intensity(rows["m"], rows["n"], rows["k"])
    for ax, name in zip(axes.flat, names):
        sel = (rows["decomposition"] == name) & ~rows["deadlock"]
        dead = int(((rows["decomposition"] == name) & rows["deadlock"]).sum())
        util = rows["utilization"][sel]
        ax.scatter(ai[sel], util, s=3, alpha=0.35, color=_color(names, name), linewidths=0, rasterized=True)
        ax.set_xscale("log")
        ax.set_ylim(0, 1.05)
        ax.grid(linestyle=":", linewidth=0.6)
        note = f", {dead} deadlocked" if dead else ""
        ax.set_title(f"{name}\nmean {util.mean():.3f}{note}" if len(util) else f"{name}\n(no rows)", fontsize=9)
    _label_outer(axes, len(names), "arithmetic intensity (flop/byte, fp16->fp32)", "utilization")
    fig.suptitle(f"Simulated utilization landscape (cf. the paper's Figure 5 rooflines)\n{_subtitle(rows)}",
                 fontsize=11)
    fig.tight_layout()
    return _finish(fig, path, dpi)


def plot_utilization_map(rows: Rows, path: str | Path, *, dpi: int = DPI) -> Path:
    """Per decomposition: mean utilization in hexagonal bins over log(m*n) and log(k)."""
    names = decompositions(rows)
    fig, axes = _small_multiples(len(names))
    mn = rows["m"].astype(float) * rows["n"]
    k = rows["k"].astype(float)
    extent = (np.log10(mn.min()), np.log10(mn.max()), np.log10(k.min()), np.log10(k.max()))
    art = None
    for ax, name in zip(axes.flat, names):
        sel = (rows["decomposition"] == name) & ~rows["deadlock"]
        art = ax.hexbin(mn[sel], k[sel], C=rows["utilization"][sel], reduce_C_function=np.mean, xscale="log",
                        yscale="log", gridsize=HEXBIN_GRID, extent=extent, vmin=0, vmax=1, cmap="viridis",
                        mincnt=1, linewidths=0.2)
        ax.set_title(f"{name}\nmean {rows['utilization'][sel].mean():.3f}" if sel.any() else name, fontsize=9)
    _label_outer(axes, len(names), "m x n (output elements)", "k")
    fig.suptitle(f"Mean simulated utilization over the paper's Figure 4 domain (m*n, k)\n{_subtitle(rows)}",
                 fontsize=11)
    fig.tight_layout(rect=(0, 0, 0.92, 1))
    if art is not None:
        cax = fig.add_axes((0.935, 0.15, 0.015, 0.7))
        fig.colorbar(art, cax=cax, label="utilization")
    return _finish(fig, path, dpi)


def plot_speedup(rows: Rows, path: str | Path, *, dpi: int = DPI) -> Path:
    """Speedup over data-parallel: CDF per decomposition, and median against arithmetic intensity."""
    return _finish(speedup_figure(rows), path, dpi)


def speedup_figure(rows: Rows) -> plt.Figure:
    """The figure ``plot_speedup`` writes."""
    names = decompositions(rows)
    speed = speedup_vs_dp(rows)
    fig, (cdf, med) = plt.subplots(1, 2, figsize=(12.5, 4.8))
    all_ai = arithmetic_intensity(rows["m"], rows["n"], rows["k"])
    shapes = len(all_ai) // max(len(names), 1)
    nbins = int(np.clip(shapes // (2 * MIN_BIN_COUNT), 2, INTENSITY_BINS))  # sparse sweeps: wider bins
    bins = np.geomspace(all_ai.min(), all_ai.max() * 1.0001, nbins + 1)
    centers = np.sqrt(bins[:-1] * bins[1:])
    same = coinciding({name: s for name, (_, s) in speed.items()})
    for order, (name, (ai, s)) in enumerate(speed.items()):
        if not len(s):
            continue
        style = _style(names, name)
        width = max(2.6 - 0.45 * order, 0.8)  # earlier curves drawn wider: a coinciding later one stays visible
        geo = float(np.exp(np.log(s).mean()))
        faster = f"faster on {100 * (s > 1.0 + 1e-9).mean():.0f}% of shapes"
        dead = int(((rows["decomposition"] == name) & rows["deadlock"]).sum())
        faster += f", {dead} deadlocked left out" if dead else ""
        label = f"{name} (= {same[name]})" if name in same else f"{name} (geomean {geo:.3f}, {faster})"
        xs = np.sort(s)
        cdf.step(xs, np.arange(1, len(xs) + 1) / len(xs), where="post", color=style["color"],
                 linestyle=style["linestyle"], linewidth=width, label=label)
        medians = binned(ai, s, bins, min_count=min(MIN_BIN_COUNT, len(s)))
        med.plot(centers, medians, markersize=4 + 2.5 * max(3 - order, 0), fillstyle="none", linewidth=width,
                 label=f"{name} (= {same[name]})" if name in same else name, **style)
    if same:
        note = "; ".join(f"{a} = {b}" for a, b in same.items())
        med.text(0.0, -0.24, f"Coinciding curves (same speedup on every shape),\ndrawn over each other: {note}",
                 transform=med.transAxes, va="top", fontsize=8, style="italic")  # under the panel, beside the legend
    cdf.axvline(1.0, color="black", linewidth=0.8)
    med.axhline(1.0, color="black", linewidth=0.8)
    for ax in (cdf, med):
        ax.grid(linestyle=":", linewidth=0.6)
    cdf.set_xscale("log")
    cdf.xaxis.set_major_locator(matplotlib.ticker.LogLocator(base=10, subs=(1.0, 2.0, 5.0)))
    cdf.xaxis.set_major_formatter(lambda x, _: f"{x:g}x")
    cdf.xaxis.set_minor_formatter(matplotlib.ticker.NullFormatter())  # minor labels overlap on short ranges
    cdf.set_xlabel("speedup over data-parallel (makespan_dp / makespan)")
    cdf.set_ylabel("% of shapes at or below this speedup")
    cdf.yaxis.set_major_formatter(lambda y, _: f"{100 * y:.0f}%")
    cdf.set_title("CDF of speedup vs data-parallel", fontsize=10)
    # below the panel: inside, wherever it went, it hid some curve (auto's and CUTLASS's start low right)
    cdf.legend(fontsize=7.5, loc="upper left", bbox_to_anchor=(0.0, -0.22), borderaxespad=0.0, frameon=False)
    med.set_xscale("log")
    med.set_xlim(bins[0], bins[-1])
    med.set_xlabel("arithmetic intensity (flop/byte, fp16->fp32)")
    med.set_ylabel("median speedup over data-parallel")
    med.set_title("Median speedup by arithmetic intensity", fontsize=10)
    med.legend(fontsize=7.5, loc="best")
    fig.suptitle(f"Simulated speedup over data-parallel (cf. the paper's Table 2, vs CUTLASS data-parallel)\n"
                 f"{_subtitle(rows)}", fontsize=11)
    fig.tight_layout()
    return fig


def plot_landscape(rows: Rows, path: str | Path, metric: str = "utilization", *, dpi: int = DPI) -> Path:
    """One of the landscapes by name: ``utilization``, ``speedup`` or ``map``."""
    plots = {"utilization": plot_utilization, "speedup": plot_speedup, "map": plot_utilization_map}
    if metric not in plots:
        raise InputError(f"metric must be one of {', '.join(METRICS)} (got {metric!r})")
    return plots[metric](rows, path, dpi=dpi)
