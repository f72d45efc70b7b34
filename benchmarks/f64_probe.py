"""The FP64 tiles against each other and cuBLAS: correctness, then time, on one GPU.

    PYTHONPATH=. python3 benchmarks/f64_probe.py                       # default shapes, every FP64 tile
    PYTHONPATH=. python3 benchmarks/f64_probe.py --shapes 8192x8192x8192,129x209x349 --reps 30

For each shape and each FP64 tile (the paper's 64x64x16, then 128x64x16 and 128x128x16:
streamk/gpu/kernels/sm80/f64_config.cuh), first checks C = A @ B against a float64 reference
(torch.matmul of the same operands) under data-parallel, stream-k and fixed-split (4 ways) under
every fixup policy, the error within the bound tests/gpu_support.py uses (4 sqrt(k) eps |A||B| +
eps |ref|); then times ``streamk.gpu.gemm(A, B, C, schedule=..., tile=...)`` for data-parallel, auto
and stream-k beside ``torch.matmul`` (cuBLAS) in FP64: CUDA events around CUDA-graph replays (a
batch of GRAPH_BATCH calls where one takes under GRAPH_BELOW_MS, so host launch gaps never count),
the variants of a shape replayed round-robin (streamk.bench.harness.time_interleaved's method) after
a warm-up, the median of ``--reps`` rounds. The last lines are a table: shape, tile, decomposition,
microseconds, TFLOP/s, cuBLAS microseconds and cuBLAS's time over ours (above 1: faster than cuBLAS).
About 1-2 minutes on an H100 or H200 with the default shapes, NVRTC builds of the new tiles included
(the 8192^3 checks and timings take most).
"""

from __future__ import annotations

import argparse
import math
import statistics
import sys

DEFAULT_SHAPES = ((8192, 8192, 8192), (4096, 4096, 4096), (2048, 2048, 2048), (1024, 1024, 1024), (129, 209, 349),
                  (500, 700, 900), (3000, 1000, 2000))
TIMED = ("data-parallel", "auto", "stream-k")
CHECKED = (("data-parallel", {}, None), ("stream-k", {}, None))  # then fixed-split under every policy
FIXED_SPLITS = 4
GRAPH_BELOW_MS = 0.05
GRAPH_BATCH = 20
WARMUP = 3


def parse_shapes(text: str) -> tuple[tuple[int, int, int], ...]:
    """"MxNxK[,MxNxK...]" -> shapes; argparse's error on anything else."""
    shapes = []
    for part in text.split(","):
        dims = part.strip().lower().split("x")
        if len(dims) != 3 or not all(d.isdigit() and int(d) > 0 for d in dims):
            raise argparse.ArgumentTypeError(f"shapes look like 8192x8192x8192,129x209x349 (got {part!r})")
        shapes.append(tuple(int(d) for d in dims))
    return tuple(shapes)


def arguments(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description="FP64 tiles vs cuBLAS: correctness checks, then CUDA-event timings.")
    p.add_argument("--shapes", type=parse_shapes, default=DEFAULT_SHAPES,
                   help="comma-separated MxNxK (default: 8192^3, 4096^3, 2048^3, 1024^3, 129x209x349, 500x700x900, "
                        "3000x1000x2000)")
    p.add_argument("--tiles", default=None,
                   help="comma-separated BMxBNxBK of the FP64 tiles to run (default: every one the catalogue ships)")
    p.add_argument("--reps", type=int, default=20, help="timed rounds per variant, the median reported (default 20)")
    p.add_argument("--no-check", action="store_true", help="skip the correctness checks")
    p.add_argument("--seed", type=int, default=42)
    args = p.parse_args(argv)
    if args.reps < 1:
        p.error("--reps must be at least 1")
    return args


def fp64_tiles(wanted: str | None) -> list[str]:
    """The FP64 tiles as "BMxBNxBK", the paper's first (catalogue order)."""
    from streamk.gpu.catalogue import tile_specs

    shipped = [f"{t.bm}x{t.bn}x{t.bk}" for t in tile_specs("float64")]
    if wanted is None:
        return shipped
    tiles = [t.strip().lower() for t in wanted.split(",")]
    unknown = [t for t in tiles if t not in shipped]
    if unknown:
        sys.exit(f"f64_probe: no FP64 kernel on {', '.join(unknown)} (there are: {', '.join(shipped)})")
    return tiles


def check(A, B, tiles: list[str]) -> list[str]:
    """Every tile under data-parallel, stream-k and fixed-split with every fixup policy: the failures."""
    import torch

    from streamk.gpu import gemm
    from streamk.schedule import FIXUP_POLICIES

    k = A.shape[1]
    ref = A @ B
    eps = torch.finfo(torch.float64).eps / 2
    bound = 4 * math.sqrt(k) * eps * (A.abs() @ B.abs()) + eps * ref.abs() + 1e-300
    failures = []
    for tile in tiles:
        iters = -(-k // int(tile.split("x")[2]))
        split = {"splits": min(FIXED_SPLITS, iters)}
        cases = [*CHECKED, *(("fixed-split", split, policy) for policy in FIXUP_POLICIES)]
        for schedule, options, policy in cases:
            name = f"{tile} {schedule} {policy or 'default'} {options or ''}"
            C = torch.full_like(ref, math.nan)
            try:
                gemm(A, B, C, schedule=schedule, fixup=policy, tile=tile, **options)
                torch.cuda.synchronize()
            except Exception as exc:  # reported with the others; the probe goes on
                failures.append(f"{name}: {type(exc).__name__}: {exc}")
                continue
            ratio = float(((C - ref).abs() / bound).max()) if not torch.isnan(C).any() else math.inf
            if not ratio <= 1:
                failures.append(f"{name}: error {ratio:.2f}x the bound")
    return failures


def time_variants(fns: dict, reps: int) -> dict[str, float]:
    """Median milliseconds per call of each fn, timed as graph replays interleaved round-robin."""
    import torch

    stream = torch.cuda.Stream()
    stream.wait_stream(torch.cuda.current_stream())
    graphs = {}
    with torch.cuda.stream(stream):
        for name, fn in fns.items():
            try:
                for _ in range(WARMUP):
                    fn()
                e0, e1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
                e0.record(stream)
                fn()
                e1.record(stream)
                torch.cuda.synchronize()
                batch = GRAPH_BATCH if e0.elapsed_time(e1) < GRAPH_BELOW_MS else 1
                graph = torch.cuda.CUDAGraph()
                with torch.cuda.graph(graph, stream=stream):
                    for _ in range(batch):
                        fn()
                graph.replay()
            except Exception as exc:  # one variant lost, the others timed
                print(f"  {name}: not timed: {type(exc).__name__}: {exc}", flush=True)
                continue
            graphs[name] = (graph, batch, [])
        for _ in range(reps):
            for graph, _, events in graphs.values():
                s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
                s.record(stream)
                graph.replay()
                e.record(stream)
                events.append((s, e))
        torch.cuda.synchronize()
    return {name: statistics.median(s.elapsed_time(e) / batch for s, e in events)
            for name, (_, batch, events) in graphs.items()}


def main(argv: list[str] | None = None) -> int:
    args = arguments(argv)
    try:
        import torch
    except ImportError:
        print("f64_probe: needs PyTorch (with CUDA) and a CUDA GPU", file=sys.stderr)
        return 2
    if not torch.cuda.is_available():
        print("f64_probe: needs a CUDA GPU and PyTorch with CUDA", file=sys.stderr)
        return 2
    from streamk.gpu import gemm
    from streamk.schedule import FIXUP_POLICIES

    tiles = fp64_tiles(args.tiles)
    gen = torch.Generator(device="cuda").manual_seed(args.seed)
    print(f"{torch.cuda.get_device_name()}: FP64 tiles {', '.join(tiles)}; {len(args.shapes)} shapes, "
          f"{args.reps} timed rounds each")
    rows, failed = [], []
    for m, n, k in args.shapes:
        A = torch.randn(m, k, generator=gen, device="cuda", dtype=torch.float64)
        B = torch.randn(k, n, generator=gen, device="cuda", dtype=torch.float64)
        if not args.no_check:
            bad = check(A, B, tiles)
            failed += [f"{m}x{n}x{k} {f}" for f in bad]
            print(f"{m}x{n}x{k}: checked {len(tiles)} tiles x {len(CHECKED) + len(FIXUP_POLICIES)} decompositions: "
                  f"{'ok' if not bad else f'{len(bad)} FAILED'}", flush=True)
        Cs = {"cublas": torch.empty(m, n, device="cuda", dtype=torch.float64)}
        fns = {"cublas": (lambda A=A, B=B, C=Cs["cublas"]: torch.matmul(A, B, out=C))}
        for tile in tiles:
            for schedule in TIMED:
                C = Cs[(tile, schedule)] = torch.empty(m, n, device="cuda", dtype=torch.float64)
                fns[(tile, schedule)] = (lambda A=A, B=B, C=C, s=schedule, t=tile: gemm(A, B, C, schedule=s, tile=t))
        ms = time_variants(fns, args.reps)
        flop = 2.0 * m * n * k
        cublas = ms.get("cublas", math.nan)
        ours = {key: t for key, t in ms.items() if key != "cublas"}
        for key, t in ours.items():
            rows.append((f"{m}x{n}x{k}", *key, t * 1e3, flop / (t * 1e-3) / 1e12, cublas * 1e3, cublas / t))
        best = min(ours.values(), default=math.nan)
        print(f"{m}x{n}x{k}: cuBLAS {cublas * 1e3:.1f} us ({flop / (cublas * 1e-3) / 1e12:.1f} TFLOP/s); "
              f"best of ours {best * 1e3:.1f} us", flush=True)
        del A, B, Cs, fns
        torch.cuda.empty_cache()
    print(f"\n{'shape':<16} {'tile':<11} {'decomposition':<14} {'us':>10} {'TFLOP/s':>8} {'cuBLAS us':>10} "
          f"{'cuBLAS/us':>9}")
    for shape, tile, schedule, us, tflops, cublas_us, ratio in rows:
        print(f"{shape:<16} {tile:<11} {schedule:<14} {us:10.1f} {tflops:8.2f} {cublas_us:10.1f} {ratio:9.3f}")
    if failed:
        print(f"\n{len(failed)} correctness failures:", *failed, sep="\n  ")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
