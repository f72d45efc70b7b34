"""``streamk fidelity``: the calibrated simulator against the GPU, shape by shape.

On a GPU it times every decomposition and policy on a seeded corpus sample and writes a CSV; with
``--from-csv`` (no GPU) it predicts such CSVs again under a Target's calibration. Either way it
prints Spearman overall and within shapes, the absolute relative errors per variant, and draws
the predicted-vs-measured scatter.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from pathlib import Path

from .. import env
from ..calibrate import fidelity
from ..calibrate.selection import report as selection_report, selection
from ..errors import StreamkError
from ..bench.args import SEED, seconds_arg, variants_arg
from ..shapes import TileShape
from ..gpu.catalogue import DOT_T_TILE, DOT_TILE, F64_TILE, PAPER_HALF_TILE
from ..target import preset
from .common import DTYPES, _typed, add_calibration_arg, add_seed_arg, note_uncalibrated, positive_int, seed, target_of
from .paths import add_force_arg, check_output_file, input_file, output_file, refuse_overwriting_measurements

COUNT = 200
DEFAULT_OUT = "fidelity.csv"  # a GPU run's CSV
SECONDS = 540  # stop timing new shapes after this, inside one 10-minute device command


def add_parser(sub) -> argparse.ArgumentParser:
    p = sub.add_parser("fidelity", description="Time every decomposition and fixup policy the GPU runs on a seeded corpus "
                                   "sample (k and n rounded up to multiples of 8) and predict each run with the "
                                   "calibrated simulator; or, with --from-csv, predict earlier runs again (no "
                                   "GPU). Prints Spearman over all runs and the median within a shape, the "
                                   "median and p90 absolute relative error per variant; writes the CSV and a "
                                   "log-log predicted-vs-measured scatter next to it.",
                       epilog="Example: streamk fidelity --count 200 --out results/fidelity.csv; "
                              "streamk fidelity --from-csv results/fidelity.csv --target h100")
    p.add_argument("--from-csv", type=input_file, nargs="+", metavar="CSV",
                   help="predict these fidelity CSVs (or gzipped .csv.gz) again (no GPU; needs --target)")
    p.add_argument("--target", type=_typed(preset), metavar="GPU",
                   help="with --from-csv: the preset whose calibration predicts (default: the live GPU's)")
    add_calibration_arg(p)
    p.add_argument("--dtype", choices=DTYPES, default=None,
                   help="input dtype (default float16; with --from-csv, the dtype the CSV's runs record)")
    p.add_argument("--tile", type=_typed(TileShape.parse), metavar="BMxBNxBK",
                   help="the calibrated kernel's tile every variant runs on (default the paper's)")
    p.add_argument("--variants", type=variants_arg, metavar="V;V",
                   help="bench-style variants, each on --tile unless it names its own #TILE; where some name "
                        "theirs and --tile is not given, one without (auto) runs the tile auto picks (default: every "
                        "decomposition and policy on --tile: "
                        + ";".join(fidelity.VARIANTS) + ")")
    p.add_argument("--count", type=positive_int, default=COUNT, metavar="N", help=f"shapes (default {COUNT})")
    p.add_argument("--first", type=seed, default=0, metavar="I", help="skip the sample's first I shapes (to "
                                                                    "split a run over several commands)")
    add_seed_arg(p, SEED, "corpus seed (that of the GPU sample in benchmarks/LOG.md)")
    p.add_argument("--corpus", choices=("paper", "decode"), default="paper",
                   help="paper: m, n, k log-uniform in [128, 8192]; decode: m or n in [1, 64], the other and k "
                        "in [128, 16384] (on a tile of at most 8 columns or rows: the shapes whose small side "
                        "fits it, along it) (default paper)")
    p.add_argument("--seconds", type=seconds_arg, default=SECONDS, metavar="S",
                   help=f"stop timing new shapes after S seconds (default {SECONDS})")
    p.add_argument("--out", type=output_file(".csv"), default=None, metavar="FILE.csv",
                   help="the CSV to write, rewritten as each shape is timed (a run cut short keeps its timed shapes: "
                        "predict them with --from-csv); the plot goes beside it as .png (default fidelity.csv; "
                        "with --from-csv, CSV-TARGET.csv beside the first CSV). A file holding measurements is "
                        "never overwritten without --force")
    add_force_arg(p)
    p.add_argument("--json", action="store_true", help="print the summary as one JSON object")
    return p


def sample(count: int, first: int, seed: int, kind: str = "paper", tile: TileShape | None = None
           ) -> list[tuple[int, int, int]]:
    """Corpus shapes [first, first + count) of ``seed``: the paper's corpus or decode-like shapes
    (``kind``), k and n rounded up to multiples of 8 (so no operand is packed: the packing pass is
    not part of the calibrated model). On the dot tiles (at most 8 columns or rows; they read every
    row alignment in place) the decode shapes whose small side fits the tile, turned to lie along
    it, unrounded."""
    from ..sim.corpus import corpus, decode_corpus

    if kind == "paper":
        rows = corpus(first + count, seed)[first:]
        return [(int(m), int(-(-n // 8) * 8), int(-(-k // 8) * 8)) for m, n, k in rows]
    narrow = tile in (DOT_TILE, DOT_T_TILE)
    out: list[tuple[int, int, int]] = []
    draw = first + count
    while len(out) < first + count:  # about half the decode shapes have a small side of at most 8
        out = []
        for m, n, k in decode_corpus(3 * draw, seed):
            small, large = int(min(m, n)), int(max(m, n))
            if not narrow:
                out.append((int(m), int(-(-n // 8) * 8), int(-(-k // 8) * 8)))
            elif tile == DOT_TILE and small <= DOT_TILE.bn:
                out.append((large, small, int(k)))
            elif tile == DOT_T_TILE and small <= DOT_T_TILE.bm:
                out.append((small, large, int(k)))
        draw *= 2
    return out[first:first + count]


def _measure(args: argparse.Namespace, tile: TileShape):
    from ..calibrate.device import measure_fidelity, require_gpu

    env.device_ordinal()  # one line naming STREAMK_DEVICE where it is not an ordinal
    require_gpu()
    from ..gpu.runtime.device import current

    dev = current()
    texts = (fidelity.run_variants(args.variants.split(";"), tile, args.tile is not None) if args.variants
             else fidelity.default_variants(tile))
    shapes = sample(args.count, args.first, args.seed, args.corpus, tile)
    print(f"fidelity on {dev.name}: {len(shapes)} shapes x {len(texts)} variants", file=sys.stderr, flush=True)
    timed: list[dict] = []

    def on_shape(i: int, shape_rows: list[dict]) -> None:  # the CSV keeps every timed shape if the run is cut short
        timed.extend(shape_rows)
        fidelity.write_csv(timed, args.out)
        print(f"{i + 1}/{len(shapes)} {shape_rows[0]['m']}x{shape_rows[0]['n']}x{shape_rows[0]['k']}", file=sys.stderr,
              flush=True)
    rows = measure_fidelity(shapes, texts, args.dtype, args.seconds, on_shape)
    if len(rows) < len(shapes) * len(texts):
        print(f"time budget of {args.seconds:g} s reached: {len(rows) // len(texts)} shapes timed; go on with "
              f"--first {args.first + len(rows) // len(texts)}", file=sys.stderr)
    return rows, dev.target, dev.name


def _csv_dtype(rows: list[dict], asked: str | None) -> str:
    """The dtype the CSVs' runs record (older CSVs record none: ``asked``, else float16); a mix of
    dtypes, or one other than ``asked``, is an error rather than 2400 runs that cannot be predicted."""
    recorded = {r.get("dtype") for r in rows} - {None, ""}
    if len(recorded) > 1:
        raise StreamkError(f"the CSVs mix runs of {', '.join(sorted(recorded))}: predict each dtype on its own")
    if recorded and asked is not None and asked not in recorded:
        raise StreamkError(f"--dtype {asked}, but the CSVs' runs are {recorded.pop()}")
    return recorded.pop() if recorded else asked or "float16"


def default_out(args: argparse.Namespace) -> Path:
    """fidelity.csv for a GPU run; with --from-csv a new name beside the first CSV, which says
    which target predicted (other.csv -> other-h100.csv), so the measured file is never the output."""
    if not args.from_csv:
        return Path(DEFAULT_OUT)
    first = args.from_csv[0]
    stem = Path(first.name.removesuffix(".gz")).stem
    return first.with_name(f"{stem}-{args.target.name}.csv")


def run(args: argparse.Namespace) -> int:
    rows: list[dict] = []
    args.target = target_of(args)
    if args.from_csv and args.target is None:
        raise StreamkError("--from-csv needs --target GPU (or --calibration FILE): the GPU whose calibration predicts")
    if args.from_csv:
        rows = [r for path in args.from_csv for r in fidelity.read_csv(path)]
    args.dtype = _csv_dtype(rows, args.dtype)  # no rows (a device run): --dtype, else float16
    args.out = args.out or check_output_file(str(default_out(args)), (".csv",))
    refuse_overwriting_measurements(args.out, args.force)
    tile = args.tile or (F64_TILE if args.dtype == "float64" else PAPER_HALF_TILE)
    if args.from_csv:
        target, where = args.target, args.target.name
    else:
        rows, target, where = _measure(args, tile)
        if args.calibration is not None:  # the file's terms predict the live GPU's runs
            target = args.target.with_sms(target.sms, args.target.name)
        print(f"predicting {len(rows)} runs with the calibrated simulator", file=sys.stderr, flush=True)
    note_uncalibrated(target, args.dtype, tile)
    rows = fidelity.predict_rows(rows, target, args.dtype)
    fidelity.write_csv(rows, args.out)
    stats = fidelity.summary(rows)
    stats["selection"] = selection(rows)
    cal = target.kernel(args.dtype, tile).calibration
    stats.update(target=target.name, dtype=args.dtype, tile=str(tile), calibration=cal.to_json_dict() if cal else None)
    print(fidelity.report(stats), file=sys.stderr if args.json else sys.stdout)
    print(selection_report(stats["selection"]), file=sys.stderr if args.json else sys.stdout)
    if not stats["runs"]:
        top = max(stats["left_out_why"].items(), key=lambda x: x[1])[0] if stats["left_out_why"] else "no rows"
        raise StreamkError(f"none of the {stats['left_out']} runs could be predicted ({top}); {args.out} keeps them: "
                           f"predict it again with --from-csv {args.out} --target GPU")
    from ..plot.fidelity import plot_fidelity

    png = plot_fidelity(rows, args.out.with_suffix(".png"),
                        f"{where}, {args.dtype} {tile}: calibrated simulator vs GPU ({stats['shapes']} shapes)")
    print(f"wrote {args.out} and {png}", file=sys.stderr)
    if args.json:
        json.dump(_plain(stats), sys.stdout, allow_nan=False)
        sys.stdout.write("\n")
    return 0


def _plain(obj):
    """``obj`` with every NaN as null: a statistic of too few runs is unknown, and JSON has no NaN."""
    if isinstance(obj, dict):
        return {k: _plain(v) for k, v in obj.items()}
    return None if isinstance(obj, float) and math.isnan(obj) else obj
