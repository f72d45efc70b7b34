"""Correctness of the GPU backend on the device: every decomposition x fixup policy x precision.

Random normal inputs (never zeros), C poisoned with NaN before each beta = 0 run, a float64
reference from the same rounded inputs, STYLE.md's bound
    |C - ref| <= 4*sqrt(k)*eps(acc)*|alpha|*(|A|@|B|) + eps(out)*|ref| + eps(out)*|beta*C0|,
edge shapes (m, n or k = 1, primes, not multiples of the tile), column-major operands,
deterministic policies bitwise identical over repeated launches, 1,000 back-to-back launches
with no reset, CUDA-graph replays (fresh epochs from device memory), NumPy and CuPy inputs, and
a deadlock-prone schedule refused. Prints a summary table last; full log in $OUT/check.jsonl.

    PYTHONPATH=. python3 benchmarks/gpu_check.py [--quick] [--dtypes float16,...] [--tiles 128,64]
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
import time

import numpy as np
import torch

from streamk.errors import DeadlockError, ScheduleError
from streamk.gpu import available, gemm, prepare
from streamk.gpu.device import current
from streamk.schedule import FIXUP_POLICIES, Schedule
from streamk.shapes import GemmShape, TileShape

DECOMPS = [("data-parallel", {}), ("fixed-split", {"splits": 3}), ("stream-k", {}), ("stream-k", {"grid": 7}),
           ("dp-one-tile-sk", {}), ("two-tile-sk-dp", {}), ("auto", {})]
EDGE = [(1, 1, 1), (1, 300, 77), (300, 1, 77), (129, 130, 1), (7, 13, 17), (127, 129, 31), (131, 257, 67),
        (256, 256, 256), (509, 263, 1021), (1000, 999, 1001), (2048, 1536, 2000),
        # rows 8- or 4-byte aligned (k or n % 8 != 0 but even): read in place by the _w8/_w4 kernels
        (200, 130, 90), (150, 124, 252), (333, 136, 100), (96, 258, 44)]
DTYPES = {"float16": torch.float16, "bfloat16": torch.bfloat16, "float64": torch.float64}
TORCH_ACC = {"float16": torch.float32, "bfloat16": torch.float32, "float64": torch.float64}


def corpus(count: int, seed: int = 20260121) -> list[tuple[int, int, int]]:
    rng = np.random.default_rng(seed)
    return [tuple(int(round(math.exp(v))) for v in rng.uniform(math.log(128), math.log(8192), 3))
            for _ in range(count)]


def make_inputs(m, n, k, dtype, layout, gen):
    A = torch.randn(m, k, generator=gen, device="cuda").to(DTYPES[dtype])
    B = torch.randn(k, n, generator=gen, device="cuda").to(DTYPES[dtype])
    if layout[0] == "C":
        A = A.t().contiguous().t()
    if layout[1] == "C":
        B = B.t().contiguous().t()
    return A, B


def error_ratio(C, A, B, alpha, beta, C0, dtype):
    """max |C - ref| / bound over the elements (<= 1 passes; NaN fails)."""
    k = A.shape[1]
    a, b = A.double(), B.double()
    ref = alpha * (a @ b)
    mag = abs(alpha) * (a.abs() @ b.abs())
    if beta != 0.0:
        ref = ref + beta * C0.double()
    eps_acc = torch.finfo(TORCH_ACC[dtype]).eps / 2
    bound = 4 * math.sqrt(k) * eps_acc * mag + eps_acc * ref.abs() + eps_acc * (abs(beta) * C0.double().abs() if beta else 0)
    bound = bound + 1e-300
    diff = (C.double() - ref).abs()
    if torch.isnan(C).any():
        return float("inf")
    return float((diff / bound).max())


def run_case(log, dtype, shape, decomp, options, policy, layout, alpha, beta, gen, repeats=2):
    m, n, k = shape
    A, B = make_inputs(m, n, k, dtype, layout, gen)
    C0 = torch.randn(m, n, generator=gen, device="cuda").to(TORCH_ACC[dtype])
    outs = []
    row = {"dtype": dtype, "shape": shape, "decomp": decomp, "options": options, "policy": policy,
           "layout": layout, "alpha": alpha, "beta": beta}
    try:
        for _ in range(repeats):
            C = C0.clone() if beta != 0.0 else torch.full((m, n), float("nan"), device="cuda", dtype=TORCH_ACC[dtype])
            prepared = prepare(A, B, C, alpha=alpha, beta=beta, schedule=decomp, fixup=policy, **options)
            prepared.run()
            torch.cuda.synchronize()
            outs.append(C)
    except DeadlockError as exc:
        row.update(ok=True, refused=str(exc))
        log.write(json.dumps(row) + "\n")
        return row
    except ScheduleError as exc:  # e.g. --grid 7 on a 1-iteration problem: not a GPU case
        row.update(ok=True, skipped=str(exc))
        log.write(json.dumps(row) + "\n")
        return row
    ratio = error_ratio(outs[0], A, B, alpha, beta, C0, dtype)
    bitwise = all(torch.equal(outs[0], o) for o in outs[1:])
    deterministic = policy != "atomic"
    row.update(grid=prepared.schedule.grid, units=len(prepared.schedule.units),
               split_tiles=int(len(prepared.plan.split_tiles)), steps=prepared.launch.names, ratio=ratio,
               bitwise=bitwise, ok=ratio <= 1.0 and (bitwise or not deterministic))
    log.write(json.dumps(row) + "\n")
    return row


def relaunched(p, C, launches: int):
    """C after one launch of prepared ``p`` (a copy), then ``launches`` more with no reset."""
    p.run()
    torch.cuda.synchronize()
    first = C.clone()
    for _ in range(launches):
        p.run()
    torch.cuda.synchronize()
    return first


def back_to_back(log, launches=1000):
    """1,000 launches of waiting schedules with no reset, then graph replays: still correct."""
    gen = torch.Generator(device="cuda").manual_seed(7)
    rows = []
    cases = [(policy, 128, False, (1000, 1000, 3000))
             for policy in ("owner-waits", "turnstile", "last-arrival", "separate-reduce")]
    cases += [("owner-waits", 64, False, (1000, 1000, 3000)),  # the small tile's kernels share the epochs
              ("separate-reduce", 64, False, (1000, 1000, 3000)),
              # packed operands: main kernel behind the pack pass, reduce pass behind it, with PDL
              ("separate-reduce", 64, True, (999, 1001, 2999)), ("separate-reduce", 128, True, (999, 1001, 2999)),
              ("owner-waits", 128, True, (999, 1001, 2999))]
    for policy, tile, pdl, (m, n, k) in cases:
        A, B = make_inputs(m, n, k, "float16", "RR", gen)
        C = torch.full((m, n), float("nan"), device="cuda")
        p = prepare(A, B, C, schedule="stream-k", fixup=policy, tile=tile, pdl=pdl)
        if pdl and not any(st.pdl for st in p.launch.steps):
            raise AssertionError(f"no PDL step in {p.launch.steps}")
        first = relaunched(p, C, launches)
        ratio = error_ratio(C, A, B, 1.0, 0.0, None, "float16")
        same = torch.equal(C, first)
        graph = torch.cuda.CUDAGraph()
        stream = torch.cuda.Stream()
        with torch.cuda.stream(stream):
            p.run(stream.cuda_stream)  # warm-up on the capture stream
            torch.cuda.synchronize()
            with torch.cuda.graph(graph, stream=stream):
                for _ in range(5):
                    p.launch.enqueue(stream.cuda_stream)
        C.fill_(float("nan"))
        for _ in range(200):
            graph.replay()
        torch.cuda.synchronize()
        graph_same = torch.equal(C, first)
        row = {"test": "back-to-back", "policy": policy, "tile": tile, "pdl": pdl, "shape": (m, n, k),
               "launches": launches, "ratio": ratio, "bitwise": same,
               "graph_replays_bitwise": graph_same, "ok": ratio <= 1 and same and graph_same}
        log.write(json.dumps(row) + "\n")
        rows.append(row)
    return rows


def auto_defaults(log, launches=100) -> list[dict]:
    """auto as a user calls it (no policy): on GEMMs of a wave or more of 128x256 tiles it runs the
    two-tile hybrid walked backwards under turnstile (api.resolve_schedule), a path the policy
    matrix above never takes; correct, bitwise equal over back-to-back launches."""
    gen = torch.Generator(device="cuda").manual_seed(11)
    rows = []
    for dtype in ("float16", "bfloat16"):
        for m, n, k in ((2048, 4352, 1056), (2047, 4351, 1057), (3071, 3073, 4095), (1536, 5120, 2016)):
            A, B = make_inputs(m, n, k, dtype, "RR", gen)
            C = torch.full((m, n), float("nan"), device="cuda")
            p = prepare(A, B, C)
            first = relaunched(p, C, launches)
            s = p.schedule
            ratio = error_ratio(C, A, B, 1.0, 0.0, None, dtype)
            row = {"test": "auto-default", "dtype": dtype, "shape": (m, n, k), "tile": str(s.tile),
                   "grid": s.grid, "fixup": s.fixup, "split_tiles": int(len(p.plan.split_tiles)),
                   "steps": p.launch.names, "ratio": ratio, "bitwise": torch.equal(C, first),
                   "ok": ratio <= 1 and torch.equal(C, first)}
            log.write(json.dumps(row) + "\n")
            rows.append(row)
    return rows


def other_inputs(log):
    rows = []
    rng = np.random.default_rng(3)
    A = rng.standard_normal((77, 45)).astype(np.float16)
    B = rng.standard_normal((45, 33)).astype(np.float16)
    C = gemm(A, B, schedule="stream-k", fixup="turnstile")
    ref = A.astype(np.float64) @ B.astype(np.float64)
    ok = isinstance(C, np.ndarray) and C.dtype == np.float32 and np.abs(C - ref).max() < 1e-2
    rows.append({"test": "numpy", "ok": bool(ok), "max_abs": float(np.abs(C - ref).max())})
    try:
        import cupy

        Ac, Bc = cupy.asarray(A), cupy.asarray(B)
        Cc = gemm(Ac, Bc, schedule="auto")
        ok = isinstance(Cc, cupy.ndarray) and float(abs(cupy.asnumpy(Cc) - ref).max()) < 1e-2
        rows.append({"test": "cupy", "ok": bool(ok)})
    except ImportError:
        rows.append({"test": "cupy", "ok": True, "skipped": "cupy not installed"})
    dev = current()
    slots = dev.sms * dev.occupancy("streamk_sm80_f16", dev.block_size("streamk_sm80_f16"),
                                    dev.smem_bytes("streamk_sm80_f16"))
    t = slots + 1  # owners 0..t-1 wait on peers t..2t-1: needs t + 1 co-resident CTAs
    tile = TileShape(128, 128, 32)
    s = Schedule.from_ctas("custom", GemmShape(t * 128, 128, 64), tile,
                           [[(i, 0, 1)] for i in range(t)] + [[(i, 1, 2)] for i in range(t)])
    A2 = torch.randn(t * 128, 64, device="cuda").half()
    B2 = torch.randn(64, 128, device="cuda").half()
    try:
        gemm(A2, B2, schedule=s)
        rows.append({"test": "deadlock-refused", "ok": False})
    except DeadlockError as exc:
        rows.append({"test": "deadlock-refused", "ok": True, "message": str(exc)})
    C2 = gemm(A2, B2, schedule=s, fixup="turnstile")
    rows.append({"test": "turnstile-runs-it", "ok": error_ratio(C2, A2, B2, 1.0, 0.0, None, "float16") <= 1})
    rows += strided_outputs()
    for r in rows:
        log.write(json.dumps(r) + "\n")
    return rows


def strided_outputs() -> list[dict]:
    """C that is column-major, or a view at an odd offset inside a wider matrix (rows 4-byte
    aligned only), with beta != 0: the epilogue's element-wise and narrow store paths."""
    rows = []
    gen = torch.Generator(device="cuda").manual_seed(11)
    for dtype in ("float16", "float64"):
        m, n, k = 300, 200, 160
        A, B = make_inputs(m, n, k, dtype, "RR", gen)
        for layout in ("column-major", "offset-view"):
            for decomp, options, policy in (("data-parallel", {}, None), ("stream-k", {}, "atomic"),
                                            ("fixed-split", {"splits": 2}, "separate-reduce"),
                                            ("stream-k", {}, "owner-waits")):
                C0 = torch.randn(m, n, generator=gen, device="cuda").to(TORCH_ACC[dtype])
                if layout == "column-major":
                    C = C0.t().contiguous().t()
                else:
                    big = torch.zeros(m + 3, n + 5, device="cuda", dtype=TORCH_ACC[dtype])
                    C = big[1:1 + m, 3:3 + n]
                    C.copy_(C0)
                gemm(A, B, C, alpha=0.75, beta=-1.25, schedule=decomp, fixup=policy, **options)
                ratio = error_ratio(C, A, B, 0.75, -1.25, C0, dtype)
                rows.append({"test": f"strided-C {dtype} {layout} {decomp} {policy}", "ok": ratio <= 1, "ratio": ratio})
    return rows


def unaligned_rows(log) -> list[dict]:
    """Row-major FP16/BF16 operands whose rows are only 2-byte aligned (odd k or n, views at odd
    element offsets) under narrow="always", every fixup path: each such case must be packed (no
    kernel reads 2-byte-aligned rows in place). Views put the operands at element offsets 1, 5 and
    6 with row strides of every residue mod 8 (odd, 2, 4, 6 and 0 past the row)."""
    rows = []
    gen = torch.Generator(device="cuda").manual_seed(13)
    shapes = [(1, 1, 1), (7, 13, 17), (129, 130, 63), (131, 257, 67), (509, 263, 1021), (1000, 999, 1001),
              (300, 301, 3001), (2048, 1536, 2001)]
    cases = [("data-parallel", {}, None), ("stream-k", {"grid": 7}, "owner-waits"), ("auto", {}, None),
             ("fixed-split", {"splits": 3}, "separate-reduce"), ("stream-k", {}, "turnstile")]
    for dtype, tile in (("float16", 128), ("bfloat16", 128), ("float16", 64), ("bfloat16", 64)):
        for m, n, k in shapes:
            # (A's column offset, A's extra row length, B's column offset, B's extra row length)
            for view in ((0, 0, 0, 0), (1, 3, 1, 2), (5, 7, 6, 8), (6, 10, 5, 12)):
                A, B = make_inputs(m, n, k, dtype, "RR", gen)
                if any(view):  # B also starts one row in
                    oa, xa, ob, xb = view
                    bigA = torch.zeros(m, k + xa, device="cuda", dtype=DTYPES[dtype])
                    bigB = torch.zeros(k + 1, n + xb, device="cuda", dtype=DTYPES[dtype])
                    bigA[:, oa:oa + k] = A
                    bigB[1:, ob:ob + n] = B
                    A, B = bigA[:, oa:oa + k], bigB[1:, ob:ob + n]
                for decomp, options, policy in cases:
                    if "splits" in options:
                        options = {"splits": min(3, -(-k // 32))}
                    C = torch.full((m, n), float("nan"), device="cuda")
                    where = f" view {view}" if any(view) else ""
                    row = {"test": f"unaligned {dtype} {tile} {m}x{n}x{k}{where} {decomp} {policy}"}
                    try:
                        p = prepare(A, B, C, schedule=decomp, fixup=policy, narrow="always", tile=tile, **options)
                    except ScheduleError as exc:
                        row.update(ok=True, skipped=str(exc))
                        rows.append(row)
                        continue
                    p.run()
                    torch.cuda.synchronize()
                    ratio = error_ratio(C, A, B, 1.0, 0.0, None, dtype)
                    packed = any(name.startswith("streamk_pack_") for name in p.launch.names)
                    needs = k % 2 == 1 or n % 2 == 1 or view[0] % 2 == 1 or view[2] % 2 == 1
                    row.update(ok=ratio <= 1 and (packed or not needs), ratio=ratio, steps=p.launch.names)
                    rows.append(row)
    for r in rows:
        log.write(json.dumps(r) + "\n")
    ran = [r for r in rows if "ratio" in r]
    print(f"2-byte-aligned rows (packed): {sum(r['ok'] for r in rows)}/{len(rows)} ok, "
          f"max err/bound {max(r['ratio'] for r in ran):.3g}", flush=True)
    return rows


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--corpus", type=int, default=6, help="corpus shapes per dtype")
    parser.add_argument("--out", default=os.environ.get("OUT", "."))
    parser.add_argument("--dtypes", default=",".join(DTYPES),
                        help="comma list; anything but all of them skips the extra tests (a kernel variant's check)")
    parser.add_argument("--tiles", default="128,64",
                        help="FP16/BF16 tiles to check (edges such as 64 or tiles such as 128x64), each case on "
                             "each (FP64 runs its one tile)")
    args = parser.parse_args()
    dtypes = [d for d in args.dtypes.split(",") if d]
    tiles = [int(t) if t.isdigit() else t for t in args.tiles.split(",") if t]
    unknown = set(dtypes) - set(DTYPES)
    if unknown:
        parser.error(f"unknown dtypes {sorted(unknown)} (known: {', '.join(DTYPES)})")
    ok, why = available()
    if not ok:
        print(f"no GPU: {why}")
        return 2
    dev = current()
    print(f"device {dev.name} ({dev.arch}, {dev.sms} SMs)", flush=True)
    log = open(os.path.join(args.out, "check.jsonl"), "w")
    gen = torch.Generator(device="cuda").manual_seed(20260121)
    summary: dict[str, list] = {}
    failures = []
    start = time.time()
    shapes = EDGE + corpus(args.corpus)
    for dtype, tile in [(d, t) for d in dtypes for t in (tiles if d != "float64" else [None])]:
        key = dtype if tile is None else f"{dtype} {tile}"
        for shape in shapes:
            if dtype == "float64" and math.prod(shape) > 2e9:
                continue
            decomps = DECOMPS if not args.quick else DECOMPS[:3]
            for d, (decomp, options) in enumerate(decomps):
                for q, policy in enumerate(FIXUP_POLICIES):
                    layout = ["RR", "CR", "RC", "CC"][(sum(shape) + d + q) % 4]
                    alpha, beta = (1.0, 0.0) if policy != "atomic" else (1.5, 0.5)
                    if decomp == "stream-k" and options:
                        alpha, beta = 0.75, -1.25
                    if "splits" in options:  # fixed-split needs splits <= iterations per tile
                        options = {"splits": min(3, -(-shape[2] // (16 if dtype == "float64" else 32)))}
                    tiled = options if tile is None else {**options, "tile": tile}
                    row = run_case(log, dtype, shape, decomp, tiled, policy, layout, alpha, beta, gen)
                    summary.setdefault(key, []).append(row)
                    if not row["ok"]:
                        failures.append(row)
                        print("FAIL", json.dumps(row), flush=True)
        print(f"{key}: {len(summary[key])} cases, {time.time() - start:.0f}s", flush=True)
    extra = (back_to_back(log) + auto_defaults(log) + other_inputs(log) + unaligned_rows(log)
             if set(dtypes) == set(DTYPES) else [])
    for r in extra:
        if not r["ok"]:
            failures.append(r)
            print("FAIL", json.dumps(r), flush=True)
        else:
            print("ok", json.dumps(r)[:300])
    print(f"\n{'dtype tile':<13} {'cases':>6} {'pass':>6} {'skipped':>8} {'refused':>8} {'max err/bound':>14} "
          f"{'bitwise-det':>12}")
    for dtype, rows in summary.items():
        ran = [r for r in rows if "ratio" in r]
        print(f"{dtype:<13} {len(rows):>6} {sum(r['ok'] for r in rows):>6} {sum('skipped' in r for r in rows):>8} "
              f"{sum('refused' in r for r in rows):>8} "
              f"{max(r['ratio'] for r in ran):>14.3g} "
              f"{sum(r['bitwise'] for r in ran if r['policy'] != 'atomic'):>5}/{sum(r['policy'] != 'atomic' for r in ran)}")
    mains: dict[str, int] = {}
    for rows in summary.values():
        for r in rows:
            for step in r.get("steps", []):
                if "_sm80_" in step:
                    mains[step] = mains.get(step, 0) + 1
    print("main kernels run: " + ", ".join(f"{k} {v}" for k, v in sorted(mains.items())))
    print(f"extra tests: {sum(r['ok'] for r in extra)}/{len(extra)} ok; failures: {len(failures)}; "
          f"{time.time() - start:.0f}s")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
