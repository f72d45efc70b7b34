"""Plots (matplotlib, Agg backend, PNG): wave schedules of simulated Timelines and corpus landscapes.

* ``gantt.plot_schedule(timeline, path)``: one Timeline as the paper's Figures 1-3 draw it;
  ``gantt.plot_schedules(timelines, path)`` stacks several with a shared time axis (Figure 4).
* ``landscape.plot_landscape(rows, path, metric)``: utilization against arithmetic intensity,
  mean utilization over (m*n, k), or speedup over data-parallel, from ``streamk sweep`` rows
  (``landscape.load_sweep_csv``).
* ``bench.plot_bench(rows, path)``: a GPU benchmark CSV (``streamk bench``; ``bench.load_bench_csv``)
  as speedup over our DP by tile count, ours vs cuBLAS by flops, and TFLOP/s by intensity;
  ``bench.draw_vs_cublas`` and ``bench.draw_throughput`` draw the last two on any axes.
"""

from .bench import load_bench_csv, plot_bench
from .gantt import plot_schedule, plot_schedules
from .landscape import METRICS, load_sweep_csv, plot_landscape

__all__ = ["plot_schedule", "plot_schedules", "plot_landscape", "load_sweep_csv", "METRICS", "plot_bench",
           "load_bench_csv"]
