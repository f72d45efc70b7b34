"""Host time of the CPU part of a first ``streamk.gpu.gemm()`` call for a new shape (issue 15).

    PYTHONPATH=. .venv/bin/python benchmarks/plan_build.py [--reps 20] [--target h100]

Per shape and stage (tile choice, ``auto`` schedule, fixup plan, finish check, table), the median
of ``--reps`` builds in microseconds, as ``gpu.plan`` runs them for ``schedule="auto"``, FP16, on
the target's Target (nothing on this path is cached by shape, so every build is a first one).
No GPU needed. Goal: a total of at most 400 us per shape.
"""

from __future__ import annotations

import argparse
import statistics
import time

from streamk.dispatch import dispatch_verdict, waits_only_backward
from streamk.fixup import plan_fixup
from streamk.gpu.select import choose_tile, schedule_for
from streamk.gpu.table import build_table
from streamk.shapes import GemmShape
from streamk.target import Target, preset

SHAPES = ((64, 64, 64), (128, 128, 128), (1000, 999, 1001), (1024, 1024, 1024), (4096, 4096, 4096),
          (3000, 5000, 700))
STAGES = ("tile", "schedule", "fixup", "dispatch", "table")


def build_once(shape: GemmShape, target: Target) -> dict[str, float]:
    """One cold plan build of ``shape``: seconds per stage."""
    t0 = time.perf_counter()
    tile = choose_tile(shape, "float16", target)
    t1 = time.perf_counter()
    schedule = schedule_for("auto", shape, "float16", target, tile=tile)
    t2 = time.perf_counter()
    plan = plan_fixup(schedule)
    t3 = time.perf_counter()
    if not waits_only_backward(plan):
        dispatch_verdict(plan, schedule.machine.sms * schedule.machine.ctas_per_sm)
    t4 = time.perf_counter()
    build_table(plan)
    t5 = time.perf_counter()
    return {stage: b - a for stage, a, b in zip(STAGES, (t0, t1, t2, t3, t4), (t1, t2, t3, t4, t5))}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--reps", type=int, default=20)
    ap.add_argument("--target", type=preset, default=preset("h100"))
    args = ap.parse_args()
    for m, n, k in SHAPES:  # warm-up: imports, lazily built tables, NumPy's first calls
        build_once(GemmShape(m, n, k), args.target)
    print(f"{'shape':>16} " + " ".join(f"{s:>9}" for s in STAGES) + f" {'total':>9}   (us, median of {args.reps})")
    for m, n, k in SHAPES:
        runs = [build_once(GemmShape(m, n, k), args.target) for _ in range(args.reps)]
        med = {s: statistics.median(r[s] for r in runs) * 1e6 for s in STAGES}
        total = statistics.median(sum(r.values()) for r in runs) * 1e6
        print(f"{f'{m}x{n}x{k}':>16} " + " ".join(f"{med[s]:9.1f}" for s in STAGES) + f" {total:9.1f}")


if __name__ == "__main__":
    main()
