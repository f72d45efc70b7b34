"""On a GPU: gemm() as a library: repeated calls from the plan cache, many streams and threads
at once, CUDA graphs (PyTorch and CuPy), torch.compile, schedules that could never finish
refused and every accepted one finishing, and torch's operand semantics."""

from __future__ import annotations

import math
import threading

import numpy as np
import pytest

from gpu_support import GPU, error_ratio, inputs, relaunched
from streamk import GemmShape, Schedule, TileShape
from streamk.errors import DeadlockError, ScheduleError
from streamk.schedule import FIXUP_POLICIES

pytestmark = GPU

# (shape, schedule, fixup, options, layout): owner-waits Stream-K waits upward (ordered device-wide
# against other such launches), the others only backward or not at all; the GEMVs as auto runs
# them (the 64x8 dot tile split over CTAs with a reduce pass, the 8x128 one, and torch Linear's
# x @ W.t() run as its transpose)
MIX = [((700, 500, 3000), "stream-k", "owner-waits", {}, "RR"),
       ((700, 500, 3000), "stream-k", "turnstile", {"walk": "backward"}, "RR"),
       ((999, 1001, 2999), "stream-k", "last-arrival", {"grid": 40}, "RR"),
       ((300, 900, 4000), "fixed-split", "separate-reduce", {"splits": 4}, "RR"),
       ((1024, 1024, 1024), "auto", None, {}, "RR"),
       ((257, 131, 2000), "auto", None, {"tile": 64}, "RR"),
       ((2000, 3, 3001), "auto", None, {}, "RR"),
       ((4, 3000, 2500), "auto", None, {}, "RR"),
       ((1, 2048, 3001), "auto", None, {}, "RC")]


def _mix(gen):
    out = []
    for (m, n, k), schedule, fixup, options, layout in MIX:
        A, B = inputs(m, n, k, "float16", gen, layout)
        out.append((A, B, dict(schedule=schedule, fixup=fixup, **options)))
    return out


def test_a_repeated_call_is_a_cache_hit_and_a_new_signature_a_miss():
    import torch

    from streamk.gpu import cache_info, gemm

    gen = torch.Generator(device="cuda").manual_seed(1)
    A, B = inputs(333, 222, 111, "float16", gen)
    gemm(A, B)
    before = cache_info()[A.device.index]
    for _ in range(10):
        C = gemm(A, B)
    after = cache_info()[A.device.index]
    assert after["hits"] - before["hits"] == 10 and after["misses"] == before["misses"]
    gemm(A[:, 1:], B[1:])  # another signature: other shapes and alignment
    assert cache_info()[A.device.index]["misses"] == after["misses"] + 1
    assert error_ratio(C, A, B) <= 1


def test_gemms_on_four_streams_at_once_are_bitwise_their_lone_results():
    import torch

    from streamk.gpu import gemm

    from streamk.gpu import prepare

    gen = torch.Generator(device="cuda").manual_seed(2)
    cases = _mix(gen)
    plans = [prepare(A, B, **kw) for A, B, kw in cases]
    names = {name for p in plans for name in p.launch.names}
    assert {"streamk_dot_f16", "streamk_dot_t_f16"} <= names and plans[-1].transposed, names  # the GEMV paths
    alone = [gemm(A, B, **kw) for A, B, kw in cases]
    torch.cuda.synchronize()
    for (A, B, kw), C in zip(cases, alone):
        assert error_ratio(C, A, B) <= 1, kw
    streams = [torch.cuda.Stream() for _ in range(4)]
    outs = [[torch.full_like(C, math.nan) for C in alone] for _ in streams]
    launches = 0
    for rnd in range(100):
        for s, stream in enumerate(streams):
            with torch.cuda.stream(stream):
                for i, (A, B, kw) in enumerate(cases):
                    j = (i + s + rnd) % len(cases)  # every stream its own order
                    gemm(cases[j][0], cases[j][1], outs[s][j], **cases[j][2])
                    launches += 1
    torch.cuda.synchronize()
    assert launches == 100 * len(streams) * len(cases)
    for s in range(len(streams)):
        for j, C in enumerate(alone):
            assert torch.equal(outs[s][j], C), (s, cases[j][2])


def test_the_same_prepared_gemm_on_two_streams_at_once():
    import torch

    from streamk.gpu import prepare

    gen = torch.Generator(device="cuda").manual_seed(3)
    A, B = inputs(1000, 1000, 3000, "float16", gen)
    Cs = [torch.full((1000, 1000), math.nan, device="cuda") for _ in range(2)]
    ps = [prepare(A, B, C, schedule="stream-k", fixup="owner-waits") for C in Cs]
    streams = [torch.cuda.Stream() for _ in range(2)]
    for _ in range(200):
        for p, stream in zip(ps, streams):
            p.launch.enqueue(stream.cuda_stream)
        ps[0].launch.enqueue(streams[1].cuda_stream)  # one prepared GEMM on both streams
    torch.cuda.synchronize()
    assert error_ratio(Cs[0], A, B) <= 1 and torch.equal(Cs[0], Cs[1])


def test_threads_each_on_their_own_stream():
    import torch

    from streamk.gpu import gemm

    gen = torch.Generator(device="cuda").manual_seed(4)
    cases = _mix(gen)
    alone = [gemm(A, B, **kw) for A, B, kw in cases]
    torch.cuda.synchronize()
    results, errors = {}, []

    def work(t: int) -> None:
        try:
            stream = torch.cuda.Stream()
            with torch.cuda.stream(stream):
                outs = [gemm(A, B, **kw) for _ in range(50) for A, B, kw in cases][-len(cases):]
            stream.synchronize()
            results[t] = outs
        except Exception as exc:  # noqa: BLE001 - reported by the assertion below
            errors.append(repr(exc))

    threads = [threading.Thread(target=work, args=(t,)) for t in range(3)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    assert not errors, errors
    for outs in results.values():
        assert all(torch.equal(o, C) for o, C in zip(outs, alone))


def test_1000_launches_without_a_reset_stay_bitwise_equal():
    import torch

    from streamk.gpu import prepare

    gen = torch.Generator(device="cuda").manual_seed(5)
    for policy in ("owner-waits", "turnstile", "last-arrival", "separate-reduce"):
        A, B = inputs(999, 1001, 2999, "float16", gen)
        C = torch.full((999, 1001), math.nan, device="cuda")
        p = prepare(A, B, C, schedule="stream-k", fixup=policy)
        first, last = relaunched(p, C, 1000)
        assert error_ratio(first, A, B) <= 1 and torch.equal(last, first), policy


@pytest.mark.parametrize("policy", ["owner-waits", "last-arrival", "turnstile"])
def test_back_to_back_gemms_on_one_lane_launch_by_pdl_and_stay_bitwise_equal(policy):
    """sm_90: a GEMM's first main kernel launches by programmatic dependent launch behind whatever
    kernel ran before it on the stream, here the other GEMM's on the same lane, whose last CTA bumps
    the epoch that flags and counters are compared with and re-arms the done count: the main kernel
    reads them only after griddepcontrol.wait (outer_loop.cuh). Two Stream-K GEMMs of other grids
    alternate on one stream, queued behind a sleep so they run back to back, each into its own C,
    then the same captured in a CUDA graph and replayed: every C bitwise the lone launch's."""
    import torch

    from streamk.fixup import needs_epoch
    from streamk.gpu import gemm, prepare
    from streamk.gpu.runtime.device import current

    dev = current()
    if int("".join(ch for ch in dev.arch if ch.isdigit())) < 90:
        pytest.skip(f"programmatic dependent launch is sm_90's ({dev.arch} here)")
    gen = torch.Generator(device="cuda").manual_seed(23)
    walk = {"walk": "backward"} if policy == "turnstile" else {}  # its waits only backward: no co-residency order
    cases = []
    # CTAs of at most eight 128x128x64 iterations, which launch by PDL behind any kernel by default
    for (m, n, k), grid in (((1000, 1000, 768), dev.sms), ((512, 768, 1536), dev.sms - 20)):
        A, B = inputs(m, n, k, "float16", gen)
        kw = dict(schedule="stream-k", fixup=policy, grid=grid, tile="128x128x64", **walk)
        p = prepare(A, B, **kw)
        assert needs_epoch(p.plan) and len(p.launch.steps) == 1 and p.launch.steps[0].pdl, p.launch.steps
        alone = p.run().clone()
        assert error_ratio(alone, A, B) <= 1
        cases.append((A, B, kw, alone))
    stream, rounds = torch.cuda.Stream(), 60
    outs = [[torch.full_like(alone, math.nan) for _ in range(rounds)] for _, _, _, alone in cases]
    stream.wait_stream(torch.cuda.current_stream())  # the NaN fills first
    with torch.cuda.stream(stream):
        torch.cuda._sleep(50_000_000)  # the host queues every launch before the first starts
        for r in range(rounds):
            for (A, B, kw, _), out in zip(cases, outs):
                gemm(A, B, out[r], **kw)
    stream.synchronize()
    for (_, _, _, alone), out in zip(cases, outs):
        assert all(torch.equal(C, alone) for C in out), policy
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph, stream=stream):
        for r in range(rounds // 3):
            for (A, B, kw, _), out in zip(cases, outs):
                gemm(A, B, out[r], **kw)
    for _ in range(3):
        for out in outs:
            for C in out:
                C.fill_(math.nan)
        graph.replay()
        torch.cuda.synchronize()
        for (_, _, _, alone), out in zip(cases, outs):
            assert all(torch.equal(C, alone) for C in out[:rounds // 3]), policy


@pytest.mark.parametrize("warm", [True, False], ids=["warmed-up", "first-call-in-capture"])
def test_torch_cuda_graph_replays_with_new_inputs(warm):
    import torch

    from streamk.gpu import gemm

    gen = torch.Generator(device="cuda").manual_seed(6 + warm)
    cases = _mix(gen)
    outs = [torch.empty(A.shape[0], B.shape[1], device="cuda") for A, B, _ in cases]
    stream = torch.cuda.Stream()
    if warm:
        with torch.cuda.stream(stream):
            for (A, B, kw), C in zip(cases, outs):
                gemm(A, B, C, **kw)
        stream.synchronize()
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph, stream=stream):
        for (A, B, kw), C in zip(cases, outs):
            gemm(A, B, C, **kw)
        fresh = gemm(cases[0][0], cases[0][1])  # allocated inside the capture (the graph's pool)
    for rnd in range(3):
        for A, B, _ in cases:  # new values in the captured input buffers
            A.copy_(torch.randn(A.shape, generator=gen, device="cuda"))
            B.copy_(torch.randn(B.shape, generator=gen, device="cuda"))
        for C in outs:
            C.fill_(math.nan)
        graph.replay()
        torch.cuda.synchronize()
        for (A, B, kw), C in zip(cases, outs):
            assert error_ratio(C, A, B) <= 1, (rnd, kw)
        assert error_ratio(fresh, cases[0][0], cases[0][1]) <= 1


def test_device_memory_freed_during_a_capture_does_not_end_it():
    """The collector may free a plan's or a lane's device memory at any moment, a graph capture
    included (the corpus benchmark met it after some 50 shapes): the capture goes on."""
    import torch

    from streamk.gpu import gemm
    from streamk.gpu.runtime.device import device

    A, B = inputs(300, 200, 500, "float16", torch.Generator(device="cuda").manual_seed(3))
    C = torch.empty(300, 200, device="cuda")
    stream = torch.cuda.Stream()
    with torch.cuda.stream(stream):
        gemm(A, B, C)
    stream.synchronize()
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph, stream=stream):
        gemm(A, B, C)
        dropped = device().alloc(1 << 20)
        del dropped  # cuMemFree while the capture is open
        gemm(A, B, C)
    C.fill_(math.nan)
    graph.replay()
    torch.cuda.synchronize()
    assert error_ratio(C, A, B) <= 1


def test_graph_replays_alongside_eager_calls_on_other_streams():
    import torch

    from streamk.gpu import gemm

    gen = torch.Generator(device="cuda").manual_seed(8)
    cases = _mix(gen)
    outs = [torch.empty(A.shape[0], B.shape[1], device="cuda") for A, B, _ in cases]
    stream, other = torch.cuda.Stream(), torch.cuda.Stream()
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph, stream=stream):
        for (A, B, kw), C in zip(cases, outs):
            gemm(A, B, C, **kw)
    eager = [torch.empty_like(C) for C in outs]
    for _ in range(50):
        graph.replay()
        with torch.cuda.stream(other):
            for (A, B, kw), C in zip(cases, eager):
                gemm(A, B, C, **kw)
    torch.cuda.synchronize()
    for C, E in zip(outs, eager):
        assert torch.equal(C, E)


def test_cupy_inputs_and_cupy_graph_capture():
    cupy = pytest.importorskip("cupy")
    import torch

    from streamk.gpu import gemm

    rng = np.random.default_rng(9)
    A = cupy.asarray(rng.standard_normal((300, 2000)).astype(np.float16))
    B = cupy.asarray(rng.standard_normal((2000, 200)).astype(np.float16))
    ref = cupy.asnumpy(A).astype(np.float64) @ cupy.asnumpy(B).astype(np.float64)
    C = gemm(A, B, schedule="stream-k")
    assert isinstance(C, cupy.ndarray) and np.abs(cupy.asnumpy(C) - ref).max() < 0.05
    stream = cupy.cuda.Stream(non_blocking=True)
    out = cupy.empty((300, 200), dtype=cupy.float32)
    with stream:
        gemm(A, B, out, schedule="stream-k", fixup="owner-waits")
        stream.begin_capture()
        gemm(A, B, out, schedule="stream-k", fixup="owner-waits")
        graph = stream.end_capture()
    A[...] = cupy.asarray(rng.standard_normal((300, 2000)).astype(np.float16))
    out[...] = cupy.nan
    graph.launch(stream)
    stream.synchronize()
    ref = cupy.asnumpy(A).astype(np.float64) @ cupy.asnumpy(B).astype(np.float64)
    assert np.abs(cupy.asnumpy(out) - ref).max() < 0.05
    torch.cuda.synchronize()


def test_streams_cupy_destroys_after_their_gemms_are_never_touched_dead():
    # a lane waits on its stream later (cache eviction, clear_cache): the lane holds CuPy's Stream
    # object, so its handle cannot be destroyed (and reused) under it
    cupy = pytest.importorskip("cupy")
    import gc

    from streamk.gpu import cache_info, clear_cache, gemm

    A = cupy.ones((256, 512), dtype=cupy.float16)
    B = cupy.ones((512, 384), dtype=cupy.float16)
    for _ in range(6):
        stream = cupy.cuda.Stream(non_blocking=True)
        with stream:
            C = gemm(A, B, schedule="stream-k")
        stream.synchronize()
        assert float(C.min()) == float(C.max()) == 512.0
        del stream, C
        gc.collect()
    assert next(iter(cache_info().values()))["lanes"] >= 6
    clear_cache()  # waits on every lane's stream: all still alive
    assert next(iter(cache_info().values()))["lanes"] == 0


def test_torch_compile_fullgraph():
    import torch

    from streamk.gpu import gemm

    def f(a, b, c):
        return gemm(a, b) * 2 + gemm(a, b, c.clone(), beta=1.0, schedule="stream-k", fixup="turnstile", grid=20)

    gen = torch.Generator(device="cuda").manual_seed(10)
    A, B = inputs(500, 400, 1500, "float16", gen)
    C0 = torch.randn(500, 400, generator=gen, device="cuda")
    compiled = torch.compile(f, fullgraph=True)
    got = compiled(A, B, C0)
    ref = 3 * (A.double() @ B.double()) + C0.double()
    assert got.dtype == torch.float32 and float((got.double() - ref).abs().max()) < 0.1
    direct = torch.ops.streamk.gemm(A, B, None, 1.0, 0.0, "auto", None, None, None, None, None, None)
    assert torch.equal(direct, gemm(A, B))


def test_schedules_that_can_never_finish_are_refused_and_every_accepted_one_runs():
    import torch

    from streamk.gpu import gemm

    rng = np.random.default_rng(11)
    gen = torch.Generator(device="cuda").manual_seed(11)
    refused = ran = 0
    for case in range(120):
        tiles_m, iters = int(rng.integers(1, 5)), int(rng.integers(1, 6))
        units = []
        for t in range(tiles_m):
            cuts = sorted(rng.choice(np.arange(1, iters), size=int(rng.integers(0, iters)), replace=False)) \
                if iters > 1 else []
            bounds = [0, *map(int, cuts), iters]
            units += [(t, b, e) for b, e in zip(bounds, bounds[1:])]
        units = [units[i] for i in rng.permutation(len(units))]
        grid = int(rng.integers(1, len(units) + 1))
        cuts = sorted(rng.choice(np.arange(1, len(units)), size=grid - 1, replace=False)) if grid > 1 else []
        bounds = [0, *map(int, cuts), len(units)]
        shape = GemmShape(tiles_m * 128 - int(rng.integers(0, 100)), 96, iters * 32 - int(rng.integers(0, 31)))
        s = Schedule.from_ctas("random", shape, TileShape(128, 128, 32), [units[b:e] for b, e in zip(bounds, bounds[1:])])
        policy = FIXUP_POLICIES[case % len(FIXUP_POLICIES)]
        A, B = inputs(shape.m, shape.n, shape.k, "float16", gen)
        try:
            C = gemm(A, B, schedule=s, fixup=policy)
        except DeadlockError as exc:
            assert "checked to finish here" in str(exc)
            refused += 1
            continue
        torch.cuda.synchronize()  # a hang would stop the suite here
        assert error_ratio(C, A, B) <= 1, (s.ctas, policy)
        ran += 1
    assert refused > 0 and ran > 60, (refused, ran)


def test_deadlock_beyond_the_devices_residency_is_refused_naming_turnstile():
    import torch

    from streamk.gpu import gemm
    from streamk.gpu.runtime.device import device

    dev = device()
    name = "streamk_sm80_f16"
    t = dev.sms * dev.occupancy(name, dev.block_size(name), dev.smem_bytes(name)) + 1
    s = Schedule.from_ctas("custom", GemmShape(t * 128, 128, 64), TileShape(128, 128, 32),
                           [[(i, 0, 1)] for i in range(t)] + [[(i, 1, 2)] for i in range(t)])
    A, B = torch.ones(t * 128, 64, device="cuda").half(), torch.ones(64, 128, device="cuda").half()
    with pytest.raises(DeadlockError, match="fixup='turnstile'"):
        gemm(A, B, schedule=s)
    assert bool((gemm(A, B, schedule=s, fixup="turnstile") == 64.0).all())


def test_operands_as_torch_has_them():
    import torch

    from streamk.gpu import gemm

    gen = torch.Generator(device="cuda").manual_seed(12)
    A, B = inputs(64, 48, 32, "float16", gen)
    with pytest.raises(ScheduleError, match="C's elements overlap"):
        gemm(A, B, torch.zeros(1, 48, device="cuda").expand(64, 48))
    with pytest.raises(ScheduleError, match="overlap"):
        gemm(A, B, torch.zeros(64 * 24 + 24, device="cuda").as_strided((64, 48), (24, 1)))
    buf = torch.zeros(64 * 48 * 2, device="cuda")
    A32 = buf[: 64 * 32].view(torch.float16).view(64, 64)[:, :32]  # A lies inside C's memory
    with pytest.raises(ScheduleError, match="C overlaps A or B"):
        gemm(A32, B, buf[: 64 * 48].view(64, 48))
    assert gemm(A[:0], B).shape == (0, 48) and gemm(A, B[:, :0]).shape == (64, 0)
    C0 = torch.randn(64, 48, generator=gen, device="cuda")
    C = C0.clone()
    assert gemm(A[:, :0], B[:0], C, beta=0.5) is C and torch.equal(C, 0.5 * C0)
    assert bool((gemm(A[:, :0], B[:0]) == 0).all())
    with pytest.raises(ScheduleError, match="CUDA device"):
        gemm(A.cpu(), B)
    with pytest.raises(ScheduleError, match="same dtype"):
        gemm(A, B.float())


def test_numpy_inputs_round_trip():
    from streamk.gpu import gemm

    rng = np.random.default_rng(13)
    A = rng.standard_normal((77, 45)).astype(np.float16)
    B = rng.standard_normal((45, 33)).astype(np.float16)
    C = gemm(A, B, schedule="stream-k", fixup="turnstile")
    ref = A.astype(np.float64) @ B.astype(np.float64)
    assert isinstance(C, np.ndarray) and C.dtype == np.float32 and np.abs(C - ref).max() < 1e-2
    C2 = np.ones((77, 33), np.float32)
    assert gemm(A, B, C2, beta=2.0) is C2 and np.abs(C2 - ref - 2.0).max() < 1e-2
