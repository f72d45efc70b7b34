"""Aligned corpus shapes where auto's model decides on the wide persistent launch, with the predicted ratio.

    PYTHONPATH=. python3 benchmarks/wide_persistent_ratio.py --seeds 4600,4601 [--dtype bfloat16] [--target h200]

Prints `seed MxNxK predicted_auto/wide taken auto_tile` for every shape of the seeds' 400-shape aligned corpora
where decide.schedule.wide_persistent_quads asks by_model.wide_persistent_pick (the launch fits, its guards
turn it down): the shapes to time when WIDE_PERSISTENT_MARGIN is in question (benchmarks/LOG.md v129). No GPU.
"""

from __future__ import annotations

import argparse

from streamk.bench.harness import corpus
from streamk.calibrate.candidates import predicted
from streamk.gpu.decide import schedule
from streamk.shapes import GemmShape
from streamk.target import preset


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seeds", required=True, help="aligned corpus seeds, comma-separated")
    ap.add_argument("--dtype", default="float16", choices=("float16", "bfloat16"))
    ap.add_argument("--target", default="h200")
    args = ap.parse_args()
    target = preset(args.target)
    asked = []
    pick = schedule.wide_persistent_pick

    def spy(dtype, target, auto, wide, b_row_bytes=None):  # records each question auto asks, answers as before
        auto_us = predicted(auto, dtype, target, b_row_bytes=b_row_bytes)
        wide_us = predicted(wide, dtype, target, b_row_bytes=b_row_bytes)
        taken = pick(dtype, target, auto, wide, b_row_bytes)
        if auto_us and wide_us:
            asked.append((auto_us / wide_us, taken, auto.tile))
        return taken

    schedule.wide_persistent_pick = spy
    for seed in (int(s) for s in args.seeds.split(",")):
        for m, n, k in corpus(400, seed, "aligned"):
            asked.clear()
            schedule.schedule_for("auto", GemmShape(m, n, k), args.dtype, target)
            for ratio, taken, tile in asked:
                print(f"{seed} {m}x{n}x{k} {ratio:.4f} {int(taken)} {tile}")


if __name__ == "__main__":
    main()
