"""The arguments of ``streamk bench``, without PyTorch or a GPU: so ``--help`` lists every option on
any machine and every argument is checked before either is looked for."""

from __future__ import annotations

import argparse
import os
from typing import Callable

from ..errors import ScheduleError
from .variants import variant

DECOMPS = ["data-parallel", "stream-k", "dp-one-tile-sk", "two-tile-sk-dp", "auto"]
DTYPES = ("float16", "bfloat16", "float64")
SEED = 20260121  # the seed of the GPU sample in benchmarks/LOG.md: first N of corpus(400, seed=SEED)
PLAN_SMS = 132  # SMs a variant is parsed for before the device is known (only @CTAS_PER_SM uses it)


def _count(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        value = -1
    if value < 0:
        raise argparse.ArgumentTypeError(f"must be an integer >= 0 (got {text!r})")
    return value


def seconds_arg(text: str) -> float:
    """argparse type: a number of seconds > 0 (shared with ``streamk fidelity``)."""
    try:
        value = float(text)
    except ValueError:
        value = -1.0
    if not value > 0 or value == float("inf"):
        raise argparse.ArgumentTypeError(f"must be a number of seconds > 0 (got {text!r})")
    return value


def variants_arg(text: str) -> str:
    """argparse type: ';'-separated bench variants, each checked (shared with ``streamk fidelity``)."""
    for item in text.split(";"):  # a typo fails here, before torch, the GPU or any shape
        try:
            variant(item, lambda: PLAN_SMS)
        except ScheduleError as exc:
            raise argparse.ArgumentTypeError(str(exc)) from None
    return text


def _only_tile(text: str) -> str:
    """A tile as "BMxBNxBK" or its prefix "BMxBN" ("128": the square 128x128)."""
    parts = text.lower().split("x")
    if not 1 <= len(parts) <= 3 or not all(p.isdigit() and int(p) > 0 for p in parts):
        raise argparse.ArgumentTypeError(f"must be a tile such as 128, 128x256 or 128x256x64 (got {text!r})")
    return "x".join(parts * 2 if len(parts) == 1 else parts)


# the options --parity fixes itself, with their defaults (add_arguments)
PARITY_FIXED = {"decomps": ";".join(DECOMPS), "dtype": "float16", "corpus": "paper", "big": False, "alone": False,
                "flush_l2": False, "only_tile": None}


def parity_conflicts(args: argparse.Namespace) -> list[str]:
    """The options ``--parity`` fixes itself that ``args`` sets otherwise (as --flags)."""
    return ["--" + name.replace("_", "-") for name, default in PARITY_FIXED.items() if getattr(args, name) != default]


def tile_matches(tile: object, only: str) -> bool:
    """Whether ``tile`` (printed BMxBNxBK) is the one ``--only-tile`` names (``only`` as _only_tile returns it)."""
    return f"{tile}x".startswith(only + "x")


def add_arguments(ap: argparse.ArgumentParser, seed: Callable[[str], int], output_folder: Callable[[str], str]) -> None:
    """``streamk bench``'s options on ``ap``; ``seed`` and ``output_folder``: the CLI's argparse types."""
    ap.add_argument("--count", type=_count, default=400, metavar="N",
                    help="corpus shapes (first N of the seeded 400; 0 with --big for 8192^3 alone) (default 400)")
    ap.add_argument("--seed", type=seed, default=SEED, metavar="S",
                    help=f"corpus seed (default {SEED}, the GPU sample of benchmarks/LOG.md)")
    ap.add_argument("--corpus", default="paper", choices=("paper", "aligned", "decode"),
                    help="paper: m, n, k log-uniform in [128, 8192] (the paper's corpus); aligned: the same shapes "
                         "with n and k rounded up to multiples of 8 (every row 16-byte aligned, as model widths are); "
                         "decode: m or n in [1, 64], the other and k in [128, 16384] (decode-like GEMMs) "
                         "(default paper)")
    ap.add_argument("--dtype", default="float16", choices=DTYPES, help="inputs (default float16)")
    ap.add_argument("--big", action="store_true", help="also 8192^3, each variant timed alone")
    ap.add_argument("--alone", action="store_true",
                    help="time every shape's variants each alone after a 1 s pause (as 8192^3 always is) instead of "
                         "interleaved graph replays: slower, for shapes that reach the power cap")
    ap.add_argument("--flush-l2", action="store_true",
                    help="overwrite twice the L2 before each timed call (outside the timing), so no call finds its "
                         "operands in L2 from the call before (default: warm L2, as back-to-back calls run)")
    ap.add_argument("--decomps", type=variants_arg, default=";".join(DECOMPS), metavar="VARIANTS",
                    help="';'-separated NAME[%%GRID][@CTAS_PER_SM][:A,B,C,D[&A,B,C,D]][/ORDER][!FIXUP]"
                         "[#TILE][+pack|+narrow][+pdl|+nopdl][+back][+sm80|+sm90][+nomc|+mc2d]: a scheduler, optionally with that grid, "
                         "planned for that many CTAs per SM, (auto) those model constants (after &: its "
                         "separate-reduce constants), a tile order such as grouped-8, a fixup policy, the CTA tile "
                         "(64, 128, 128x64, 64x128, 32x64, 32x32, 128x256, or BMxBNxBK such as 128x128x64, "
                         "128x256x64 and 64x128x64 for the sm90 kernels; auto picks one by default), how unaligned "
                         "operands are read, whether the kernels use programmatic dependent launch (+pdl: at any grid), "
                         "+back to walk each CTA's units backwards, +sm80 or +sm90 for the tile auto picks with its "
                         "large-GEMM rungs on that family's tiles (Target.large_rungs), and +nomc to launch the sm90 "
                         "kernels without the two-CTA clusters that share B by TMA multicast, or +mc2d to run whole-tile "
                         "schedules on the sm90 tiles that multicast in 2x2 clusters that share A and B. A variant that cannot "
                         "run a shape (a grid above its MAC iterations) is skipped there: NaN in the CSV with the "
                         "reason in VARIANT_skipped, counted in the summary")
    ap.add_argument("--only-tile", type=_only_tile, metavar="TILE",
                    help="only the corpus shapes for which auto picks this tile (128x256: any depth; 128x256x64: the sm90 "
                         "kernel's): a rule's shapes")
    ap.add_argument("--parity", action="store_true",
                    help="issue 42's target table in one run, auto against cuBLAS where models run: the aligned "
                         "corpus (--count shapes of --seed) in FP16 and BF16, torch's Linear x @ W.t() on five "
                         "Llama layers at 1-8192 tokens, 8192^3 and 4096^3 alone, the FP64 corpus (at most 200 "
                         "shapes) and 8192^3, the unaligned paper corpus; prints each target's goal, figure and "
                         "whether it is met, and writes parity.md and each part's CSV to --out (minutes: ~5 at "
                         "400 shapes on an H200). Takes no --decomps, --dtype, --corpus, --big, --alone, "
                         "--flush-l2 or --only-tile")
    ap.add_argument("--seconds", type=seconds_arg, default=400.0, help="stop starting new shapes after this (default 400)")
    ap.add_argument("--out", type=output_folder, default=os.environ.get("OUT", "."), metavar="DIR",
                    help="folder for the CSV and its plot (default $OUT or .)")
