"""Which terms of one calibration file moved against another's by more than their standard errors.

    python benchmarks/compare_calibrations.py /tmp/h200.json streamk/calibrate/data/h200.json

One row per (kernel, term) both files hold: old and new value with their errors, the change in
units of the combined error sqrt(se_old^2 + se_new^2), flagged where over 1 and over 2; then per
kernel the rms residuals and probe counts, and how many terms moved past 1 and 2 errors. For
issue 43 (LOG.md v44): a calibration under the new pacing should move no more terms past 2 of
their errors than two runs under the old one do (run-to-run spread, v31 -> v37 -> v41).
"""

from __future__ import annotations

import argparse
import math
from pathlib import Path

from streamk.calibrate.files import read_kernels


def rows(new_path: Path, old_path: Path) -> list[dict]:
    """A dict per (kernel, term) the two files share."""
    old = {(c.dtype, c.tile): c for c in read_kernels(old_path)}
    out = []
    for c in read_kernels(new_path):
        base = old.get((c.dtype, c.tile))
        if base is None:
            continue
        was = {t.name: t for t in base.terms}
        for t in c.terms:
            if t.name not in was:
                continue
            se = math.hypot(t.se, was[t.name].se)
            z = (t.us - was[t.name].us) / se if se > 0 else (0.0 if t.us == was[t.name].us else math.inf)
            out.append({"kernel": f"{c.dtype} {c.tile}", "term": t.name, "old": was[t.name].us, "old_se": was[t.name].se,
                        "new": t.us, "new_se": t.se, "z": z, "rms_old": base.rms_rel_residual,
                        "rms_new": c.rms_rel_residual, "probes_old": base.probes, "probes_new": c.probes})
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("new", type=Path, help="the calibration file just measured")
    ap.add_argument("old", type=Path, help="the file to hold it against (the shipped one)")
    args = ap.parse_args()
    table = rows(args.new, args.old)
    if not table:
        print("the two files share no kernel")
        return 1
    print(f"{'kernel':<22} {'term':<15} {'old':>10} {'+-':>8} {'new':>10} {'+-':>8} {'z':>7}")
    for r in table:
        flag = " **" if abs(r["z"]) > 2 else " *" if abs(r["z"]) > 1 else ""
        print(f"{r['kernel']:<22} {r['term']:<15} {r['old']:>10.4f} {r['old_se']:>8.4f} {r['new']:>10.4f} "
              f"{r['new_se']:>8.4f} {r['z']:>7.2f}{flag}")
    print()
    for kernel in dict.fromkeys(r["kernel"] for r in table):
        mine = [r for r in table if r["kernel"] == kernel]
        print(f"{kernel:<22} rms {100 * mine[0]['rms_old']:.1f}% ({mine[0]['probes_old']} probes) -> "
              f"{100 * mine[0]['rms_new']:.1f}% ({mine[0]['probes_new']}); terms past 1 se: "
              f"{sum(abs(r['z']) > 1 for r in mine)}, past 2: {sum(abs(r['z']) > 2 for r in mine)} of {len(mine)}")
    past2 = sum(abs(r["z"]) > 2 for r in table)
    print(f"\n{len(table)} terms of {len({r['kernel'] for r in table})} kernels: {sum(abs(r['z']) > 1 for r in table)} "
          f"moved past 1 combined se, {past2} past 2")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
