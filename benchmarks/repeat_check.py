"""Run GEMMs again and again, each on fresh operands and checked against float64, to catch a wrong C
that shows only now and then (issue 42's seed-4791 parity run stopped on one: LOG.md v154).

    PYTHONPATH=. python3 benchmarks/repeat_check.py --shapes 2048x4096x14336 [--linear] [--repeats 200]
        [--after 2048x14336x4096,...] [--clear]

Each repeat makes A (m x k) and B (k x n; with --linear W.t() for W stored n x k) on the current
stream, runs ``--after`` shapes first (the launches that ran before the failing one), prepares the
GEMM on a fresh C and runs it on the current stream (no cross-stream order to get wrong; with
``--side-stream`` on a stream of its own with no order, as the parity harness did before v154), then
compares. ``--clear`` drops streamk's caches before each repeat, as the parity command does between
shapes. Prints every failure (shape, repeat, relative error, the launch's steps) and a count.
"""

from __future__ import annotations

import argparse
import sys

import torch

from streamk.gpu import prepare
from streamk.gpu.runtime.device_runtime import clear_cache

MAX_RELERR = 1e-2


def run_once(m: int, n: int, k: int, linear: bool, side: torch.cuda.Stream | None = None) -> tuple[float, str]:
    x = torch.randn(m, k, device="cuda").half()
    b = torch.randn(n, k, device="cuda").half().t() if linear else torch.randn(k, n, device="cuda").half()
    out = torch.full((m, n), float("nan"), device="cuda")
    ref = x.double() @ b.double()
    p = prepare(x, b, out)
    if side is None:
        p.run()
    else:  # the pre-v154 parity harness: its own stream, no order after the operands were made
        p.run(side.cuda_stream)
        side.synchronize()
    err = float((out.double() - ref).norm() / ref.norm())
    return err, "+".join(p.launch.names)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--shapes", required=True, help="MxNxK,...")
    ap.add_argument("--after", default="", help="MxNxK,... run before each repeat of each shape")
    ap.add_argument("--linear", action="store_true", help="B = W.t() with W stored n x k (x @ W.t())")
    ap.add_argument("--repeats", type=int, default=200)
    ap.add_argument("--clear", action="store_true", help="clear streamk's caches before each repeat")
    ap.add_argument("--side-stream", action="store_true",
                    help="run on a stream of its own with no order after the operands' (the old harness)")
    args = ap.parse_args()
    shapes = [tuple(int(v) for v in s.split("x")) for s in args.shapes.split(",")]
    after = [tuple(int(v) for v in s.split("x")) for s in args.after.split(",") if s]
    failures = 0
    side = torch.cuda.Stream() if args.side_stream else None
    for m, n, k in shapes:
        for r in range(args.repeats):
            if args.clear:
                clear_cache()
            for shape in after:
                run_once(*shape, args.linear)
            err, steps = run_once(m, n, k, args.linear, side)
            if not err <= MAX_RELERR:
                failures += 1
                print(f"{m}x{n}x{k} repeat {r}: relative error {err:.2e} ({steps})", flush=True)
        print(f"{m}x{n}x{k}: {args.repeats} repeats done", flush=True)
    print(f"{failures} wrong of {len(shapes) * args.repeats}")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
