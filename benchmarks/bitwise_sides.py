"""Whether a kernel change leaves C bitwise as it was: save C of every sm90 tile under every policy
that sums partials, on a few shapes, from one tree; then compare two saves (GPU; issue 42's A/B runs).

    (cd _base && PYTHONPATH=. python ../benchmarks/bitwise_sides.py save /tmp/base.pt)
    PYTHONPATH=. python benchmarks/bitwise_sides.py save /tmp/new.pt
    python benchmarks/bitwise_sides.py compare /tmp/base.pt /tmp/new.pt

Each side imports the streamk its working directory holds (PYTHONPATH=.), so a base tree exported
with `git archive` into _base runs from inside it.
"""

from __future__ import annotations

import argparse

SHAPES = [(512, 11008, 4096), (1000, 999, 3001), (300, 2000, 5000), (129, 4100, 777), (16, 11008, 4096)]
TILES = ["128x128x64", "128x256x64", "128x192x64", "64x128x64", "64x256x64", "128x64x64"]
RUNS = [("stream-k", "owner-waits"), ("stream-k", "turnstile"), ("stream-k", "last-arrival"),
        ("fixed-split", "owner-waits"), ("two-tile-sk-dp", "turnstile"), ("stream-k", "separate-reduce")]


def save(path: str) -> None:
    import torch

    from streamk.errors import StreamkError
    from streamk.gpu import prepare

    out, skipped = {}, 0
    gen = torch.Generator(device="cuda").manual_seed(7)
    for m, n, k in SHAPES:
        a = torch.randn(m, k, generator=gen, device="cuda").half()
        b = torch.randn(k, n, generator=gen, device="cuda").half()
        for tile in TILES:
            for schedule, fixup in RUNS:
                try:
                    c = prepare(a, b, None, schedule=schedule, fixup=fixup, tile=tile).run()
                except StreamkError:  # e.g. a split of more CTAs than the GEMM has iterations
                    skipped += 1
                    continue
                torch.cuda.synchronize()
                out[f"{m}x{n}x{k} {tile} {schedule} {fixup}"] = c.cpu()
    torch.save(out, path)
    print(f"saved {len(out)} results to {path} ({skipped} refused)")


def compare(first: str, second: str) -> None:
    import torch

    a, b = torch.load(first), torch.load(second)
    common = sorted(set(a) & set(b))
    differ = [key for key in common if not torch.equal(a[key], b[key])]
    print(f"bitwise: {len(common)} results in both, {len(differ)} differ; only in one: {len(set(a) ^ set(b))}")
    for key in differ[:10]:
        print("  differs:", key)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    sub.add_parser("save").add_argument("path")
    cmp = sub.add_parser("compare")
    cmp.add_argument("first")
    cmp.add_argument("second")
    args = ap.parse_args()
    save(args.path) if args.cmd == "save" else compare(args.first, args.second)


if __name__ == "__main__":
    main()
