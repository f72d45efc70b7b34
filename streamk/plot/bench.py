"""GPU benchmark results (the CSV `streamk bench` writes) as pictures, not a table of 400 rows.

Three panels, each point one corpus shape:

* auto (and every other variant) against our data-parallel kernel, over the tile count: where
  Stream-K pays (few tiles, deep k) and where auto rightly stays DP;
* our auto against cuBLAS on the raw and on the zero-padded shape, over the problem's flops;
* TFLOP/s of cuBLAS (raw, padded) and ours against arithmetic intensity.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Mapping

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import matplotlib.ticker  # noqa: E402
import numpy as np  # noqa: E402

from ..errors import InputError  # noqa: E402
from .csvfile import column, read_rows  # noqa: E402
from .landscape import DPI, MARKERS  # noqa: E402

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


def plot_bench(rows: Rows, path: str | Path, title: str = "") -> Path:
    """Draw the three panels to ``path`` (PNG); returns the path."""
    ours = variants(rows)
    if "data-parallel" not in ours:
        raise InputError("the CSV has no data-parallel column: run the bench with data-parallel among --decomps")
    m, n, k = rows["m"], rows["n"], rows["k"]
    flops = 2 * m * n * k
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

    ax = axes[1]
    for base, marker in zip(BASE, ("o", "s")):
        ratio = rows[base] / rows[best]
        gm = math.exp(float(np.mean(np.log(ratio))))
        ax.scatter(flops, ratio, s=12, marker=marker, alpha=0.7, label=f"{base.replace('_', ' ')} (geomean {gm:.2f})")
    ax.axhline(1.0, color="k", lw=0.8)
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_yticks([0.25, 0.5, 1, 2, 4])
    ax.yaxis.set_major_formatter(matplotlib.ticker.FormatStrFormatter("%g"))
    ax.yaxis.set_minor_formatter(matplotlib.ticker.NullFormatter())
    ax.set_xlabel("flops of the problem")
    ax.set_ylabel(f"cuBLAS time / {best} time")
    ax.set_title(f"{best} against cuBLAS (above 1: ours faster)")
    ax.legend(fontsize=8)

    ax = axes[2]
    intensity = rows["intensity"]
    for i, key in enumerate(list(BASE) + ["data-parallel", best] if best != "data-parallel" else list(BASE) + [best]):
        ax.scatter(intensity, flops / rows[key] / 1e9, s=10, marker=MARKERS[i % len(MARKERS)], alpha=0.6,
                   label=key.replace("_", " "))
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("arithmetic intensity (flop per compulsory byte)")
    ax.set_ylabel("TFLOP/s")
    ax.set_title("throughput")
    ax.legend(fontsize=8)

    if title:
        fig.suptitle(title)
    fig.tight_layout()
    out = Path(path)
    out.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(out, dpi=DPI)
    plt.close(fig)
    return out
