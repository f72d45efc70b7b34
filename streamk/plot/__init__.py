"""Plots (matplotlib, Agg backend, PNG): wave schedules of simulated Timelines and corpus landscapes.

* ``gantt.plot_schedule(timeline, path)``: one Timeline as the paper's Figures 1-3 draw it;
  ``gantt.plot_schedules(timelines, path)`` stacks several with a shared time axis (Figure 4).
* ``landscape.plot_landscape(rows, path, metric)``: utilization against arithmetic intensity,
  mean utilization over (m*n, k), or speedup over data-parallel, from ``streamk sweep`` rows
  (``landscape.load_sweep_csv``).
"""

from .gantt import plot_schedule, plot_schedules
from .landscape import METRICS, load_sweep_csv, plot_landscape

__all__ = ["plot_schedule", "plot_schedules", "plot_landscape", "load_sweep_csv", "METRICS"]
