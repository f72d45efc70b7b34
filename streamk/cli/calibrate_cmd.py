"""``streamk calibrate``: measure a kernel's cost terms in microseconds on this GPU and write them
to its device family's calibration file (needs a GPU and PyTorch; ``--help`` and the arguments
are checked without either)."""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

from ..errors import InputError, StreamkError
from ..shapes import TileShape
from ..target import Target, family_for
from ..gpu.catalogue import F64_TILE, PAPER_HALF_TILE
from .common import DTYPES, _typed
from .paths import output_file, output_folder


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
                       epilog="Example: streamk calibrate --dtype float16 --tile 128x128x32; "
                              "streamk calibrate --all --out my-gpu.json")
    p.add_argument("--all", action="store_true",
                   help="fit every kernel (dtype x tile) of this GPU's Target, one after the other, into one "
                        "calibration file (each kernel written as it is fitted); refused with --dtype or --tile")
    p.add_argument("--dtype", choices=DTYPES, default=None, help="the kernel's input dtype (default float16)")
    p.add_argument("--tile", type=_typed(TileShape.parse), metavar="BMxBNxBK",
                   help=f"the kernel's tile (default the paper's: {PAPER_HALF_TILE} for float16/bfloat16, "
                        f"{F64_TILE} for float64)")
    p.add_argument("--quick", action="store_true", help="the reduced design of the GPU test (21 probes, not 41; 23, not 44, on kernels that pack; "
                        "on the dot tiles 23, not 45)")
    p.add_argument("--out", type=out_path, default=None, metavar="DIR|FILE.json",
                   help="a calibration file (FILE.json: its other kernels kept) or a folder of <family>.json files "
                        "(default: the package's streamk/calibrate/data, which ships); load it with --calibration "
                        "FILE or STREAMK_CALIBRATION=DIR|FILE")
    p.add_argument("--dry-run", action="store_true", help="measure and print, write no file")
    p.add_argument("--force", action="store_true",
                   help="replace kernels the output file already holds (refused otherwise: they were measured)")
    p.add_argument("--json", action="store_true", help="print the calibration entry as one JSON object (with --all: the "
                   "calibration file written)")
    p.add_argument("--pacing", choices=("now", "before"), default="now",
                   help="now (default): each probe after a pause as long as the previous one kept the GPU busy (at "
                        "most 0.5 s), fewer replays of long probes, the fit on STREAMK_SWEEP_WORKERS processes, every "
                        "kernel compiled first; before: v43's 0.5 s before every probe, 50 replays each, the fit on "
                        "one process (to compare the terms the two give)")
    return p


def out_path(text: str) -> Path:
    """--out: a calibration file where it ends in .json, else a folder of them."""
    return output_file(".json")(text) if text.endswith(".json") else output_folder(text)


def kernels_to_fit(target: Target) -> tuple[tuple[str, TileShape], ...]:
    """Every kernel ``calibrate --all`` fits on ``target``: each dtype's tiles that a GPU kernel runs."""
    from ..gpu.catalogue import spec_for_tile

    out = []
    for t in target.tiles:
        try:
            spec_for_tile(t.dtype, t.tile)
        except StreamkError:  # a tile the planners know that no shipped kernel runs
            continue
        out.append((t.dtype, t.tile))
    return tuple(out)


def refuse_replacing(path: Path, kernels: tuple, force: bool) -> None:
    """A calibration file's kernels were measured on a GPU: replacing any of them needs ``--force``
    (InputError naming them and the file otherwise, before anything is timed)."""
    from ..calibrate import files

    if force or not path.is_file():
        return
    have = {(c.dtype, c.tile) for c in files.read_kernels(path)}
    clash = [f"{dtype} {tile}" for dtype, tile in kernels if (dtype, tile) in have]
    if clash:
        raise InputError(f"{str(path)!r} already holds the calibration of {', '.join(clash)}, measured on a GPU; "
                         f"choose another --out, or pass --force to replace it")


def destination(out: Path | None, family: str) -> Path:
    """The calibration file a run writes: --out FILE.json, or DIR/<family>.json (default the package's)."""
    from ..calibrate import files

    if out is not None and out.suffix == ".json":
        return out
    return (out or files.DATA) / f"{family}.json"


def pacing_for(name: str, workers: int):
    """The ``--pacing`` choice as a ``calibrate.pacing.Pacing``."""
    from ..calibrate import pacing

    return pacing.BEFORE if name == "before" else pacing.now(workers)


def missing_units(arch: str) -> int:
    """Compile units for ``arch`` the NVRTC cache does not hold yet (0 where it cannot tell)."""
    try:
        from ..gpu.build import cache_dir, cache_key, units_for

        return sum(not (cache_dir() / f"{u}-{arch}-{cache_key(u, arch)[:24]}.cubin").exists() for u in units_for(arch))
    except (ImportError, StreamkError):
        return 0


def minutes(seconds: float) -> str:
    return f"{seconds:.0f} s" if seconds < 120 else f"{seconds / 60:.1f} min"


def run(args: argparse.Namespace) -> int:
    from ..calibrate import files
    from ..calibrate.device import calibrate, require_gpu
    from ..calibrate.fit import table
    from ..calibrate.pacing import estimate_all
    from ..parallel import worker_pool, workers_available

    from ..gpu.runtime.device import current
    from ..gpu.catalogue import spec_for_tile

    if args.all and (args.dtype or args.tile):
        raise StreamkError("--all fits every kernel of this GPU; drop --dtype and --tile, or drop --all to fit one kernel")
    dtype = args.dtype or "float16"
    tile = args.tile or (F64_TILE if dtype == "float64" else PAPER_HALF_TILE)
    if not args.all:
        spec_for_tile(dtype, tile)  # a tile no kernel runs is one line, before the GPU is looked for
    require_gpu()

    dev = current()
    kernels = kernels_to_fit(dev.target) if args.all else ((dtype, tile),)
    family = family_for(dev.arch, dev.name)
    if family is not None and not args.dry_run:
        refuse_replacing(destination(args.out, family), kernels, args.force)
    pacing = pacing_for(args.pacing, workers_available())
    missing = missing_units(dev.arch)
    try:
        expected, each = estimate_all(dev.target, kernels, pacing, l2_bytes=dev.l2_bytes, quick=args.quick,
                                      units_to_compile=missing)
    except (ValueError, StreamkError):  # a target with no calibration to estimate from: no estimate
        expected, each = None, ()
    if args.all:
        print(f"calibrating {len(kernels)} kernels on {dev.name} ({dev.arch}, {dev.sms} SMs): "
              f"{', '.join(f'{d} {t}' for d, t in kernels)}", file=sys.stderr, flush=True)
    if expected is not None:
        print(f"about {minutes(expected)} for {len(kernels)} kernel{'s' if len(kernels) > 1 else ''} "
              f"(pacing {pacing.name}; streamk.calibrate.pacing)", file=sys.stderr, flush=True)
    if pacing.compile_first and missing:  # NVRTC in parallel now, not one unit at a time as probes ask
        from .kernels_cmd import compile_all

        start = time.monotonic()
        compile_all(dev.arch)
        print(f"compiled {missing} kernel units in {time.monotonic() - start:.0f} s", file=sys.stderr, flush=True)
    fitted = []
    begin = time.monotonic()
    with worker_pool(pacing.fit_workers) as pool:
        for i, (dtype, tile) in enumerate(kernels):
            print(f"calibrating {dtype} {tile} on {dev.name} ({dev.arch}, {dev.sms} SMs)", file=sys.stderr, flush=True)
            start, timing = time.monotonic(), []
            design, result, cal, family = calibrate(dtype, tile, args.quick, pacing, pool, timing)
            took = time.monotonic() - start
            print(f"{len(design)} probes timed and fitted in {took:.0f} s (timing {sum(timing):.1f} s, the rest "
                  f"{took - sum(timing):.1f} s: the fit on {pacing.fit_workers} processes)", file=sys.stderr)
            print(table(result, [f"{p.family} {p.label}" for p in design]), file=sys.stderr if args.json else sys.stdout)
            fitted.append(cal)
            if not args.dry_run:  # each kernel as it is fitted: a run cut short keeps the ones done
                path = files.write_file(destination(args.out, family), (cal,), family, dev.arch)
                print(f"wrote {path} ({family}: {dtype} {tile})", file=sys.stderr)
            if len(kernels) > 1:
                print(progress(i, len(kernels), time.monotonic() - begin, [e.total_s for e in each]),
                      file=sys.stderr, flush=True)
    if args.json:
        if not args.all:
            obj = fitted[0].to_json_dict()
        else:  # the file as written (its other kernels too), or with --dry-run this run's kernels
            obj = files.document(fitted, family, dev.arch) if args.dry_run else files.read(path)
        json.dump(obj, sys.stdout)
        sys.stdout.write("\n")
    return 0


def progress(done: int, count: int, elapsed_s: float, estimates: list[float]) -> str:
    """The line after kernel ``done`` (0-based) of ``count``: elapsed, and the remaining kernels'
    estimates scaled by how the finished ones ran against theirs (none: the mean so far)."""
    if len(estimates) == count and sum(estimates[:done + 1]) > 0:
        remaining = sum(estimates[done + 1:]) * elapsed_s / sum(estimates[:done + 1])
    else:
        remaining = elapsed_s / (done + 1) * (count - done - 1)
    return f"kernel {done + 1} of {count} done, {minutes(elapsed_s)} elapsed, about {minutes(remaining)} to go"
