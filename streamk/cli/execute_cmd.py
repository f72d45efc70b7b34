"""``streamk execute``: run a schedule on the CPU executor with random inputs and check it."""

from __future__ import annotations

import argparse
import sys
import time

import numpy as np

from ..executor import PRECISIONS, execute, round_to_bf16
from ..fixup import plan_fixup
from ..limits import PROGRESS_AFTER_S, check_memory, check_seconds
from ..sim import simulate
from .common import add_decomposition_args, add_problem_args, add_seed_arg, positive_int, print_json, schedule_from


def add_parser(sub) -> argparse.ArgumentParser:
    p = sub.add_parser("execute", description="Run the NumPy executor on random normal inputs (C poisoned with NaN "
                                   "first), compare with a float64 reference, and re-run with CTAs in "
                                   "shuffled orders to show whether the fixup policy is deterministic.")
    add_decomposition_args(p)
    add_problem_args(p)
    p.add_argument("--precision", choices=[k for k in PRECISIONS], default="fp16",
                   help="fp16 or bf16 inputs with fp32 accumulate, fp32, or fp64 (default fp16)")
    p.add_argument("--shuffles", type=positive_int, default=3, help="shuffled CTA orders to try (default 3)")
    add_seed_arg(p, what="random seed")
    p.add_argument("--json", action="store_true", help="print one JSON object")
    return p


# The NumPy executor's speed on one core (measured: 2048^3 fp16 in 1.6 s, 354 units):
FLOPS_PER_S = 5e9  # flop/s of its per-unit matmuls
UNIT_S = 50e-6  # seconds of Python bookkeeping per work unit
ARRAY_COPIES = 3  # float64 copies of A, B and C alive at once (inputs, rounded inputs, reference)


def check_size(m: int, n: int, k: int, units: int, runs: int) -> None:
    """Refuse an execute that would not fit in memory or would take longer than the limit."""
    what = f"execute of {m}x{n}x{k}"
    check_memory(8.0 * ARRAY_COPIES * (m * k + k * n + 2 * m * n), what)
    seconds = runs * (units * UNIT_S + 2.0 * m * n * k / FLOPS_PER_S)
    check_seconds(seconds, f"{what} ({units:,} work units, {runs} runs)", "use a smaller --shape or fewer --shuffles")


def run(args: argparse.Namespace) -> int:
    from tqdm import tqdm

    schedule = schedule_from(args)
    m, n, k = schedule.shape.m, schedule.shape.n, schedule.shape.k
    runs = 1 + args.shuffles
    check_size(m, n, k, len(schedule.units), runs)
    rng = np.random.default_rng(args.seed)
    a, b = rng.standard_normal((m, k)), rng.standard_normal((k, n))
    if args.precision == "fp16":
        a, b = a.astype(np.float16), b.astype(np.float16)
    elif args.precision == "bf16":
        a, b = round_to_bf16(a.astype(np.float32)), round_to_bf16(b.astype(np.float32))
    elif args.precision == "fp32":
        a, b = a.astype(np.float32), b.astype(np.float32)
    bar = tqdm(total=runs * len(schedule.units), unit="unit", desc="execute", file=sys.stderr, disable=None,
               delay=PROGRESS_AFTER_S)
    with bar:
        start = time.perf_counter()
        out = execute(schedule, a, b, precision=args.precision, progress=bar.update)
        seconds = time.perf_counter() - start
        ref = a.astype(np.float64) @ b.astype(np.float64)
        rel = float(np.linalg.norm(out - ref) / np.linalg.norm(ref))
        identical = all(np.array_equal(out, execute(schedule, a, b, precision=args.precision, progress=bar.update,
                                                    cta_order=rng.permutation(schedule.grid).tolist()))
                        for _ in range(args.shuffles))
    plan = plan_fixup(schedule)
    # The executor runs CTAs one after another in any order, so it cannot hang; whether the GPU's
    # in-order dispatch can is the simulator's verdict, given beside the numbers
    timeline = simulate(schedule)
    result = {"decomposition": schedule.decomposition, "shape": [m, n, k], "grid": schedule.grid,
              "fixup": plan.policy, "precision": args.precision, "split_tiles": int(len(plan.split_tiles)),
              "relative_error": rel, "max_abs_error": float(np.abs(out - ref).max()),
              "bitwise_identical_over_shuffles": identical, "shuffles": args.shuffles, "seconds": seconds,
              "deadlock": timeline.deadlock, "deadlock_reason": timeline.deadlock_reason or None}
    if args.json:
        print_json(result)
    else:
        print(f"{schedule.decomposition} {schedule.shape} grid {schedule.grid}, fixup {plan.policy}, "
              f"{len(plan.split_tiles)} split tiles, {args.precision}: relative error {rel:.2e} vs float64, "
              f"{'bitwise identical' if identical else 'NOT bitwise identical'} over {args.shuffles} shuffled "
              f"CTA orders ({seconds * 1e3:.0f} ms)")
        if timeline.deadlock:
            print(f"but with --sms {schedule.machine.sms} --ctas-per-sm {schedule.machine.ctas_per_sm} this schedule DEADLOCKS "
                  f"(streamk simulate: {timeline.deadlock_reason}); the CPU executor runs CTAs one at a time in "
                  f"any order, so it cannot show that")
    return 0
