"""Plots (matplotlib, Agg backend, PNG): wave schedules of simulated Timelines and corpus landscapes.

* ``gantt.plot_schedule(timeline, path)``: one Timeline as the paper's Figures 1-3 draw it;
  ``gantt.plot_schedules(timelines, path)`` stacks several with a shared time axis (Figure 4).
* ``landscape.plot_landscape(rows, path, metric)``: utilization against arithmetic intensity,
  mean utilization over (m*n, k), or speedup over data-parallel, from ``streamk sweep`` rows
  (``landscape.load_sweep_csv``).
* ``bench.plot_bench(rows, path)``: a GPU benchmark CSV (``streamk bench``; ``bench.load_bench_csv``)
  as speedup over our DP by tile count, ours vs cuBLAS by flops, and TFLOP/s by intensity;
  ``bench.draw_vs_cublas`` and ``bench.draw_throughput`` draw the last two on any axes.

Importing this package imports no matplotlib (``streamk --help`` must not pay ~0.4 s for
pyplot): each name below loads its module on first use.
"""

from __future__ import annotations

import importlib
from typing import Any

METRICS = ("utilization", "speedup", "map")  # the landscape figures, by --metric name

_HOME = {"plot_schedule": "gantt", "plot_schedules": "gantt", "plot_landscape": "landscape",
         "load_sweep_csv": "landscape", "plot_bench": "bench", "load_bench_csv": "bench"}

__all__ = ["METRICS", *_HOME]


def __getattr__(name: str) -> Any:
    if name not in _HOME:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(f".{_HOME[name]}", __name__), name)
