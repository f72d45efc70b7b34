"""On a GPU: GEMMs composed as a real program composes them stay right. One regression test per
failure of issue 40: who holds which buffer (a Prepared's dropped inputs, another stream's use,
clear_cache beside live Prepareds and graphs, NumPy staging), and whose context is current
(streamk leaves the caller's; operands on another device than the current one; two GPUs)."""

from __future__ import annotations

import gc
import threading
import time

import numpy as np
import pytest

from gpu_support import GPU, TWO_GPUS, error_ratio, inputs

pytestmark = GPU


def _refill(*shapes, dtype="float16") -> list:
    """Tensors of these shapes allocated now and filled with 7: PyTorch's caching allocator hands
    out the blocks just freed first."""
    import torch

    return [torch.full(shape, 7.0, dtype=getattr(torch, dtype), device="cuda") for shape in shapes]


def test_a_prepared_keeps_its_dropped_inputs_alive():
    import torch

    from streamk.gpu import prepare

    gen = torch.Generator(device="cuda").manual_seed(40)
    x, W = torch.randn(300, 512, generator=gen, device="cuda"), torch.randn(640, 512, generator=gen, device="cuda")
    C = torch.full((300, 640), float("nan"), device="cuda")
    p = prepare(x.half(), W.t().contiguous().half(), C)  # both temporaries, dropped at once
    ref_a, ref_b = x.half(), W.half().t()
    del x, W
    gc.collect()
    junk = _refill((300, 512), (512, 640))  # would take the freed blocks
    p.launch.enqueue(torch.cuda.current_stream().cuda_stream)
    torch.cuda.synchronize()
    assert error_ratio(C, ref_a, ref_b) <= 1
    del junk


def _fresh_operands(m: int, n: int, k: int, seed: int):
    """float16 A and B allocated back to back, with nothing else of this process's free (so the
    caching allocator hands out exactly their blocks next), and their float64 product on the host."""
    import torch

    torch.cuda.synchronize()
    torch.cuda.empty_cache()
    gen = torch.Generator(device="cuda").manual_seed(seed)
    C = torch.full((m, n), float("nan"), device="cuda")
    A = torch.empty(m, k, dtype=torch.float16, device="cuda").normal_(generator=gen)
    B = torch.empty(k, n, dtype=torch.float16, device="cuda").normal_(generator=gen)
    return A, B, C, A.cpu().double() @ B.cpu().double()


def _close(C, ref) -> bool:
    return float((C.cpu().double() - ref).abs().max() / ref.abs().max()) < 1e-2


def test_inputs_freed_on_their_stream_while_another_stream_still_reads_them():
    import torch

    from streamk.gpu import gemm

    A, B, C, ref = _fresh_operands(1024, 1024, 2048, 41)
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        torch.cuda._sleep(50_000_000)  # keeps the side stream busy well past the frees below
    gemm(A, B, C, stream=side.cuda_stream)
    del A, B
    junk = _refill((1024, 2048), (2048, 1024))  # the freed blocks, unless the allocator knows better
    torch.cuda.synchronize()
    assert _close(C, ref)
    del junk


def test_prepared_launch_on_another_stream_records_it():
    import torch

    from streamk.gpu import prepare

    A, B, C, ref = _fresh_operands(512, 768, 1024, 42)
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    p = prepare(A, B, C)
    with torch.cuda.stream(side):
        torch.cuda._sleep(50_000_000)
    p.launch.enqueue(side.cuda_stream)
    del p, A, B  # the Prepared gone too: only the allocator's record keeps the memory
    gc.collect()
    junk = _refill((512, 1024), (1024, 768))
    torch.cuda.synchronize()
    assert _close(C, ref)
    del junk


def test_clear_cache_keeps_what_live_prepareds_and_graphs_use():
    import torch

    from streamk.errors import CudaError
    from streamk.gpu import cache_info, clear_cache, gemm, prepare

    gen = torch.Generator(device="cuda").manual_seed(43)
    A, B = inputs(700, 500, 3000, "float16", gen)
    C_p = torch.full((700, 500), float("nan"), device="cuda")
    p = prepare(A, B, C_p, schedule="stream-k", fixup="turnstile")
    C_g = torch.full((700, 500), float("nan"), device="cuda")
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        gemm(A, B, C_g, schedule="stream-k", fixup="turnstile")  # warm: planned outside the capture
    torch.cuda.current_stream().wait_stream(s)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        gemm(A, B, C_g, schedule="stream-k", fixup="turnstile")
    with pytest.raises(CudaError, match="alive"):
        clear_cache(captured=True)  # a live graph holds its lanes: refused, nothing freed
    clear_cache()
    junk = [torch.full((4 << 20,), 3.0, device="cuda") for _ in range(8)]  # takes whatever was freed
    A.copy_(torch.randn(A.shape, generator=gen, device="cuda"))
    graph.replay()
    p.launch.enqueue(torch.cuda.current_stream().cuda_stream)
    torch.cuda.synchronize()
    assert error_ratio(C_g, A, B) <= 1 and error_ratio(C_p, A, B) <= 1
    del graph, junk
    gc.collect()
    torch.cuda.synchronize()
    deadline = time.monotonic() + 5  # the driver's thread runs the graph's destructors
    while cache_info()[A.device.index]["graphs"] and time.monotonic() < deadline:
        time.sleep(0.01)
    clear_cache(captured=True)
    assert cache_info()[A.device.index]["captured_lanes"] == 0


def test_numpy_prepareds_on_one_stream_keep_their_own_copies():
    from streamk.gpu import prepare

    rng = np.random.default_rng(44)
    cases = []
    for i in range(2):
        A = rng.standard_normal((200 + i, 300)).astype(np.float16)
        B = rng.standard_normal((300, 250)).astype(np.float16)
        C = np.full((200 + i, 250), np.nan, np.float32)
        cases.append((prepare(A, B, C), A.astype(np.float64) @ B.astype(np.float64), C))
    worst = []

    def runs(p, ref, C) -> None:  # both threads on the legacy stream: their copies interleave
        for _ in range(30):
            C[...] = np.nan
            p.run(0)
            worst.append(float(np.abs(C - ref).max() / np.abs(ref).max()))

    threads = [threading.Thread(target=runs, args=case) for case in cases]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(worst) == 60 and max(worst) < 1e-2


def _current_context() -> int:
    from cuda.bindings import driver

    err, ctx = driver.cuCtxGetCurrent()
    return int(ctx)


def test_streamk_leaves_the_callers_context_current():
    import torch

    from cuda.bindings import driver

    from streamk.gpu import gemm, prepare

    gen = torch.Generator(device="cuda").manual_seed(45)
    A, B = inputs(256, 384, 512, "float16", gen)
    torch.cuda.synchronize()
    seen = {}

    def body() -> None:
        # a context of the caller's own on the same device: torch's tensors are still addressable
        # (unified addressing), but streamk's modules and events live in the primary context
        err, ctx = driver.cuCtxCreate(None, 0, driver.cuDeviceGet(0)[1])
        assert int(err) == 0, err
        try:
            C, C2 = (torch.full((256, 384), float("nan"), device="cuda") for _ in range(2))
            torch.cuda.synchronize()
            driver.cuCtxSetCurrent(ctx)  # from here on no torch call allocates in the foreign context
            p = prepare(A, B, C, schedule="stream-k", fixup="turnstile")
            seen["after prepare"] = _current_context() == int(ctx)
            p.run(0)
            seen["C"] = gemm(A, B, C2, stream=0)
            seen["after launches"] = _current_context() == int(ctx)
            seen["C'"] = C
        finally:
            driver.cuCtxSetCurrent(0)
            driver.cuCtxDestroy(ctx)

    t = threading.Thread(target=body)
    t.start()
    t.join()
    torch.cuda.synchronize()
    assert (seen["after prepare"], seen["after launches"]) == (True, True)
    assert error_ratio(seen["C"], A, B) <= 1 and error_ratio(seen["C'"], A, B) <= 1


@TWO_GPUS
def test_operands_on_two_devices_are_refused_in_one_line():
    import torch

    from streamk.errors import ScheduleError
    from streamk.gpu import gemm

    A = torch.randn(64, 64, device="cuda:0").half()
    B = torch.randn(64, 64, device="cuda:1").half()
    with pytest.raises(ScheduleError, match="A is on cuda:0 but B is on cuda:1"):
        gemm(A, B)


@TWO_GPUS
def test_a_stream_of_another_device_is_refused_in_one_line():
    import torch

    from streamk.errors import InputError
    from streamk.gpu import gemm, prepare

    gen = torch.Generator(device="cuda:1").manual_seed(48)
    A = torch.randn(300, 500, generator=gen, device="cuda:1").half()
    B = torch.randn(500, 200, generator=gen, device="cuda:1").half()
    p = prepare(A, B, schedule="stream-k")
    other = torch.cuda.Stream(device=0)
    with pytest.raises(InputError, match="belongs to another device than cuda:1"):
        p.launch.enqueue(other.cuda_stream)
    with pytest.raises(InputError, match="pass a stream of cuda:1"):
        gemm(A, B, stream=other.cuda_stream)
    p.launch.enqueue(torch.cuda.current_stream(1).cuda_stream)  # the refusals left nothing behind
    torch.cuda.synchronize(1)
    assert error_ratio(p.output, A, B) <= 1
    torch.ones(1, device="cuda:0").add_(1)
    torch.cuda.synchronize(0)


@TWO_GPUS
def test_alternating_devices_from_one_thread():
    import torch

    from streamk.gpu import gemm

    gens = [torch.Generator(device=f"cuda:{d}").manual_seed(46 + d) for d in range(2)]
    ops = [(torch.randn(500, 700, generator=gens[d], device=f"cuda:{d}").half(),
            torch.randn(700, 300, generator=gens[d], device=f"cuda:{d}").half()) for d in range(2)]
    for i in range(12):
        d = (i * 7 // 3) % 2  # an irregular order of the two devices
        A, B = ops[d]
        with torch.cuda.device(i % 2):  # the current device is sometimes the other one
            C = gemm(A, B, schedule="stream-k" if i % 3 else "auto")
        assert C.device.index == d
        torch.cuda.synchronize(d)
        assert error_ratio(C, A, B) <= 1, (i, d)
    torch.ones(1, device="cuda:0").add_(1)  # torch's own context still works on both
    torch.ones(1, device="cuda:1").add_(1)
    torch.cuda.synchronize(0)
    torch.cuda.synchronize(1)


@TWO_GPUS
def test_operands_on_a_non_current_device():
    import torch

    from streamk.gpu import gemm, prepare

    gen = torch.Generator(device="cuda:1").manual_seed(47)
    A = torch.randn(300, 900, generator=gen, device="cuda:1").half()
    B = torch.randn(900, 200, generator=gen, device="cuda:1").half()
    with torch.cuda.device(0):
        C = gemm(A, B)
        p = prepare(A, B, schedule="stream-k")
        p.run()
        assert torch.cuda.current_device() == 0
    torch.cuda.synchronize(1)
    assert C.device.index == 1 and error_ratio(C, A, B) <= 1 and error_ratio(p.output, A, B) <= 1


@TWO_GPUS
def test_one_thread_per_device():
    import torch

    from streamk.gpu import gemm

    errors = {}

    def work(d: int) -> None:
        gen = torch.Generator(device=f"cuda:{d}").manual_seed(48 + d)
        A = torch.randn(600, 800, generator=gen, device=f"cuda:{d}").half()
        B = torch.randn(800, 400, generator=gen, device=f"cuda:{d}").half()
        worst = 0.0
        for i in range(20):
            C = gemm(A, B, schedule=("auto", "stream-k", "data-parallel")[i % 3])
            torch.cuda.synchronize(d)
            worst = max(worst, error_ratio(C, A, B))
        errors[d] = worst

    threads = [threading.Thread(target=work, args=(d,)) for d in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors.keys() == {0, 1} and max(errors.values()) <= 1, errors
