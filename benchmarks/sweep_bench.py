"""Wall time of the full corpus sweep: every registered decomposition on the paper's 32,824 shapes.

    .venv/bin/python benchmarks/sweep_bench.py [--count N] [--tile 128x128x32] [--sms 108]

Prints seconds and shapes x decompositions per second, and how much went through the fast path.
The target (issue 4): <= 30 s on a 2-core machine, goal 10 s. Workers: STREAMK_SWEEP_WORKERS.
"""

from __future__ import annotations

import argparse
import time

from streamk import IDEAL, Costs, Machine, TileShape
from streamk.sim.corpus import CORPUS_SIZE, corpus
from streamk.sim.sweep import sweep


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--count", type=int, default=CORPUS_SIZE)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--tile", type=TileShape.parse, default=TileShape(128, 128, 32))
    ap.add_argument("--sms", type=int, default=108)
    ap.add_argument("--ctas-per-sm", type=int, default=1)
    ap.add_argument("--costs", type=Costs.parse, default=IDEAL)
    args = ap.parse_args()
    t0 = time.perf_counter()
    shapes = corpus(args.count, args.seed)
    result = sweep(shapes, args.tile, Machine(args.sms, args.ctas_per_sm), costs=args.costs)
    seconds = time.perf_counter() - t0
    pairs = len(shapes) * len(result.decompositions)
    fast = result.fast.mean()
    print(f"sweep: {len(shapes)} shapes x {len(result.decompositions)} decompositions "
          f"({', '.join(result.decompositions)}) on {args.sms} SMs x {args.ctas_per_sm}, tile {args.tile}, "
          f"costs {args.costs}")
    print(f"{seconds:.2f} s wall, {len(shapes) / seconds:,.0f} shapes/s, {pairs / seconds:,.0f} "
          f"shape-decompositions/s, {fast:.2%} on the fast path")


if __name__ == "__main__":
    main()
