"""Predicted against measured time, one point per (shape, variant) of a fidelity run, log-log."""

from __future__ import annotations

import math
import textwrap
from pathlib import Path
from typing import Any, Sequence

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

from ..calibrate.fidelity import label  # noqa: E402
from ..errors import InputError  # noqa: E402
from .figure import save  # noqa: E402
from .landscape import DPI, MARKERS  # noqa: E402

TITLE_CHARS = 64  # characters per title line that fit the 7-inch figure at the default font size


def plot_fidelity(rows: Sequence[dict[str, Any]], path: str | Path, title: str = "") -> Path:
    """Scatter of predicted vs measured microseconds colored by variant, with the line y = x; PNG."""
    points: dict[str, tuple[list[float], list[float]]] = {}
    for r in rows:
        if r.get("error") or "measured_us" not in r:  # a run the backend refused has no time
            continue
        m, p = float(r["measured_us"]), float(r["predicted_us"])
        if m > 0 and p > 0 and math.isfinite(p):
            xs, ys = points.setdefault(label(r["variant"]), ([], []))
            xs.append(m)
            ys.append(p)
    if not points:
        raise InputError("no row has both a measured and a predicted time: nothing to plot")
    fig, ax = plt.subplots(figsize=(7, 6))
    colors = plt.get_cmap("tab10")
    for i, (name, (xs, ys)) in enumerate(points.items()):
        ax.scatter(xs, ys, s=12, alpha=0.7, color=colors(i % 10), marker=MARKERS[i % len(MARKERS)], label=name)
    everything = [v for xs, ys in points.values() for v in xs + ys]
    lo, hi = min(everything) / 1.2, max(everything) * 1.2
    ax.plot([lo, hi], [lo, hi], color="black", linewidth=0.8, label="predicted = measured")
    ax.set(xscale="log", yscale="log", xlim=(lo, hi), ylim=(lo, hi), xlabel="measured time (us, CUDA events)",
           ylabel="predicted time (us, calibrated simulator)",
           title=textwrap.fill(title or "Calibrated simulator vs GPU, per shape and decomposition", TITLE_CHARS))
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=7, loc="upper left")
    fig.tight_layout()
    return save(fig, path, DPI)
