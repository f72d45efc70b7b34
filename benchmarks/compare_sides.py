"""Two trees' `streamk bench` runs, alternated A B A B on one GPU, compared per variant: the geomean
over shapes of base time / new time (above 1: the new tree is faster), its range, and each side's
run-to-run ratio as the noise floor (issue 42's A/B runs of a kernel change). It reads
`benchmarks/linear.py --csv` rows too: there the variants are ours_us and cublas_us (cuBLAS, the same
library on both sides: a control that should read 1.000); and `benchmarks/candidates_probe.py --csv` rows,
a row per shape and variant (measured_us).

    python benchmarks/compare_sides.py BASE_1.csv BASE_2.csv NEW_1.csv NEW_2.csv
"""

from __future__ import annotations

import argparse
import csv
import math

from streamk.plot.csvfile import open_text


def load(path: str) -> dict[tuple[str, ...], dict[str, str]]:
    with open_text(path) as f:
        rows = list(csv.DictReader(f))
    if rows and "variant" in rows[0]:  # candidates_probe.py: one row per (shape, variant)
        probed: dict[tuple[str, ...], dict[str, str]] = {}
        for r in rows:
            probed.setdefault((r["shape"], r["linear"]), {})[r["variant"]] = r["measured_us"]
        return probed
    return {(r["m"], r["n"], r["k"]): r for r in rows}


def geomean(values: list[float]) -> float:
    return math.exp(sum(map(math.log, values)) / len(values))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("csvs", nargs=4, metavar="CSV", help="base round 1, base round 2, new round 1, new round 2")
    args = ap.parse_args()
    base, new = [load(p) for p in args.csvs[:2]], [load(p) for p in args.csvs[2:]]
    first = next(iter(base[0].values()))
    variants = [c[: -len("_p20")] for c in first if c.endswith("_p20") and not c.startswith("cublas")]
    if not variants:  # linear.py's rows: medians only; candidates_probe.py's: the variants probed
        variants = ["ours_us", "cublas_us"] if "ours_us" in first else list(first)
    print(f"{'variant':34s} shapes  base/new   min    max   noise base, new")
    for v in variants:
        ratio, noise_base, noise_new = [], [], []
        for key in base[0]:
            try:
                b = [float(side[key][v]) for side in base]
                n = [float(side[key][v]) for side in new]
            except (KeyError, ValueError):  # a shape one side did not run
                continue
            ratio.append(math.sqrt(b[0] * b[1] / (n[0] * n[1])))
            noise_base.append(b[0] / b[1])
            noise_new.append(n[0] / n[1])
        if ratio:
            print(f"{v:34s} {len(ratio):6d}  {geomean(ratio):.4f}  {min(ratio):.3f}  {max(ratio):.3f}   "
                  f"{geomean(noise_base):.4f}, {geomean(noise_new):.4f}")


if __name__ == "__main__":
    main()
