"""``streamk gemm``: run one GEMM through a schedule on the GPU, check it, print time and TFLOP/s."""

from __future__ import annotations

import argparse
import math

import numpy as np

from ..errors import StreamkError
from ..limits import check_memory
from ..sched import get
from ..sched.registry import check_options
from ..schedule import FIXUP_POLICIES
from ..shapes import GemmShape
from .common import _typed, add_seed_arg, positive_int, print_json

CHECK_ROWS = 256  # rows of C compared with a float64 NumPy reference (all of them for small m)


def add_parser(sub) -> argparse.ArgumentParser:
    p = sub.add_parser("gemm", description="C = alpha*A@B + beta*C on the GPU with random normal inputs, executing "
                                   "the named decomposition; checks C against a float64 reference (error bound "
                                   "4 sqrt(k) eps |A||B| + eps |C|) and prints the median time and TFLOP/s "
                                   "(CUDA events). Needs an NVIDIA GPU and pip install -e \".[gpu]\".")
    p.add_argument("decomposition", metavar="DECOMP", nargs="?", default="auto",
                   help="a registered scheduler (default auto)")
    p.add_argument("--shape", required=True, type=_typed(GemmShape.parse), metavar="MxNxK",
                   help="GEMM problem size: A is MxK, B is KxN, C is MxN (e.g. 4096x4096x4096)")
    p.add_argument("--dtype", choices=["float16", "float64"], default="float16",
                   help="inputs (float16 -> float32 or, with --out-dtype, float16 C; float64 -> float64 C; bfloat16 "
                        "via the Python API)")
    p.add_argument("--out-dtype", choices=["float32", "float16", "float64"], default=None,
                   help="C's dtype: float32 for float16 inputs (default) or float16 (FP32 accumulation, one rounding "
                        "as C is written); float64 for float64 inputs")
    p.add_argument("--fixup", choices=FIXUP_POLICIES, default=None, help="fixup policy (default the schedule's)")
    p.add_argument("--grid", type=positive_int, help="stream-k grid")
    p.add_argument("--splits", type=positive_int, help="fixed-split factor")
    p.add_argument("--tile", default=None, metavar="TILE",
                   help="CTA tile (float16): 128, 64, 128x64, 64x128, 32x64, 32x32, 128x256, the GEMV tiles 64x8 "
                        "(n <= 8) and 8x128 (m <= 8), or on sm_90 128x128x64 and 128x256x64; default the paper's "
                        "128x128x32, or auto's choice by problem size for DECOMP auto")
    p.add_argument("--layout", choices=["RR", "RC", "CR", "CC"], default="RR",
                   help="A and B row- (R) or column-major (C) (default RR)")
    p.add_argument("--alpha", type=finite_float, default=1.0, help="scale of A@B (default 1)")
    p.add_argument("--beta", type=finite_float, default=0.0, help="scale of the C added (default 0)")
    p.add_argument("--reps", type=positive_int, default=50, help="timed repetitions (default 50)")
    add_seed_arg(p, what="random seed")
    p.add_argument("--json", action="store_true",
                   help="print one JSON object; its \"schedule\" is the Schedule that ran, in `streamk schedule "
                        "--json`'s form (compare it with `streamk schedule DECOMP --target GPU --json`)")
    return p


def finite_float(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not math.isfinite(value):
        raise argparse.ArgumentTypeError(f"must be a finite number (got {text!r})")
    return value


def check_arguments(args: argparse.Namespace) -> None:
    """Every argument error, the decomposition's name and options included, before the GPU is
    looked for: a typo is reported as a typo on a machine without one too."""
    from ..gpu.catalogue import SPECS, spec_for_tile
    from ..gpu.decide.operands import check_out_dtype

    get(args.decomposition)  # unknown decomposition: named as such
    if args.out_dtype is not None:
        check_out_dtype(args.dtype, args.out_dtype, SPECS[args.dtype], "--out-dtype")
    flags = {"grid": args.grid, "splits": args.splits}
    check_options(args.decomposition, flags, flags)
    tile = int(args.tile) if args.tile and args.tile.isdigit() else args.tile
    if tile is not None:
        spec_for_tile(args.dtype, tile)  # no kernel runs this tile for this dtype: the tiles that exist
    m, n, k = args.shape.m, args.shape.n, args.shape.k
    check_memory(8.0 * (m * k + k * n + 3 * m * n), f"gemm {args.shape} (host arrays and reference)")


def run(args: argparse.Namespace) -> int:
    check_arguments(args)
    from ..gpu import available, prepare
    from ..gpu.runtime.device import current
    from ..gpu.runtime.timing import time_launch

    ok, why = available()
    if not ok:
        raise StreamkError(f"no usable GPU: {why}")
    m, n, k = args.shape.m, args.shape.n, args.shape.k
    rng = np.random.default_rng(args.seed)
    dt = np.dtype(args.dtype)
    A = rng.standard_normal((m, k)).astype(dt)
    B = rng.standard_normal((k, n)).astype(dt)
    if args.layout[0] == "C":
        A = np.asfortranarray(A)
    if args.layout[1] == "C":
        B = np.asfortranarray(B)
    out_dt = np.dtype(args.out_dtype or ("float32" if dt == np.float16 else "float64"))
    C0 = rng.standard_normal((m, n)).astype(out_dt)
    C = C0.copy() if args.beta != 0.0 else np.full((m, n), np.nan, dtype=out_dt)
    prepared = prepare(A, B, C, alpha=args.alpha, beta=args.beta, schedule=args.decomposition,
                       fixup=args.fixup, grid=args.grid, splits=args.splits,
                       tile=int(args.tile) if args.tile and args.tile.isdigit() else args.tile)
    prepared.run()
    ratio = _error_ratio(C, A, B, C0, args.alpha, args.beta, out_dt)
    med, p20, p80 = time_launch(prepared.launch.enqueue, reps=args.reps)
    s = prepared.schedule
    result = {"decomposition": s.decomposition, "shape": [m, n, k], "dtype": args.dtype, "out_dtype": out_dt.name,
              "tile": str(s.tile),
              "fixup": prepared.plan.policy,
              "grid": s.grid, "units": int(len(s.units)), "split_tiles": int(len(prepared.plan.split_tiles)),
              "device": current().name, "kernels": prepared.launch.names, "ms": med, "ms_p20": p20, "ms_p80": p80,
              "tflops": 2.0 * m * n * k / med / 1e9, "error_over_bound": ratio, "ok": ratio <= 1.0,
              "target": current().target.name, "schedule": s.to_json_dict()}
    if args.json:
        print_json(result)
    else:
        print(f"{s.decomposition} {m}x{n}x{k} {args.dtype} on {result['device']}: tile {s.tile}, grid {s.grid}, "
              f"{result['split_tiles']} split tiles, fixup {result['fixup']}, kernels {'+'.join(result['kernels'])}")
        print(f"  {med * 1e3:.1f} us (p20 {p20 * 1e3:.1f}, p80 {p80 * 1e3:.1f}), {result['tflops']:.1f} TFLOP/s; "
              f"max error / bound {ratio:.3f}: {'ok' if result['ok'] else 'WRONG'}")
    return 0 if result["ok"] else 1


def _error_ratio(C, A, B, C0, alpha, beta, out_dt) -> float:
    """max |C - ref| / (4 sqrt(k) eps |alpha| |A||B| + eps |ref| + eps |beta C0|) over checked rows."""
    rows = np.arange(A.shape[0]) if A.shape[0] <= CHECK_ROWS else \
        np.random.default_rng(1).choice(A.shape[0], CHECK_ROWS, replace=False)
    a, b = A[rows].astype(np.float64), B.astype(np.float64)
    ref = alpha * (a @ b) + (beta * C0[rows] if beta else 0.0)
    eps = np.finfo(out_dt).eps / 2
    bound = 4 * np.sqrt(A.shape[1]) * eps * abs(alpha) * (np.abs(a) @ np.abs(b)) + eps * np.abs(ref) \
        + (eps * abs(beta) * np.abs(C0[rows]) if beta else 0.0) + 1e-300
    got = C[rows].astype(np.float64)
    if np.isnan(got).any():
        return float("inf")
    return float((np.abs(got - ref) / bound).max())
