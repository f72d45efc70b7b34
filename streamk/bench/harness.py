"""Benchmark (needs PyTorch for cuBLAS): our kernels vs cuBLAS on the corpus sample and 8192^3.

For each shape, in one process and on the same inputs: cuBLAS on the raw shape (torch.mm, FP16
in, FP32 out), cuBLAS on the shape zero-padded to multiples of 8 (padding outside its timing:
cuBLAS at its best), and ours for each decomposition, every overhead inside the timing (packing
unaligned operands, prescale/reduce passes). Every variant is timed as CUDA-graph replays (10
launches per replay under ~100 us, else 1) with CUDA events, after warm-up, the variants of a
shape interleaved round-robin; median of 50 with p20/p80. 8192^3 (``--big``) is the exception:
it runs the H100 into its 700 W power cap within milliseconds (SM clock 1980 -> 1300-1650 MHz,
LOG.md v15), so interleaved, each variant's clock depends on what ran before it; there every
variant runs alone after a pause (``time_alone``; ``--alone`` times every shape so), and
``--flush-l2`` starts every timed call from a cold L2. Each of our results is checked
against cuBLAS's (relative Frobenius error). A variant whose launch is another's (same kernels,
grids, schedule and fixup plan: ``auto`` running DP's schedule) is timed once and shares that
time, so its ratio to DP is 1, not the noise between two timings of the same kernels (up to
+-20% on a few shapes in 400, LOG.md v11). Writes a CSV; prints the table and the geomean/mean
ratios last. Entry point: ``streamk bench``.
"""

from __future__ import annotations

import argparse
import csv
import math
import os
import statistics
import time
from typing import Callable

from ..errors import StreamkError
from ..shapes import GemmShape
from ..sim.corpus import corpus as draw_corpus, decode_corpus as draw_decode
from ..atomic import replacing
from ..gpu.runtime.device import available, current
from ..gpu.runtime.prepared import prepare
from ..gpu.runtime.device_runtime import clear_cache
from .args import DECOMPS, PLAN_SMS, SEED  # noqa: F401 (DECOMPS, SEED: the harness's defaults)
from .variants import launch_key, tile_for, variant

REPS = 50
GRAPH_BELOW_MS = 0.1  # time as graph replays below this
GRAPH_BATCH = 10
BIG = (8192, 8192, 8192)  # --big: the large problem, timed alone (time_alone)




def corpus(count: int, seed: int = SEED, kind: str = "paper") -> list[tuple[int, int, int]]:
    """The first ``count`` shapes of the seeded sample: the paper's corpus, the same with n and k
    rounded up to multiples of 8 ("aligned"), or decode-like shapes."""
    draw = draw_decode if kind == "decode" else draw_corpus
    shapes = [tuple(int(v) for v in row) for row in draw(count, seed)] if count else []
    if kind == "aligned":
        shapes = [(m, -(-n // 8) * 8, -(-k // 8) * 8) for m, n, k in shapes]
    return shapes


class L2Flush:
    """Overwrites a buffer of twice the device's L2 before a timed call, so every call starts
    from a cold L2 (cuBLAS's and ours alike); its own time stays outside the events."""

    def __init__(self) -> None:
        import torch

        l2 = torch.cuda.get_device_properties(torch.cuda.current_device()).L2_cache_size
        self.buffer = torch.empty(2 * l2 // 4, dtype=torch.int32, device="cuda")

    def __call__(self) -> None:
        self.buffer.fill_(0)


def time_interleaved(fns: dict, stream, flush: L2Flush | None = None,
                     reps: int | Callable[[float], int] = REPS) -> dict[str, tuple[float, float, float]]:
    """Median, p20, p80 milliseconds per call of each fn (enqueues on `stream`).

    Each fn is captured in a CUDA graph (GRAPH_BATCH calls when one takes under GRAPH_BELOW_MS and
    L2 is not flushed, else one), so host launch gaps between our several kernels or cuBLAS's never
    count; then the graphs replay round-robin, ``reps`` rounds (a function: of the longest graph
    replay's milliseconds, as measured before capture), each replay between two CUDA events
    (after ``flush`` where given), so a slow spell of the GPU hits every variant of the shape alike
    rather than whichever ran during it.
    """
    import torch

    graphs, replay_ms = {}, 0.0
    with torch.cuda.stream(stream):
        for name, fn in fns.items():
            for _ in range(3):
                fn()
            torch.cuda.synchronize()
            e0, e1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            e0.record(stream)
            fn()
            e1.record(stream)
            torch.cuda.synchronize()
            batch = GRAPH_BATCH if e0.elapsed_time(e1) < GRAPH_BELOW_MS and flush is None else 1
            replay_ms = max(replay_ms, batch * e0.elapsed_time(e1))
            graph = torch.cuda.CUDAGraph()
            with torch.cuda.graph(graph, stream=stream):
                for _ in range(batch):
                    fn()
            graph.replay()
            graphs[name] = (graph, batch, [])
        for _ in range(reps if isinstance(reps, int) else reps(replay_ms)):
            for graph, _, events in graphs.values():
                s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
                if flush is not None:
                    flush()
                s.record(stream)
                graph.replay()
                e.record(stream)
                events.append((s, e))
        torch.cuda.synchronize()
    out = {}
    for name, (_, batch, events) in graphs.items():
        ms = sorted(s.elapsed_time(e) / batch for s, e in events)
        q = statistics.quantiles(ms, n=5)
        out[name] = (statistics.median(ms), q[0], q[3])
    return out


BIG_PAUSE_S = 1.0  # idle before each variant of a power-capped shape
BIG_REPS = 20


def launch_error(prepared, out, ref) -> float:
    """One launch of ``prepared`` on the current stream into ``out`` (zeroed first, so nothing stale
    passes), its relative Frobenius error against ``ref`` (float64): the probes time only launches
    that pass."""
    import torch

    out.zero_()
    prepared.run()
    torch.cuda.synchronize()
    return float((out.double() - ref).norm() / ref.norm())


def time_alone(fns: dict, stream, pause: float = BIG_PAUSE_S, reps: int = BIG_REPS,
               flush: L2Flush | None = None) -> dict[str, tuple[float, float, float]]:
    """Median, p20, p80 milliseconds of each fn timed alone: after ``pause`` seconds idle (the GPU
    back under its power cap's limit), 3 warm-up calls, then ``reps`` back-to-back calls each
    between two CUDA events (after ``flush`` where given). For shapes long enough to hit the power
    cap, where the interleaved order would decide each variant's clock."""
    import torch

    out = {}
    for name, fn in fns.items():
        time.sleep(pause)
        with torch.cuda.stream(stream):
            for _ in range(3):
                fn()
            events = [(torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True))
                      for _ in range(reps)]
            for e0, e1 in events:
                if flush is not None:
                    flush()
                e0.record(stream)
                fn()
                e1.record(stream)
        torch.cuda.synchronize()
        ms = sorted(e0.elapsed_time(e1) for e0, e1 in events)
        q = statistics.quantiles(ms, n=5)
        out[name] = (statistics.median(ms), q[0], q[3])
    return out


def cublas(A, B, out_dtype):
    import torch

    try:
        return lambda: torch.mm(A, B, out_dtype=out_dtype)
    except TypeError:
        return lambda: torch.mm(A, B).to(out_dtype)


def bench_shape(shape, dtype, stream, rows, decomps, alone: bool = False, flush: L2Flush | None = None,
                half_out: bool = False):
    """Time ``decomps`` (bench variants, each writing one FP32 / FP64 C) beside cuBLAS on ``shape``,
    append the row to ``rows`` and return it; ``half_out``: auto writing a C in the FP16 / BF16 inputs'
    dtype too ("auto_half", for the parity table's each-side's-faster-output rows)."""
    import torch

    m, n, k = shape
    flops = 2.0 * m * n * k
    tdt = getattr(torch, dtype)
    out_dtype = torch.float64 if dtype == "float64" else torch.float32
    A = torch.randn(m, k, device="cuda").to(tdt)
    B = torch.randn(k, n, device="cuda").to(tdt)
    mp, np_, kp = (-(-x // 8) * 8 for x in shape)
    Ap = torch.zeros(mp, kp, device="cuda", dtype=tdt)
    Bp = torch.zeros(kp, np_, device="cuda", dtype=tdt)
    Ap[:m, :k] = A
    Bp[:k, :n] = B
    ref = torch.mm(A, B, out_dtype=out_dtype) if dtype != "float64" else A @ B
    ref_norm = float(ref.double().norm())
    result = {"m": m, "n": n, "k": k, "dtype": dtype, "intensity": flops / ((m * k + k * n) * A.element_size() + m * n * 4)}
    fns = {"cublas_raw": cublas(A, B, out_dtype), "cublas_padded": cublas(Ap, Bp, out_dtype)}
    if dtype != "float64":  # cuBLAS writing C in the inputs' dtype (half the bytes of ours): the
        fns["cublas_half"] = lambda: torch.mm(A, B)  # faster of the two is "cuBLAS" in the summary
    # every variant writes the same C, so none gains or loses by where its output lies (each
    # launch holds the other buffers it points into, api.prepare)
    out = torch.full((m, n), float("nan"), device="cuda", dtype=out_dtype)
    dev = current()
    prepared, skipped = {}, {}
    for decomp in decomps:
        try:
            prepared[decomp] = prepare(A, B, out, **tile_for(variant(decomp, lambda: dev.sms), GemmShape(m, n, k),
                                                             dtype, dev.target))
        except StreamkError as exc:  # this variant cannot run this shape (a grid above its MAC iterations, ...)
            skipped[decomp] = str(exc)
    half = None  # auto writing a C in the inputs' dtype: its own C, checked like the others below
    if half_out and dtype != "float64" and "auto" in prepared:
        out_half = torch.full((m, n), float("nan"), device="cuda", dtype=tdt)
        half = prepare(A, B, out_half, **tile_for(variant("auto", lambda: dev.sms), GemmShape(m, n, k), dtype,
                                                  dev.target))
        fns["auto_half"] = lambda: half.launch.enqueue(stream.cuda_stream)
    first, same_as = {}, {}  # a variant whose launch is another's (auto running DP's schedule) is
    for decomp, p in prepared.items():  # timed once: the same kernels twice only measure noise
        key = launch_key(p)
        if key in first:
            same_as[decomp] = first[key]
            continue
        first[key] = decomp
        fns[decomp] = lambda launch=p.launch: launch.enqueue(stream.cuda_stream)
    last = next(reversed(prepared.values()), None)
    packs = [st for st in last.launch.steps if "pack" in st.name] if last is not None else []
    if packs:  # what packing the unaligned operands costs inside our times
        fns["pack"] = lambda: [st.enqueue(stream.cuda_stream) for st in packs]
    times = time_alone(fns, stream, flush=flush) if alone or shape == BIG else time_interleaved(fns, stream, flush)
    times.update({decomp: times[other] for decomp, other in same_as.items()})
    for decomp in decomps:
        result[decomp + "_same_as"] = same_as.get(decomp, "")
    for decomp, why in skipped.items():  # a row every reader can take: NaN times, the reason
        result.update({decomp: math.nan, decomp + "_p20": math.nan, decomp + "_p80": math.nan, decomp + "_grid": 0,
                       decomp + "_relerr": math.nan, decomp + "_steps": "", decomp + "_cluster": 0,
                       decomp + "_tile": "", decomp + "_skipped": why})
    for name, (med, p20, p80) in times.items():
        key = "pack_ms" if name == "pack" else name
        result[key] = med
        if name != "pack":
            result[name + "_p20"], result[name + "_p80"] = p20, p80
    for decomp, p in prepared.items():  # each variant's result, checked on its own
        out.fill_(float("nan"))
        stream.wait_stream(torch.cuda.current_stream())  # after the fill, on the current stream
        p.launch.enqueue(stream.cuda_stream)
        stream.synchronize()
        result[decomp + "_grid"] = p.schedule.grid
        result[decomp + "_relerr"] = float((out.double() - ref.double()).norm()) / max(ref_norm, 1e-300)
        result[decomp + "_steps"] = "+".join(p.launch.names)
        result[decomp + "_cluster"] = max(st.cluster for st in p.launch.steps)
        result[decomp + "_tile"] = str(p.schedule.tile)
    if half is not None:
        out_half.fill_(float("nan"))
        stream.wait_stream(torch.cuda.current_stream())
        half.launch.enqueue(stream.cuda_stream)
        stream.synchronize()
        result["auto_half_relerr"] = float((out_half.double() - ref.double()).norm()) / max(ref_norm, 1e-300)
    rows.append(result)
    return result


def finite(xs) -> list[float]:
    """The finite values of ``xs`` (a variant skipped on a shape times as NaN)."""
    return [x for x in xs if math.isfinite(x)]


def geomean(xs):
    xs = [x for x in xs if x > 0 and math.isfinite(x)]
    return math.exp(sum(math.log(x) for x in xs) / len(xs)) if xs else float("nan")


def main(args: argparse.Namespace, plot: Callable[[str, str], None] | None = None) -> int:
    """Time ``args``' shapes and variants, write the CSV, print the summary; ``plot(csv, title)``
    draws the CSV where DP was timed (the CLI passes streamk.plot's; None: no picture)."""
    import torch

    ok, why = available()
    if not ok:
        print(f"no GPU: {why}")
        return 2
    dev = current()
    decomps = args.decomps.split(";")
    for d in decomps:  # a typo fails here, before any shape is timed
        variant(d, lambda: dev.sms)
    print(f"device {dev.name} ({dev.arch}, {dev.sms} SMs), torch {torch.__version__}", flush=True)
    stream = torch.cuda.Stream()
    shapes = corpus(args.count, args.seed, args.corpus)
    if args.only_tile:
        from ..gpu.decide.tiles import choose_tile
        from .args import tile_matches

        shapes = [sh for sh in shapes
                  if tile_matches(choose_tile(GemmShape(*sh), args.dtype, dev.target), args.only_tile)]
        print(f"{len(shapes)} corpus shapes on which auto picks {args.only_tile}", flush=True)
    shapes = ([BIG] if args.big else []) + shapes
    rows = []
    flush = L2Flush() if args.flush_l2 else None
    start = time.time()
    for i, shape in enumerate(shapes):
        if time.time() - start > args.seconds:
            print(f"time budget reached after {i} shapes", flush=True)
            break
        r = bench_shape(shape, args.dtype, stream, rows, decomps, args.alone, flush)
        torch.cuda.synchronize()
        clear_cache()  # this shape's graphs are gone: their lanes go as the driver releases them
        if i < 12 or i % 25 == 0:
            tf = lambda ms: 2 * r["m"] * r["n"] * r["k"] / ms / 1e9  # noqa: E731
            print(f"{r['m']:>5}x{r['n']:>5}x{r['k']:>5} cublas raw {tf(r['cublas_raw']):6.1f} pad "
                  f"{tf(r['cublas_padded']):6.1f} | " + " ".join(f"{d} {tf(r[d]):6.1f}" for d in decomps) +
                  f" | pack {r.get('pack_ms', 0) * 1e3:5.1f} us of {r[decomps[-1]] * 1e3:6.1f}"
                  f" | err {max(finite(r[d + '_relerr'] for d in decomps), default=math.nan):.1e}", flush=True)
    os.makedirs(args.out, exist_ok=True)
    path = os.path.join(args.out, f"bench_{args.dtype}.csv")
    write_rows(path, rows)
    summarize(rows, decomps, args.dtype)
    if plot is not None and "data-parallel" in decomps and any((r["m"], r["n"], r["k"]) != BIG for r in rows):
        plot(path, f"{dev.name}, {args.dtype}, {len(rows) - len(big_rows(rows))} corpus shapes")
    return 0


def write_rows(path: str, rows: list[dict]) -> None:
    """``rows`` as a CSV at ``path`` (every key any row has, in first-seen order), replaced whole."""
    with replacing(path) as tmp, open(tmp, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(dict.fromkeys(key for r in rows for key in r)))
        w.writeheader()
        w.writerows(rows)


def big_rows(rows):
    return [r for r in rows if (r["m"], r["n"], r["k"]) == BIG]


def same_tile_dp(rows, decomps):
    """auto against our DP of the tile auto ran on each shape (variants data-parallel#TILE give DP on
    the other tiles): the issue's "auto vs our DP of the same tile", where auto picks tiles."""
    def is_dp(d: str) -> bool:  # data-parallel with any tile, order or suffix
        return variant(d, lambda: PLAN_SMS)["schedule"] == "data-parallel"

    if not rows:  # --count 0 --big: only 8192^3, summarized on its own
        return
    dps = {rows[0][d + "_tile"]: d for d in decomps if is_dp(d)}
    for d in decomps:
        if is_dp(d) or any(r[d + "_tile"] not in dps for r in rows):
            continue
        ratio = finite(r[dps[r[d + "_tile"]]] / r[d] for r in rows)
        if not ratio:
            continue
        tiles = sorted({r[d + "_tile"] for r in rows})
        print(f"   {d} vs DP of its own tile ({', '.join(tiles)}): geo {geomean(ratio):.3f} mean "
              f"{statistics.mean(ratio):.3f} min {min(ratio):.3f}")


def summarize(rows, decomps, dtype):
    big = big_rows(rows)
    corpus_rows = [r for r in rows if r not in big]
    print(f"\n{dtype}: {len(corpus_rows)} corpus shapes (TFLOP/s geomean; ratios = time_other / time_ours)")
    for part, sel in (("all", corpus_rows), ("compute-bound (>400 flop/B)", [r for r in corpus_rows if r["intensity"] > 400])):
        if not sel:
            continue
        print(f"-- {part}: {len(sel)} shapes")
        tf = lambda r, key: 2 * r["m"] * r["n"] * r["k"] / r[key] / 1e9  # noqa: E731
        for key in ["cublas_raw", "cublas_padded"] + (["cublas_half"] if "cublas_half" in sel[0] else []) + decomps:
            print(f"   {key:<16} TFLOP/s geomean {geomean([tf(r, key) for r in sel]):7.1f}")
        # the DP the ratios are against: plain data-parallel, else the first data-parallel variant
        dp = "data-parallel" if "data-parallel" in decomps else next(
            (d for d in decomps if d.startswith("data-parallel")), None)
        for d in decomps:
            ran = [r for r in sel if math.isfinite(r[d])]
            if not ran:
                print(f"   {d:<16} ran on none of these shapes")
                continue
            vs_dp = finite(r[dp] / r[d] for r in ran) if dp else []
            vs_raw = [r["cublas_raw"] / r[d] for r in ran]
            vs_pad = [r["cublas_padded"] / r[d] for r in ran]
            best = [min(r["cublas_raw"], r.get("cublas_half", math.inf)) / r[d] for r in ran]
            versus = f"vs {dp} geo {geomean(vs_dp):.3f} mean {statistics.mean(vs_dp):.3f} min {min(vs_dp):.3f} | " \
                if vs_dp else ""
            skipped = f" | skipped on {len(sel) - len(ran)} shapes" if len(ran) < len(sel) else ""
            print(f"   {d:<16} {versus}vs cuBLAS raw geo {geomean(vs_raw):.3f} | vs padded geo {geomean(vs_pad):.3f} | "
                  f"vs cuBLAS's faster output dtype geo {geomean(best):.3f} min {min(best):.3f} | "
                  f"max relerr {max(r[d + '_relerr'] for r in ran):.1e}{skipped}")
    same_tile_dp(corpus_rows, decomps)
    if "data-parallel" in decomps:  # where a variant ran DP's very launch, it was timed once
        for d in decomps:
            if d == "data-parallel":
                continue
            same = [r for r in corpus_rows if r.get(d + "_same_as") == "data-parallel"]
            other = finite(r["data-parallel"] / r[d] for r in corpus_rows if r.get(d + "_same_as") != "data-parallel")
            line = f"   {d}: {len(same)} shapes ran DP's own launch (timed once: ratio 1)"
            if other:
                line += (f"; the other {len(other)}: vs DP geo {geomean(other):.3f} mean {statistics.mean(other):.3f}"
                         f" min {min(other):.3f} max {max(other):.3f}")
            print(line)
    for d in decomps:  # packing (all-narrow copies, a family's large rungs) vs the default, same shapes, same process
        base = d.removesuffix("+pack").removesuffix("+narrow").removesuffix("+sm80").removesuffix("+sm90")
        if d == base or base not in decomps:
            continue
        changed = [r for r in corpus_rows if r[base + "_steps"] != r[d + "_steps"]]
        for label, sel in (("changed", changed), ("compute-bound changed", [r for r in changed if r["intensity"] > 400])):
            if sel:
                gain = finite(r[d] / r[base] for r in sel)
                if not gain:
                    continue
                print(f"   {base}: {d}/default time geo {geomean(gain):.3f} min {min(gain):.3f} max {max(gain):.3f} "
                      f"on {len(sel)} {label} shapes")
        for w in ("w8", "w4"):
            sel = [r for r in changed if f"_{w}" in r[base + "_steps"]]
            if sel:
                print(f"   {base} {w}: {d}/default geo {geomean([r[d] / r[base] for r in sel]):.3f} on {len(sel)}")
    for r in big:
        tf = lambda key: 2 * r["m"] * r["n"] * r["k"] / r[key] / 1e9  # noqa: E731
        print("8192^3 (each alone after a pause): " + " ".join(f"{key} {tf(key):.0f}" for key in
                                                             ["cublas_raw", "cublas_padded"] + decomps) + " TFLOP/s")


