"""``streamk calibrate``: measure a kernel's cost terms in microseconds on this GPU and write them
to its device family's calibration file (needs a GPU and PyTorch; ``--help`` and the arguments
are checked without either)."""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

from ..shapes import TileShape
from ..gpu.catalogue import F64_TILE, PAPER_HALF_TILE
from .common import DTYPES, _typed
from .paths import output_folder


def add_parser(sub) -> argparse.ArgumentParser:
    p = sub.add_parser("calibrate", description="Time controlled Schedules that isolate each term of the cost model (launch, "
                                   "per CTA, per MAC iteration alone on an SM and sharing it, partial store, "
                                   "partial read, the separate reduce pass, a mainloop restart, DRAM misses, an "
                                   "atomic tile add, on the dot tiles rows read in place at less than 16-byte "
                                   "alignment, and on the kernels that pack 2-byte-aligned rows the pack pass "
                                   "per launch and per MB) with CUDA events, fit the terms by "
                                   "least squares on the simulator's time with standard errors, print them with "
                                   "every probe's residual, and write the kernel's entry of "
                                   "<out>/<family>.json, which the Target of that GPU family loads "
                                   "(streamk simulate --target GPU --json then reports predicted_us).",
                       epilog="Example: streamk calibrate --dtype float16 --tile 128x128x32")
    p.add_argument("--dtype", choices=DTYPES, default="float16", help="the kernel's input dtype (default float16)")
    p.add_argument("--tile", type=_typed(TileShape.parse), metavar="BMxBNxBK",
                   help=f"the kernel's tile (default the paper's: {PAPER_HALF_TILE} for float16/bfloat16, "
                        f"{F64_TILE} for float64)")
    p.add_argument("--quick", action="store_true", help="the reduced design of the GPU test (21 probes, not 41; 23, not 44, on kernels that pack; "
                        "on the dot tiles 23, not 45)")
    p.add_argument("--out", type=output_folder, default=None, metavar="DIR",
                   help="folder of the calibration files (default: the package's streamk/calibrate/data, which "
                        "ships; set STREAMK_CALIBRATION=DIR to use another folder's files)")
    p.add_argument("--dry-run", action="store_true", help="measure and print, write no file")
    p.add_argument("--json", action="store_true", help="print the calibration entry as one JSON object")
    return p


def run(args: argparse.Namespace) -> int:
    from ..calibrate import files
    from ..calibrate.device import calibrate, require_gpu
    from ..calibrate.fit import table

    from ..gpu.runtime.device import current
    from ..gpu.catalogue import spec_for_tile

    tile = args.tile or (F64_TILE if args.dtype == "float64" else PAPER_HALF_TILE)
    spec_for_tile(args.dtype, tile)  # a tile no kernel runs is one line, before the GPU is looked for
    require_gpu()

    dev = current()
    print(f"calibrating {args.dtype} {tile} on {dev.name} ({dev.arch}, {dev.sms} SMs)", file=sys.stderr, flush=True)
    start = time.monotonic()
    design, result, cal, family = calibrate(args.dtype, tile, args.quick)
    print(f"{len(design)} probes timed and fitted in {time.monotonic() - start:.0f} s", file=sys.stderr)
    print(table(result, [f"{p.family} {p.label}" for p in design]), file=sys.stderr if args.json else sys.stdout)
    if not args.dry_run:
        path = files.write(cal, family, dev.arch, Path(args.out) if args.out else files.DATA)
        print(f"wrote {path} ({family}: {args.dtype} {tile})", file=sys.stderr)
    if args.json:
        json.dump(cal.to_json_dict(), sys.stdout)
        sys.stdout.write("\n")
    return 0
