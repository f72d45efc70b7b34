"""On a GPU: a model-based test of streamk.gpu as a program composes it (issue 40).

Hypothesis's RuleBasedStateMachine draws sequences of: prepare and eager gemm (random shapes,
dtypes, layouts, decompositions, policies, user Schedules; inputs often temporaries the caller
drops at once), enqueue of any live Prepared on any stream, graph capture and replay with new
inputs written in place, dropping references then allocating the freed sizes, clear_cache,
switching the current device, work on another thread, and, on two GPUs, all of it on either.
After every launch the result is checked against a float64 reference, and deterministic policies
must equal the Prepared's solo run bitwise. A failure shrinks to the shortest sequence.
``STREAMK_STATEFUL_EXAMPLES`` sets the budget (default 50 sequences: about 75 s on an H200).
"""

from __future__ import annotations

import gc
import math
import os
import threading
from dataclasses import dataclass, field

import pytest
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import (Bundle, RuleBasedStateMachine, consumes, initialize, invariant, rule,
                                 run_state_machine_as_test)

from gpu_support import GPU, error_ratio

pytestmark = GPU

EXAMPLES = int(os.environ.get("STREAMK_STATEFUL_EXAMPLES", "50"))  # ~75 s on an H200
STEPS = 25
DECOMPOSITIONS = ("auto", "data-parallel", "stream-k", "fixed-split", "dp-one-tile-sk", "two-tile-sk-dp")
POLICIES = (None, "turnstile", "owner-waits", "last-arrival", "separate-reduce", "atomic")
NONDETERMINISTIC = ("atomic",)


@dataclass
class Entry:
    """A live Prepared, the float64 result it must give, its solo run (bitwise, where the policy
    is deterministic), and the inputs where the test still holds them (None: dropped)."""

    prepared: object
    ref: object
    solo: object
    deterministic: bool
    device: int
    inputs: tuple | None
    graph: object = None
    history: list = field(default_factory=list)


def _devices() -> int:
    import torch

    return min(torch.cuda.device_count(), 2)


@st.composite
def gemm_cases(draw):
    m = draw(st.integers(1, 700))
    n = draw(st.integers(1, 700))
    k = draw(st.integers(1, 1500))
    return dict(shape=(m, n, k), dtype=draw(st.sampled_from(("float16", "bfloat16", "float64"))),
                layout=draw(st.sampled_from(("RR", "RC", "CR", "CC", "linear"))),
                decomposition=draw(st.sampled_from(DECOMPOSITIONS + ("user",))),
                policy=draw(st.sampled_from(POLICIES)), device=draw(st.integers(0, 1)),
                seed=draw(st.integers(0, 2**31 - 1)), drop=draw(st.booleans()))


def _operands(case, gen):
    """A and B as the case lays them out; "linear" makes them as torch's Linear does (x.half(),
    W.t() of a row-major W), from float32 temporaries."""
    import torch

    m, n, k = case["shape"]
    dev = f"cuda:{case['device']}"
    dtype = getattr(torch, case["dtype"])
    if case["layout"] == "linear":
        x, W = torch.randn(m, k, generator=gen, device=dev), torch.randn(n, k, generator=gen, device=dev)
        return x.to(dtype), W.to(dtype).t()
    A = torch.randn(m, k, generator=gen, device=dev).to(dtype)
    B = torch.randn(k, n, generator=gen, device=dev).to(dtype)
    if case["layout"][0] == "C":
        A = A.t().contiguous().t()
    if case["layout"][1] == "C":
        B = B.t().contiguous().t()
    return A, B


def _user_schedule(case, rng_seed: int):
    """A random user Schedule of the case's shape on the 128x128x32 tile (float16/bfloat16 only)."""
    import numpy as np

    from streamk import GemmShape, Schedule, TileShape

    rng = np.random.default_rng(rng_seed)
    m, n, k = case["shape"]
    tile = TileShape(128, 128, 32)
    tiles = math.ceil(m / 128) * math.ceil(n / 128)
    iters = math.ceil(k / 32)
    units = []
    for t in range(tiles):
        cuts = sorted(rng.choice(np.arange(1, iters), size=min(int(rng.integers(0, 3)), iters - 1), replace=False)) \
            if iters > 1 else []
        bounds = [0, *map(int, cuts), iters]
        units += [(t, b, e) for b, e in zip(bounds, bounds[1:])]
    grid = int(rng.integers(1, min(len(units), 64) + 1))
    cuts = sorted(rng.choice(np.arange(1, len(units)), size=grid - 1, replace=False)) if grid > 1 else []
    bounds = [0, *map(int, cuts), len(units)]
    return Schedule.from_ctas("user", GemmShape(m, n, k), tile, [units[b:e] for b, e in zip(bounds, bounds[1:])])


def _nan(shape, dtype, device: int):
    import torch

    return torch.full(shape, math.nan, device=f"cuda:{device}",
                      dtype=torch.float64 if dtype == "float64" else torch.float32)


STEPS_RUN: dict[str, int] = {}  # rule -> steps run, printed by the test (-s shows it)


def _count(rule_name: str) -> None:
    STEPS_RUN[rule_name] = STEPS_RUN.get(rule_name, 0) + 1


class GpuRuntime(RuleBasedStateMachine):
    entries = Bundle("entries")

    def __init__(self) -> None:
        super().__init__()
        import torch

        self.devices = _devices()
        self.streams = {d: [torch.cuda.Stream(device=d) for _ in range(2)] for d in range(self.devices)}
        # torch.cuda.graph's default capture stream is made once, on the device current at its first
        # use: a capture on another device needs a stream of its own
        self.capture_streams = {d: torch.cuda.Stream(device=d) for d in range(self.devices)}
        self.junk: list = []

    # ---- making GEMMs -----------------------------------------------------------------------
    def _plan(self, case):
        import torch

        from streamk.errors import DeadlockError, ScheduleError

        case = dict(case, device=case["device"] % self.devices)
        if case["decomposition"] == "user" and case["dtype"] == "float64":
            case["decomposition"] = "stream-k"
        gen = torch.Generator(device=f"cuda:{case['device']}").manual_seed(case["seed"])
        A, B = _operands(case, gen)
        kwargs = {}
        if case["decomposition"] == "user":
            kwargs["schedule"] = _user_schedule(case, case["seed"])
        else:
            kwargs["schedule"] = case["decomposition"]
        if case["policy"] is not None:
            kwargs["fixup"] = case["policy"]
        return case, A, B, kwargs, (DeadlockError, ScheduleError)

    @initialize(target=entries, case=gemm_cases())
    def first_prepare(self, case):
        return self.prepare(case)

    @rule(target=entries, case=gemm_cases())
    def prepare(self, case):
        _count("prepare")
        import torch

        from streamk.gpu import prepare

        case, A, B, kwargs, refusals = self._plan(case)
        C = _nan((case["shape"][0], case["shape"][1]), case["dtype"], case["device"])
        try:
            p = prepare(A, B, C, **kwargs)
        except refusals:
            return None  # a schedule that could never finish here, or a tile this dtype lacks
        p.run()
        torch.cuda.synchronize(case["device"])
        assert error_ratio(C, A, B) <= 1, case
        ref = (A.double() @ B.double())
        entry = Entry(p, ref, C.clone(), p.plan.policy not in NONDETERMINISTIC, case["device"],
                      None if case["drop"] else (A, B, C), history=[case])
        del A, B
        gc.collect()
        return entry

    @rule(case=gemm_cases(), on_side=st.booleans())
    def eager_gemm(self, case, on_side):
        _count("eager_gemm")
        import torch

        from streamk.gpu import gemm

        case, A, B, kwargs, refusals = self._plan(case)
        d = case["device"]
        stream = self.streams[d][0] if on_side else torch.cuda.current_stream(d)
        stream.wait_stream(torch.cuda.current_stream(d))
        try:
            C = gemm(A, B, stream=stream.cuda_stream, **kwargs)
        except refusals:
            return
        torch.cuda.synchronize(d)
        assert error_ratio(C, A, B) <= 1, case

    # ---- running them -----------------------------------------------------------------------
    def _check(self, entry: Entry, what: str) -> None:
        import torch

        torch.cuda.synchronize(entry.device)
        out = entry.prepared.output
        if entry.inputs is not None:
            A, B, _ = entry.inputs
            assert error_ratio(out, A, B) <= 1, (what, entry.history)
        else:
            scale = float(entry.ref.abs().max()) or 1.0
            assert float((out.double() - entry.ref).abs().max()) / scale < 2e-2, (what, entry.history)
        if entry.deterministic and entry.graph is None:
            assert torch.equal(out, entry.solo), (what, "not bitwise its solo run", entry.history)

    @rule(entry=entries, which=st.integers(0, 2))
    def enqueue(self, entry, which):
        _count("enqueue")
        import torch

        if entry is None:
            return
        d = entry.device
        streams = [torch.cuda.current_stream(d), *self.streams[d]]
        stream = streams[which]
        entry.prepared.output.fill_(math.nan)
        stream.wait_stream(torch.cuda.current_stream(d))
        entry.prepared.launch.enqueue(stream.cuda_stream)
        torch.cuda.current_stream(d).wait_stream(stream)
        entry.history.append(f"enqueue on stream {which}")
        self._check(entry, "enqueue")

    @rule(entry=entries)
    def on_a_thread(self, entry):
        _count("on_a_thread")
        import torch

        if entry is None:
            return
        failures = []

        def body():
            try:
                with torch.cuda.device(entry.device):
                    s = torch.cuda.Stream()
                    with torch.cuda.stream(s):
                        entry.prepared.output.fill_(math.nan)
                        entry.prepared.run()
                    s.synchronize()
            except Exception as exc:  # noqa: BLE001 - reported in the main thread
                failures.append(exc)

        t = threading.Thread(target=body)
        t.start()
        t.join()
        assert not failures, failures
        entry.history.append("run on a thread")
        self._check(entry, "thread")

    @rule(entry=entries, seed=st.integers(0, 2**31 - 1))
    def capture_and_replay(self, entry, seed):
        _count("capture_and_replay")
        import torch

        if entry is None or entry.inputs is None:
            return
        A, B, C = entry.inputs
        d = entry.device
        with torch.cuda.device(d):
            if entry.graph is None:
                graph = torch.cuda.CUDAGraph()
                capture = self.capture_streams[d]
                with torch.cuda.graph(graph, stream=capture):
                    entry.prepared.launch.enqueue(capture.cuda_stream)
                entry.graph = graph
            gen = torch.Generator(device=f"cuda:{d}").manual_seed(seed)
            A.copy_(torch.randn(A.shape, generator=gen, device=f"cuda:{d}"))  # new values, same memory
            C.fill_(math.nan)
            entry.graph.replay()
        entry.history.append("capture/replay with new A")
        self._check(entry, "graph replay")

    @rule(entry=consumes(entries))
    def drop(self, entry):
        _count("drop")
        import torch

        if entry is None:
            return
        shapes = [(entry.prepared.output.shape, entry.prepared.output.dtype, entry.device)]
        del entry
        gc.collect()
        self.junk = [torch.full(s, 7.0, dtype=t, device=f"cuda:{d}") for s, t, d in shapes]

    @rule(action=st.sampled_from(("allocate", "clear_cache", "switch_device")), size=st.integers(1, 1 << 22),
          d=st.integers(0, 1))
    def disturb(self, action, size, d):
        """What else a program does between GEMMs: allocate (taking freed blocks), clear streamk's
        cache, or switch the current device. One rule, so these cheap steps do not crowd out the GEMMs."""
        _count(action)
        import torch

        if action == "allocate":
            self.junk = [torch.full((size,), 5.0, device=f"cuda:{dev}") for dev in range(self.devices)]
        elif action == "clear_cache":
            from streamk.gpu import clear_cache

            clear_cache()
        else:
            torch.cuda.set_device(d % self.devices)

    @invariant()
    def torch_still_works(self):
        import torch

        for d in range(self.devices):
            torch.ones(1, device=f"cuda:{d}").add_(1)

    def teardown(self):
        import torch

        torch.cuda.set_device(0)
        for d in range(self.devices):
            torch.cuda.synchronize(d)


def test_streamk_gpu_composes():
    """The state machine above, within its budget (EXAMPLES sequences of up to STEPS steps)."""
    STEPS_RUN.clear()
    run_state_machine_as_test(GpuRuntime, settings=settings(
        max_examples=EXAMPLES, stateful_step_count=STEPS, deadline=None, suppress_health_check=list(HealthCheck)))
    print(f"\nstateful: {sum(STEPS_RUN.values())} steps over {EXAMPLES} sequences: "
          + ", ".join(f"{name} {n}" for name, n in sorted(STEPS_RUN.items())))
