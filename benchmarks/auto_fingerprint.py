"""One hash of every Schedule auto builds for a corpus sample on a Target: equal hashes before and
after a change (a calibration file, a model term) mean auto decides the same on every shape.

    python benchmarks/auto_fingerprint.py --count 400 --seed 20260121 --target h100 --dtype float16 [--corpus decode]
"""

from __future__ import annotations

import argparse
import hashlib

from streamk.calibrate.fidelity import fingerprint
from streamk.gpu.decide.schedule import schedule_for
from streamk.shapes import GemmShape
from streamk.sim.corpus import corpus, decode_corpus
from streamk.target import preset


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--count", type=int, default=400)
    ap.add_argument("--seed", type=int, default=20260121)
    ap.add_argument("--target", default="h100")
    ap.add_argument("--dtype", default="float16")
    ap.add_argument("--corpus", choices=("paper", "decode"), default="paper", help="the paper's shapes or decode-like ones")
    args = ap.parse_args()
    target = preset(args.target)
    digest, tiles = hashlib.sha256(), {}
    draw = decode_corpus(args.count, args.seed) if args.corpus == "decode" else corpus(args.count, seed=args.seed)
    for m, n, k in draw.tolist():
        s = schedule_for("auto", GemmShape(m, n, k), args.dtype, target)
        digest.update(f"{m}x{n}x{k} {s.tile} {s.tile_order} {s.grid} {fingerprint(s)}\n".encode())
        tiles[str(s.tile)] = tiles.get(str(s.tile), 0) + 1
    print(f"auto on {args.target} {args.dtype}, {args.corpus} corpus({args.count}, seed={args.seed}): {digest.hexdigest()}")
    print("tiles: " + ", ".join(f"{t} {c}" for t, c in sorted(tiles.items(), key=lambda x: -x[1])))


if __name__ == "__main__":
    main()
