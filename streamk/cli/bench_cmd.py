"""``streamk bench``: time our kernels against cuBLAS on the seeded corpus sample (needs a GPU and PyTorch)."""

from __future__ import annotations

import argparse

from ..errors import StreamkError


def add_parser(sub) -> argparse.ArgumentParser:
    p = sub.add_parser("bench", help="time GPU kernels vs cuBLAS on the corpus sample (GPU, PyTorch)",
                       description="For each shape of the seeded corpus sample (and 8192^3 with --big): "
                                   "cuBLAS on the raw and the zero-padded shape, and each decomposition of "
                                   "ours with every overhead inside the timing. CUDA events, median of 50 "
                                   "runs, CUDA graphs for small problems; writes a CSV and a plot of it (PNG), "
                                   "prints geomeans and the noise floor.")
    try:
        from ..gpu.bench import add_arguments
    except ImportError:  # no torch: the verb still parses and says what is missing
        p.add_argument("--count", type=int, default=400)
        return p
    add_arguments(p)
    return p


def run(args: argparse.Namespace) -> int:
    try:
        from ..gpu.bench import main
    except ImportError as exc:
        raise StreamkError(f"streamk bench needs PyTorch for cuBLAS ({exc})") from None
    return main(args)
