"""Which (b, d) constants (c = 1) make the appendix model reproduce its Figure 8 grid choices?

Scans b and d on a grid, runs `streamk.costs.model_grid` for the three Figure 8 problems on a
108-SM A100 with 128x128x32 tiles, and prints the region where all three choices come out
(108, 64, 8). `a` is added to every candidate grid alike, so it cannot change a choice.
Run: python benchmarks/auto_model_region.py
"""

from __future__ import annotations

import numpy as np

from streamk import AUTO_COSTS, Costs, GemmShape, Problem, TileShape
from streamk.costs import model_grid

FIGURE_8 = [((256, 3584, 8192), 108), ((1024, 1024, 1024), 64), ((128, 128, 16384), 8)]
A100_SMS = 108
TILE = TileShape(128, 128, 32)


def reproduces(costs: Costs) -> bool:
    return all(model_grid(Problem(GemmShape(*shape), TILE), A100_SMS, costs) == g for shape, g in FIGURE_8)


def main() -> None:
    bs = np.arange(0, 161, 1.0)
    ds = np.arange(0, 16.01, 0.25)
    ok = np.array([[reproduces(Costs(0.0, b, 1.0, d)) for d in ds] for b in bs])
    good_d = ds[ok.any(axis=0)]
    print(f"d (per peer) reproduces Figure 8 for d in [{good_d.min():g}, {good_d.max():g}] (step 0.25)")
    sums = sorted({b + d for i, b in enumerate(bs) for j, d in enumerate(ds) if ok[i, j]})
    print(f"b + d over the region: [{min(sums):g}, {max(sums):g}]")
    for d in (7.0, 8.0, 9.75):
        j = int(np.flatnonzero(ds == d)[0])
        good_b = bs[ok[:, j]]
        print(f"  d = {d:5g}: b in [{good_b.min():g}, {good_b.max():g}]")
    print(f"defaults {AUTO_COSTS}: reproduce = {reproduces(AUTO_COSTS)}")
    for a in (0.0, 1000.0):
        print(f"  with a = {a:g}: reproduce = {reproduces(Costs(a, AUTO_COSTS.b, AUTO_COSTS.c, AUTO_COSTS.d))}")


if __name__ == "__main__":
    main()
