"""Where the time of a small GEMM goes: launch, lone-CTA iterations, co-resident CTAs, fixup.

    PYTHONPATH=. python3 benchmarks/gpu_probe.py            # timings (CUDA graphs, medians)
    PYTHONPATH=. python3 benchmarks/gpu_probe.py --trace     # sets STREAMK_TRACE=1 itself

The first form times, as CUDA-graph replays interleaved per group (streamk.bench.harness's method),
an empty torch kernel, one 128x128 tile over k (a lone CTA), one and two tiles per SM, one tile
split over s CTAs, a 40-tile problem under several grids, and tiny raw shapes against cuBLAS.
The second runs a trace build (kernels/common/trace.cuh, STREAMK_TRACE=1: %globaltimer per CTA at
entry, first mainloop start and end, last epilogue end) and prints the phases of single launches;
with --trace-shape also each unit position's (a CTA's first, second, ... unit) across the launch.
Every case uses 16-byte aligned operands unless its name says raw, so no packing is timed.
"""

from __future__ import annotations

import argparse
import os
import statistics
import struct
import sys

import numpy as np
import torch

from streamk.fixup import Action
from streamk.gpu import prepare
from streamk.gpu.request import Tuning
from streamk.bench.harness import time_alone, time_interleaved
from streamk.gpu.runtime.device import current


def operands(m: int, n: int, k: int):
    A = torch.randn(m, k, device="cuda").half()
    B = torch.randn(k, n, device="cuda").half()
    C = torch.empty(m, n, device="cuda", dtype=torch.float32)
    return A, B, C


def ours(A, B, C, stream, **kw):
    p = prepare(A, B, C, **kw)
    return p, (lambda: p.launch.enqueue(stream.cuda_stream))


def group(title: str, cases: dict, stream) -> dict:
    times = time_interleaved({name: fn for name, (fn, _) in cases.items()}, stream)
    print(f"\n== {title}")
    for name, (med, p20, p80) in times.items():
        print(f"{name:<44} {cases[name][1]:>18} {med * 1e3:9.2f} us  (p20 {p20 * 1e3:.2f}, p80 {p80 * 1e3:.2f})")
    return times


def timings(stream) -> None:
    keep = []  # tensors and launches must outlive the graphs of their group

    def add(cases, name, shape, cublas=False, **kw):
        A, B, C = operands(*shape)
        keep.append((A, B, C))
        if cublas:
            cases[f"cublas {name}"] = ((lambda A=A, B=B: torch.mm(A, B, out_dtype=torch.float32)), "")
        p, fn = ours(A, B, C, stream, **kw)
        keep.append(p)
        cases[name] = (fn, f"grid {p.schedule.grid} {'+'.join(s.removeprefix('streamk_') for s in p.launch.names)}")

    x = torch.zeros(1, device="cuda")
    cases = {"noop (torch add_ on 1 element)": ((lambda: x.add_(1)), "")}
    for k in (32, 64, 128, 256, 512, 1024, 2048, 4096, 8192):
        add(cases, f"1 tile 128x128x{k}", (128, 128, k), cublas=k in (64, 1024, 8192), schedule="data-parallel")
    group("lone CTA: one 128x128 tile, k = 32 .. 8192", cases, stream)

    cases = {}
    for tiles, (m, n) in ((132, (1536, 1408)), (264, (1536, 2816)), (528, (3072, 2816))):
        for k in (64, 256, 1024, 4096):
            add(cases, f"{tiles} tiles {m}x{n}x{k}", (m, n, k), cublas=k == 1024, schedule="data-parallel")
    group("full machine: 1, 2 and 4 tiles per SM", cases, stream)

    cases = {}
    for fixup in ("owner-waits", "last-arrival", "separate-reduce", "atomic"):
        for s in (1, 2, 4, 8, 16, 32, 64):
            add(cases, f"1 tile 128x128x4096 split {s} {fixup}", (128, 128, 4096), schedule="fixed-split",
                splits=s, fixup=fixup)
    group("fixup: one tile split over s CTAs", cases, stream)

    cases = {}
    shape = (2560, 256, 288)  # 40 tiles of 9 iterations (like 2490x167x261)
    add(cases, "40 tiles x 9 it DP", shape, cublas=True, schedule="data-parallel")
    for g in (80, 120, 132, 264):
        add(cases, f"40 tiles x 9 it stream-k grid {g}", shape, schedule="stream-k", grid=g)
        add(cases, f"40 tiles x 9 it stream-k grid {g} sep-reduce", shape, schedule="stream-k", grid=g,
            fixup="separate-reduce")
    for s in (2, 3):
        add(cases, f"40 tiles x 9 it fixed-split {s}", shape, schedule="fixed-split", splits=s)
    add(cases, "40 tiles x 9 it auto", shape, schedule="auto")
    group("a 40-tile problem under several grids", cases, stream)

    cases = {}
    for shape in ((426, 181, 199), (185, 134, 1362), (2490, 167, 261)):
        name = "x".join(map(str, shape))
        A, B, C = operands(*shape)
        keep.append((A, B, C))
        cases[f"cublas raw {name}"] = ((lambda A=A, B=B: torch.mm(A, B, out_dtype=torch.float32)), "")
        p, fn = ours(A, B, C, stream, schedule="auto")
        keep.append(p)
        cases[f"auto raw {name}"] = (fn, f"grid {p.schedule.grid} {'+'.join(s.removeprefix('streamk_') for s in p.launch.names)}")
        iters = -(-shape[0] // 128) * -(-shape[1] // 128) * -(-shape[2] // 32)
        for g in sorted({min(g, iters) for g in (66, 132)}):
            p, fn = ours(A, B, C, stream, schedule="stream-k", grid=g, fixup="separate-reduce")
            keep.append(p)
            cases[f"sk {g} sep-reduce {name}"] = (fn, f"grid {p.schedule.grid}")
        packs = [st for st in p.launch.steps if "pack" in st.name]
        if packs:
            cases[f"pack only {name}"] = ((lambda packs=packs: [st.enqueue(stream.cuda_stream) for st in packs]), "")
    group("tiny raw shapes (packing included)", cases, stream)


def small(stream) -> None:
    """Where a small GEMM's time goes (small corpus shapes whose rows are 2-byte aligned): auto as
    shipped (pack pass + main kernel), the same tile on the GEMM with k and n rounded up to 8 (no
    pack), the pack pass alone, shifted copies instead of the pack (narrow="always"), cuBLAS raw and
    padded, and an empty kernel, as interleaved graph replays."""
    keep = []
    x = torch.zeros(1, device="cuda")
    cases = {"noop (torch add_ on 1 element)": ((lambda: x.add_(1)), "")}
    label = lambda p: f"grid {p.schedule.grid} {'+'.join(s.removeprefix('streamk_') for s in p.launch.names)}"
    for m, n, k in ((146, 395, 166), (459, 186, 151), (175, 213, 221), (426, 181, 199), (280, 176, 145),
                    (270, 198, 367), (427, 371, 371), (226, 727, 225), (1564, 261, 397), (223, 263, 830)):
        name = f"{m}x{n}x{k}"
        A, B, C = operands(m, n, k)
        k8, n8 = -(-k // 8) * 8, -(-n // 8) * 8  # the same GEMM with k and n rounded up: nothing to pack
        Ap = torch.zeros(m, k8, device="cuda", dtype=A.dtype)
        Bp = torch.zeros(k8, n8, device="cuda", dtype=B.dtype)
        Cp = torch.empty(m, n8, device="cuda")
        Ap[:, :k] = A
        Bp[:k, :n] = B
        keep += [A, B, C, Ap, Bp, Cp]
        cases[f"cublas raw {name}"] = ((lambda A=A, B=B: torch.mm(A, B, out_dtype=torch.float32)), "")
        Apad = torch.zeros(m, -(-k // 8) * 8, device="cuda", dtype=A.dtype)
        Bpad = torch.zeros(-(-k // 8) * 8, -(-n // 8) * 8, device="cuda", dtype=B.dtype)
        keep += [Apad, Bpad]
        cases[f"cublas padded {name}"] = ((lambda A=Apad, B=Bpad: torch.mm(A, B, out_dtype=torch.float32)), "")
        p, fn = ours(A, B, C, stream, schedule="auto")
        keep.append(p)
        cases[f"auto raw {name}"] = (fn, label(p))
        q, fn = ours(Ap, Bp, Cp, stream, schedule="auto", tile=p.schedule.tile)
        keep.append(q)
        cases[f"auto, k and n rounded up to 8 {name}"] = (fn, label(q))
        packs = [st for st in p.launch.steps if "pack" in st.name]
        if packs:
            cases[f"pack only {name}"] = ((lambda packs=packs: [st.enqueue(stream.cuda_stream) for st in packs]), "")
        w, fn = ours(A, B, C, stream, schedule=p.schedule, _tuning=Tuning("always"))
        keep.append(w)
        cases[f"auto, shifted copies {name}"] = (fn, label(w))
    group("small GEMMs: where the time goes", cases, stream)


TRACE_UNITS, TRACE_HEAD = 5, 3  # kernels/common/trace.cuh layout: entry, SM, pdl_wait return, then units
TRACE_WORDS = TRACE_HEAD + 3 * TRACE_UNITS


def trace_launch(p, stream, pair: bool = False) -> tuple[float, list[tuple[int, ...]]]:
    """One launch of prepared ``p`` after warm-up: (event us, per-CTA timestamps in ns). ``pair``:
    two back-to-back launches (the second by PDL where the GEMM launches so); the trace holds the
    second's (every event of it comes after the first's), the event time both."""
    with torch.cuda.stream(stream):
        for _ in range(5):
            p.launch.enqueue(stream.cuda_stream)
        e0, e1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        e0.record(stream)
        for _ in range(2 if pair else 1):
            p.launch.enqueue(stream.cuda_stream)
        e1.record(stream)
    torch.cuda.synchronize()
    grid = min(p.schedule.grid, 8192)
    raw = struct.unpack(f"<{grid * TRACE_WORDS}Q",
                        current().read_global(p.launch.names[-1], "streamk_trace", grid * TRACE_WORDS * 8))
    return e0.elapsed_time(e1) * 1e3, [raw[i * TRACE_WORDS:(i + 1) * TRACE_WORDS] for i in range(grid)]


def traces(stream, shapes: list[tuple[int, int, int]] | None = None, variants: list[str] | None = None,
           pair: bool = False) -> None:
    from streamk.bench.variants import variant

    print("\n== traces (one launch each, us). span: first CTA start to last unit end; per action: units, "
          "mainloop us per MAC iteration (median), epilogue (fixup included) median / p90 / max")
    cases = [("1 tile k=64", (128, 128, 64), dict(schedule="data-parallel")),
             ("1 tile k=1024", (128, 128, 1024), dict(schedule="data-parallel")),
             ("132 tiles k=1024", (1536, 1408, 1024), dict(schedule="data-parallel")),
             ("264 tiles k=1024", (1536, 2816, 1024), dict(schedule="data-parallel")),
             ("1 tile k=4096 split 8", (128, 128, 4096), dict(schedule="fixed-split", splits=8)),
             ("40 tiles x 9 it stream-k 120", (2560, 256, 288), dict(schedule="stream-k", grid=120)),
             ("1 tile k=4096 split 16 separate-reduce", (128, 128, 4096),
              dict(schedule="fixed-split", splits=16, fixup="separate-reduce")),
             ("40 tiles x 9 it stream-k 120 separate-reduce", (2560, 256, 288),
              dict(schedule="stream-k", grid=120, fixup="separate-reduce")),
             ("4 tiles 185x134x1362 auto", (185, 134, 1362), dict(schedule="auto")),
             ("6 tiles 313x181x5973 auto", (313, 181, 5973), dict(schedule="auto")),
             ("6 tiles 313x181x5973 data-parallel", (313, 181, 5973), dict(schedule="data-parallel"))]
    for shape in ((2176, 3200, 3200), (1280, 1536, 6720)):  # 425 tiles x 100 it; 120 tiles x 210 it
        cases += [(f"{shape} {d}", shape, dict(schedule=d, **kw)) for d, kw in
                  (("data-parallel", {}), ("auto", {}), ("stream-k", {"grid": 264}), ("stream-k", {"grid": 132}))]
    if shapes:  # --trace-shape: just these, under DP and auto (or --variants)
        cases = [(f"{'x'.join(map(str, sh))} {d}", sh, variant(d, lambda: current().sms)) for sh in shapes
                 for d in (variants or ("data-parallel", "auto"))]
    for name, shape, kw in cases:
        A, B, C = operands(*shape)
        p = prepare(A, B, C, **kw)
        event, t = trace_launch(p, stream, pair)
        s, plan = p.schedule, p.plan
        t0 = min(r[0] for r in t)
        ends = []
        per_action: dict[str, tuple[list, list]] = {}
        offsets = s.cta_offsets
        for cta, r in enumerate(t):
            for j in range(min(TRACE_UNITS, int(offsets[cta + 1] - offsets[cta]))):
                u = int(offsets[cta]) + j
                start, stop, done = r[TRACE_HEAD + 3 * j:TRACE_HEAD + 3 + 3 * j]
                iters = int(s.units[u, 2] - s.units[u, 1])
                ml, ep = per_action.setdefault(Action(int(plan.action[u])).name, ([], []))
                ml.append((stop - start) / 1e3 / max(iters, 1))
                ep.append((done - stop) / 1e3)
                ends.append(done)
        span = (max(ends) - t0) / 1e3
        parts = []
        for action, (ml, ep) in per_action.items():
            ep.sort()
            parts.append(f"{action} {len(ep)}: {statistics.median(ml):.3f}/it, epi {statistics.median(ep):.2f}"
                         f"/{ep[int(0.9 * (len(ep) - 1))]:.2f}/{ep[-1]:.2f}")
        lead = sorted((r[TRACE_HEAD] - r[0]) / 1e3 for r in t)  # a CTA's entry to its first mainloop's start
        enter = sorted((r[0] - t0) / 1e3 for r in t)  # when CTAs entered, after the first
        print(f"{name:<44} grid {s.grid:>4} {'+'.join(n.removeprefix('streamk_') for n in p.launch.names)} "
              f"event {event:8.2f} span {span:8.2f} | entry spread {enter[-1]:.2f}, entry to mainloop "
              f"{statistics.median(lead):.2f}/{lead[-1]:.2f} | " + " | ".join(parts))
        placement_report(s, t, per_action)
        if p.launch.steps[-1].cluster > 1:
            cluster_report(t, p.launch.steps[-1].cluster)
        if shapes:
            waits_report(s, plan, t, t0)
            position_report(s, plan, t)


def cluster_report(t, size: int = 2) -> None:
    """Where a launch's two-CTA clusters landed (%smid of ranks 2i and 2i + 1): on one TPC (SMs 2j,
    2j + 1), on two TPCs, or on one SM; whether a multicast can feed both SMs of a TPC at once.
    Clusters of four: how many TPCs each spans."""
    if size != 2:
        spans = [len({t[i + r][1] // 2 for r in range(size)}) for i in range(0, len(t) - size + 1, size)]
        print(f"    clusters: {len(spans)} of {size} CTAs, TPCs each: "
              + ", ".join(f"{n}: {spans.count(n)}" for n in sorted(set(spans))))
        return
    pairs = [(t[i][1], t[i + 1][1]) for i in range(0, len(t) - 1, 2)]
    same_sm = sum(a == b for a, b in pairs)
    same_tpc = sum(a != b and a // 2 == b // 2 for a, b in pairs)
    print(f"    clusters: {len(pairs)} pairs, {same_tpc} on one TPC, {same_sm} on one SM, "
          f"{len(pairs) - same_tpc - same_sm} on two TPCs (SM gap median "
          f"{statistics.median(abs(a - b) for a, b in pairs):.0f})")


def placement_report(s, t, per_action) -> None:
    """Where the CTAs ran: how many entered before the first pdl_wait returned (placed early, behind
    the kernel before), how many share a TPC (SMs 2i, 2i+1) with another CTA of this launch, and the
    first unit's mainloop us per MAC iteration of CTAs alone on their TPC against sharing ones."""
    release = min(r[2] for r in t if r[2])
    early = sum(r[0] < release for r in t)
    tpcs: dict[int, int] = {}
    for r in t:
        tpcs[r[1] // 2] = tpcs.get(r[1] // 2, 0) + 1
    rate: dict[bool, list[float]] = {True: [], False: []}
    offsets = s.cta_offsets
    for cta, r in enumerate(t):
        if offsets[cta + 1] > offsets[cta]:
            u = int(offsets[cta])
            iters = int(s.units[u, 2] - s.units[u, 1])
            start = max(r[TRACE_HEAD], r[2])  # the first mainloop begins once the wait returned
            rate[tpcs[r[1] // 2] > 1].append((r[TRACE_HEAD + 1] - start) / 1e3 / max(iters, 1))
    gpcs = len(tpcs)
    print(f"    placement: {early} of {len(t)} CTAs entered before the wait returned (latest entry "
          f"{(max(r[0] for r in t) - release) / 1e3:+.2f} us from it); {gpcs} TPCs used, "
          f"{sum(v > 1 for v in tpcs.values())} by two CTAs; first mainloop us/it alone "
          + (f"{statistics.median(rate[False]):.3f} ({len(rate[False])})" if rate[False] else "-")
          + ", sharing a TPC " + (f"{statistics.median(rate[True]):.3f} ({len(rate[True])})" if rate[True] else "-")
          + f"; span from the wait's return {(max(r[i] for r in t for i in range(TRACE_HEAD + 2, TRACE_WORDS, 3)) - release) / 1e3:.2f} us")


def position_report(s, plan, t) -> None:
    """Each CTA's j-th unit (j < TRACE_UNITS) across the launch: its actions, mainloop us per MAC
    iteration, epilogue and the gap to the CTA's next mainloop (medians; p90 of the epilogue), so a
    persistent or Stream-K CTA's later units show what the first unit's cold start hides (LOG.md v74)."""
    offsets = s.cta_offsets
    rows: list[tuple[dict, list, list, list]] = [({}, [], [], []) for _ in range(TRACE_UNITS)]
    for cta, r in enumerate(t):
        n = min(TRACE_UNITS, int(offsets[cta + 1] - offsets[cta]))
        for j in range(n):
            u = int(offsets[cta]) + j
            start, stop, done = r[TRACE_HEAD + 3 * j:TRACE_HEAD + 3 + 3 * j]
            actions, ml, ep, gap = rows[j]
            name = Action(int(plan.action[u])).name
            actions[name] = actions.get(name, 0) + 1
            ml.append((stop - start) / 1e3 / max(int(s.units[u, 2] - s.units[u, 1]), 1))
            ep.append((done - stop) / 1e3)
            if j + 1 < n:
                gap.append((r[TRACE_HEAD + 3 * (j + 1)] - done) / 1e3)
    for j, (actions, ml, ep, gap) in enumerate(rows):
        if ml:
            ep.sort()
            print(f"    unit {j}: {len(ml)} CTAs {actions} mainloop {statistics.median(ml):.3f} us/it, epilogue "
                  f"{statistics.median(ep):.2f} (p90 {ep[int(0.9 * (len(ep) - 1))]:.2f}), gap to the next "
                  + (f"{statistics.median(gap):.2f}" if gap else "-"))


def waits_report(s, plan, t, t0) -> None:
    """Where an owner-waits schedule's time goes: how long owners wait past their mainloop for
    the flags they need (a unit's signal goes out when its epilogue ends, or, deferred, when the
    CTA's next mainloop ends), and the last CTA to finish, unit by unit."""
    offsets = s.cta_offsets
    cta_of = np.repeat(np.arange(s.grid), np.diff(offsets))
    times = {}  # unit -> (start, stop, done) ns
    for cta, r in enumerate(t):
        for j in range(min(TRACE_UNITS, int(offsets[cta + 1] - offsets[cta]))):
            times[int(offsets[cta]) + j] = r[TRACE_HEAD + 3 * j:TRACE_HEAD + 3 + 3 * j]

    def signalled(q: int) -> float:
        deferred = q + 1 < offsets[cta_of[q] + 1] and q + 1 in times
        return times[q + 1][1] if deferred else times[q][2]

    waits = []
    for u, (start, stop, done) in times.items():
        need = [int(q) for q in plan.waits(u) if int(q) in times]
        if need:
            waits.append(((max(signalled(q) for q in need) - stop) / 1e3, u))
    if waits:
        w = sorted(x for x, _ in waits)
        print(f"    owner waits past its mainloop (us): median {statistics.median(w):.2f} p90 "
              f"{w[int(0.9 * (len(w) - 1))]:.2f} max {w[-1]:.2f} ({sum(x > 0 for x in w)} of {len(w)} wait)")
    last = max(range(len(t)), key=lambda c: max(times[u][2] for u in range(offsets[c], offsets[c + 1]) if u in times))
    steps = []
    for u in range(int(offsets[last]), int(offsets[last + 1])):
        if u in times:
            start, stop, done = times[u]
            steps.append(f"unit {u} {Action(int(plan.action[u])).name} it {int(s.units[u, 2] - s.units[u, 1])}: "
                         f"{(start - t0) / 1e3:.1f} -> {(stop - t0) / 1e3:.1f} -> {(done - t0) / 1e3:.1f}")
    print(f"    last CTA {last}: " + "; ".join(steps))


BIG_SHAPES = ((8192, 8192, 8192), (4096, 4096, 4096), (7168, 4224, 3584))


def big(stream, reps: int = 10, variants: list[str] | None = None, shapes=BIG_SHAPES, rounds: int = 1,
        pause: float = 0.0) -> None:
    """Large problems timed alone (no cuBLAS replays in between to heat the GPU), then cuBLAS.
    ``variants``: `streamk bench` variant texts. With ``rounds`` > 1 every round allocates fresh
    operands (their placement in memory moved one launch's time by up to 15% between processes,
    LOG.md v15) and times the variants in a rotated order; each variant's figure is the median
    over rounds of its median launch, with the rounds' min and max. ``pause``: seconds idle before
    each variant's warm-up: an 8192^3 GEMM runs the H100 into its 700 W cap within milliseconds
    (SM clock 1980 -> 1300-1650 MHz, LOG.md v15), so without a pause a variant timed right after
    another (or after cuBLAS) starts with a lower clock than the first."""
    from streamk.bench.variants import variant

    for m, n, k in shapes:
        print(f"\n== {m}x{n}x{k}, each variant alone: median of back-to-back launches"
              + (f", median over {rounds} rounds of fresh operands (min - max)" if rounds > 1 else ""))
        if variants:
            named = [(text, variant(text, lambda: current().sms)) for text in variants]
        else:
            named = [("data-parallel", dict(schedule="data-parallel")), ("auto", dict(schedule="auto"))]
            if m == 8192:
                named += [("data-parallel grouped-8", dict(schedule="data-parallel", tile_order="grouped-8")),
                          ("persistent DP grid 264", dict(schedule="data-parallel", grid=264))]
        names = [name for name, _ in named] + ["cublas"]
        times: dict[str, list[float]] = {name: [] for name in names}
        grids: dict[str, str] = {}
        held = []  # earlier rounds' operands stay allocated, so each round's lie elsewhere
        for r in range(rounds):
            A, B, C = operands(m, n, k)
            held.append((A, B, C))
            fns = {}
            for name, kw in named:
                p, fns[name] = ours(A, B, C, stream, **kw)
                grids[name] = f"{p.schedule.tile.bm}x{p.schedule.tile.bn} grid {p.schedule.grid}"
            fns["cublas"] = lambda A=A, B=B: torch.mm(A, B, out_dtype=torch.float32)
            order = names[r % len(names):] + names[:r % len(names)]
            for name, (med, _, _) in time_alone({name: fns[name] for name in order}, stream, pause, reps).items():
                times[name].append(med)
            del fns
        flop = 2 * m * n * k
        for name in names:
            ms = statistics.median(times[name])
            spread = (f"  ({flop / max(times[name]) / 1e9:6.1f} - {flop / min(times[name]) / 1e9:6.1f})"
                      if rounds > 1 else "")
            print(f"{name:<36} {grids.get(name, ''):>20} {ms * 1e3:9.1f} us  {flop / ms / 1e9:6.1f} TFLOP/s{spread}")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--trace", action="store_true", help="phases from a STREAMK_TRACE=1 build")
    ap.add_argument("--big", action="store_true", help="only 8192^3, each variant alone")
    ap.add_argument("--variants", help="with --big or --trace-shape: variants (`streamk bench` --decomps grammar, "
                    "';'-separated) timed in order, e.g. 'data-parallel;data-parallel#128x256;data-parallel'")
    ap.add_argument("--shapes", help="with --big: MxNxK,... instead of 8192^3, 4096^3, 7168x4224x3584")
    ap.add_argument("--reps", type=int, default=10, help="with --big: timed launches per variant")
    ap.add_argument("--pause", type=float, default=0.0, help="with --big: seconds idle before each variant")
    ap.add_argument("--rounds", type=int, default=1, help="with --big: rounds of fresh operands, variants rotated")
    ap.add_argument("--small", action="store_true", help="only where small GEMMs' time goes (pack, main, cuBLAS)")
    ap.add_argument("--pair", action="store_true",
                    help="with --trace: trace the second of two back-to-back launches (PDL behind the first)")
    ap.add_argument("--trace-shape", action="append", default=[], metavar="MxNxK",
                    help="with --trace: trace these shapes (DP and auto) instead of the built-in cases")
    args = ap.parse_args()
    if args.trace:  # the documented debug build (streamk.gpu.build): before the first kernel compiles
        os.environ["STREAMK_TRACE"] = "1"
    dev = current()
    print(f"device {dev.name} ({dev.arch}, {dev.sms} SMs), torch {torch.__version__}")
    stream = torch.cuda.Stream()
    if args.big:
        shapes = (tuple(tuple(int(v) for v in t.split("x")) for t in args.shapes.split(","))
                  if args.shapes else BIG_SHAPES)
        big(stream, args.reps, args.variants.split(";") if args.variants else None, shapes, args.rounds, args.pause)
    elif args.small:
        small(stream)
    elif args.trace:
        traces(stream, [tuple(int(v) for v in t.split("x")) for t in args.trace_shape],
               args.variants.split(";") if args.variants else None, args.pair)
    else:
        timings(stream)
    return 0


if __name__ == "__main__":
    sys.exit(main())
