"""The corpus shapes whose auto launch differs between a base commit and the working tree (no GPU).

A rule or model change is timed on the shapes it moves (issue 42's A/B runs: `candidates_probe.py
--only` on both trees, then `compare_sides.py`). This lists them: for each shape of the seeded corpus
(`streamk bench`'s draw: paper, aligned or decode) auto's launch on a preset Target, as `streamk
simulate auto --target` plans it (tile, grid, tile order, decomposition), at both commits; it prints
the shapes that differ with both launches, then a line to paste after `--shapes`. The base commit
runs from a `git worktree` of it, in a subprocess, as compare_decisions.py does.

    python benchmarks/moved_shapes.py --base HEAD --seeds 4673,4674,4675 [--count 400] [--corpus aligned]
        [--dtype float16] [--target h200]
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path


def launches(count: int, seeds: list[int], kind: str, dtype: str, target: str) -> list[dict]:
    """auto's launch for every shape of the corpora, with the streamk on this process's path."""
    from streamk.bench.harness import corpus
    from streamk.gpu.decide.schedule import schedule_for
    from streamk.shapes import GemmShape
    from streamk.target import preset

    t = preset(target)
    out = []
    for seed in seeds:
        for m, n, k in corpus(count, seed, kind):
            s = schedule_for("auto", GemmShape(m, n, k), dtype, t)
            out.append({"shape": f"{m}x{n}x{k}", "launch": f"{s.decomposition} {s.tile} grid {s.grid} {s.tile_order}"})
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--base", default="HEAD", help="the commit to compare against (default HEAD)")
    ap.add_argument("--worktree", default="/tmp/moved_base", help="where the base commit's worktree lives")
    ap.add_argument("--seeds", required=True, help="corpus seeds, comma-separated")
    ap.add_argument("--count", type=int, default=400, help="shapes a seed (default 400)")
    ap.add_argument("--corpus", choices=("paper", "aligned", "decode"), default="aligned")
    ap.add_argument("--dtype", choices=("float16", "bfloat16", "float64"), default="float16")
    ap.add_argument("--target", default="h200", help="a preset Target (default h200)")
    ap.add_argument("--side", help=argparse.SUPPRESS)  # internal: one side's launches to this file
    args = ap.parse_args()
    seeds = [int(s) for s in args.seeds.split(",")]
    if args.side:
        Path(args.side).write_text(json.dumps(launches(args.count, seeds, args.corpus, args.dtype, args.target)))
        return 0
    from compare_decisions import both_sides  # this folder is the script's path

    sides = both_sides(args.base, Path(args.worktree), __file__, ["--seeds", args.seeds, "--count", str(args.count),
                                                                  "--corpus", args.corpus, "--dtype", args.dtype,
                                                                  "--target", args.target])
    if sides is None:
        print("a side failed", file=sys.stderr)
        return 2
    base, head = (json.loads(side.read_text()) for side in sides)
    moved = [(b["shape"], b["launch"], h["launch"]) for b, h in zip(base, head) if b["launch"] != h["launch"]]
    print(f"{len(moved)} of {len(base)} {args.corpus} {args.dtype} shapes (seeds {args.seeds}) change launch on "
          f"{args.target} against {args.base}:")
    for shape, was, now in moved:
        print(f"  {shape:<18} {was}  ->  {now}")
    if moved:
        print("--shapes " + ",".join(shape for shape, _, _ in moved))
    return 0


if __name__ == "__main__":
    sys.exit(main())
