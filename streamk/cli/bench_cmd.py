"""``streamk bench``: time our kernels against cuBLAS on the seeded corpus sample (needs a GPU and
PyTorch). Every argument is checked, and ``--help`` complete, without either."""

from __future__ import annotations

import argparse
from pathlib import Path

from ..bench.args import add_arguments, parity_conflicts
from ..errors import StreamkError
from .common import seed
from .paths import add_force_arg, output_folder, refuse_overwriting_measurements

TORCH_EXTRA = 'pip install -e ".[gpu,torch]"'


def add_parser(sub) -> argparse.ArgumentParser:
    p = sub.add_parser("bench", description="For each shape of the seeded corpus sample (and 8192^3 with --big): "
                                   "cuBLAS zero-padded to multiples of 8 (cuBLAS at its best) and on the raw "
                                   "shape, and each decomposition of ours with every overhead inside the "
                                   "timing. CUDA events, median of 50 runs, CUDA graphs for small problems; "
                                   "writes a CSV and a plot of it (PNG), prints geomeans and the noise floor. "
                                   f"Needs an NVIDIA GPU and PyTorch ({TORCH_EXTRA}).",
                       epilog="Example: streamk bench --count 400 --big --out results/")
    add_arguments(p, seed, output_folder)
    add_force_arg(p)
    return p


def csv_path(args: argparse.Namespace) -> Path:
    """Where the bench writes its rows (``streamk.bench.harness.main``: DIR/bench_<dtype>.csv; with
    --parity the table, DIR/parity.md, beside its parts' CSVs)."""
    return Path(args.out) / ("parity.md" if args.parity else f"bench_{args.dtype}.csv")


def run(args: argparse.Namespace) -> int:
    if args.parity and (conflicts := parity_conflicts(args)):
        raise StreamkError(f"--parity runs its own corpora, dtypes and variants: drop {', '.join(conflicts)}")
    refuse_overwriting_measurements(csv_path(args), args.force)  # before minutes of GPU time, not after
    from ..gpu import available

    try:
        from ..bench.harness import main
    except ImportError as exc:
        raise StreamkError(f"streamk bench needs PyTorch for cuBLAS ({exc}); {TORCH_EXTRA}") from None
    ok, why = available()
    if not ok:
        raise StreamkError(f"no usable GPU: {why}")
    if args.parity:
        from ..bench.parity import run as parity, table

        print(table(parity(args.count, args.seed, args.out)))
        return 0
    return main(args, _plot)


def _plot(path: str, title: str) -> None:
    """Draw the bench CSV at ``path`` beside it (a PNG); the CSV and the table are the results."""
    import os

    try:
        from ..plot import load_bench_csv, plot_bench
    except ImportError as exc:
        print(f"plot skipped ({exc}); draw it later with streamk plot bench --csv {path}")
        return
    print(f"plot: {plot_bench(load_bench_csv(path), os.path.splitext(path)[0] + '.png', title)}")
