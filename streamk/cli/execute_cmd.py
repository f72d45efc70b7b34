"""``streamk execute``: run a schedule on the CPU executor with random inputs and check it."""

from __future__ import annotations

import argparse
import time

import numpy as np

from ..executor import PRECISIONS, execute, round_to_bf16
from ..fixup import plan_fixup
from .common import add_decomposition_args, add_problem_args, positive_int, print_json, schedule_from


def add_parser(sub) -> argparse.ArgumentParser:
    p = sub.add_parser("execute", help="compute a GEMM on the CPU exactly as a schedule says, and check it",
                       description="Run the NumPy executor on random normal inputs (C poisoned with NaN "
                                   "first), compare with a float64 reference, and re-run with CTAs in "
                                   "shuffled orders to show whether the fixup policy is deterministic.")
    add_decomposition_args(p)
    add_problem_args(p)
    p.add_argument("--precision", choices=[k for k in PRECISIONS], default="fp16",
                   help="fp16 or bf16 inputs with fp32 accumulate, fp32, or fp64 (default fp16)")
    p.add_argument("--shuffles", type=positive_int, default=3, help="shuffled CTA orders to try (default 3)")
    p.add_argument("--seed", type=int, default=0, help="random seed (default 0)")
    p.add_argument("--json", action="store_true", help="print one JSON object")
    return p


def run(args: argparse.Namespace) -> int:
    schedule = schedule_from(args)
    m, n, k = schedule.shape.m, schedule.shape.n, schedule.shape.k
    rng = np.random.default_rng(args.seed)
    a, b = rng.standard_normal((m, k)), rng.standard_normal((k, n))
    if args.precision == "fp16":
        a, b = a.astype(np.float16), b.astype(np.float16)
    elif args.precision == "bf16":
        a, b = round_to_bf16(a.astype(np.float32)), round_to_bf16(b.astype(np.float32))
    elif args.precision == "fp32":
        a, b = a.astype(np.float32), b.astype(np.float32)
    start = time.perf_counter()
    out = execute(schedule, a, b, precision=args.precision)
    seconds = time.perf_counter() - start
    ref = a.astype(np.float64) @ b.astype(np.float64)
    rel = float(np.linalg.norm(out - ref) / np.linalg.norm(ref))
    identical = all(np.array_equal(out, execute(schedule, a, b, precision=args.precision,
                                                cta_order=rng.permutation(schedule.grid).tolist()))
                    for _ in range(args.shuffles))
    plan = plan_fixup(schedule)
    result = {"decomposition": schedule.decomposition, "shape": [m, n, k], "grid": schedule.grid,
              "fixup": plan.policy, "precision": args.precision, "split_tiles": int(len(plan.split_tiles)),
              "relative_error": rel, "max_abs_error": float(np.abs(out - ref).max()),
              "bitwise_identical_over_shuffles": identical, "shuffles": args.shuffles, "seconds": seconds}
    if args.json:
        print_json(result)
    else:
        print(f"{schedule.decomposition} {schedule.shape} grid {schedule.grid}, fixup {plan.policy}, "
              f"{len(plan.split_tiles)} split tiles, {args.precision}: relative error {rel:.2e} vs float64, "
              f"{'bitwise identical' if identical else 'NOT bitwise identical'} over {args.shuffles} shuffled "
              f"CTA orders ({seconds * 1e3:.0f} ms)")
    return 0
