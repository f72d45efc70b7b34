"""``streamk bench``: time our kernels against cuBLAS on the seeded corpus sample (needs a GPU and
PyTorch). Every argument is checked, and ``--help`` complete, without either."""

from __future__ import annotations

import argparse
from pathlib import Path

from ..errors import StreamkError
from ..gpu.bench_args import add_arguments
from .paths import add_force_arg, refuse_overwriting_measurements

TORCH_EXTRA = 'pip install -e ".[gpu,torch]"'


def add_parser(sub) -> argparse.ArgumentParser:
    p = sub.add_parser("bench", description="For each shape of the seeded corpus sample (and 8192^3 with --big): "
                                   "cuBLAS zero-padded to multiples of 8 (cuBLAS at its best) and on the raw "
                                   "shape, and each decomposition of ours with every overhead inside the "
                                   "timing. CUDA events, median of 50 runs, CUDA graphs for small problems; "
                                   "writes a CSV and a plot of it (PNG), prints geomeans and the noise floor. "
                                   f"Needs an NVIDIA GPU and PyTorch ({TORCH_EXTRA}).",
                       epilog="Example: streamk bench --count 400 --big --out results/")
    add_arguments(p)
    add_force_arg(p)
    return p


def csv_path(args: argparse.Namespace) -> Path:
    """Where the bench writes its rows (``gpu.bench.main``: DIR/bench_<dtype>.csv)."""
    return Path(args.out) / f"bench_{args.dtype}.csv"


def run(args: argparse.Namespace) -> int:
    refuse_overwriting_measurements(csv_path(args), args.force)  # before minutes of GPU time, not after
    from ..gpu import available

    try:
        from ..gpu.bench import main
    except ImportError as exc:
        raise StreamkError(f"streamk bench needs PyTorch for cuBLAS ({exc}); {TORCH_EXTRA}") from None
    ok, why = available()
    if not ok:
        raise StreamkError(f"no usable GPU: {why}")
    return main(args)
