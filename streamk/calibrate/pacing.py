"""How long a calibration takes, and the rules that pace its probes: the idle pause before each one
and the graph replays it is timed over.

Where the time went (LOG.md v44; the recorded H200 runs of v31-v41, 34-89 s a kernel): a fixed
0.5 s pause before every probe (22 s of a 44-probe kernel) and the fit (15-40 s: ~300 passes of
the event simulator over every probe, on one core); the GPU itself is busy 2-4 s. So:

* the pause scales with the previous probe's busy time (``pause_s``): idle as long as it ran, at
  most PROBE_PAUSE_S. The pause exists so that a long probe that ran the GPU at its power cap does
  not lower the clocks of the next (LOG.md v21); a probe busy 30 ms draws no more than 30 ms of
  heat, and after it the GPU rests as long. The first probe of a kernel, after the float64
  checks, waits the whole PROBE_PAUSE_S.
* a probe whose graph replays are long runs fewer of them (``reps_for``): about REPLAYS_S of
  replays, at least MIN_REPS; only the DRAM probe (4-22 ms a replay) is affected, whose median
  over 10 replays of thousands of waves moves less than its residual.
* the fit's passes run on worker processes (``batch.predict_many``): the same numbers, sooner.
* every compile unit is built once up front, in parallel (``streamk kernels``' ``compile_all``),
  before the first probe; a fresh machine otherwise compiles each kernel as its first probe asks.

``estimate_kernel``/``estimate_all``: the wall time of ``streamk calibrate`` under a ``Pacing``
(the old one, ``BEFORE``, or ``NOW``), each probe's GPU time from the shipped calibration
(``predict_from``; a kernel without one borrows its dtype's nearest calibrated tile, the
per-iteration terms scaled by the tile's MACs), the host and fit costs from the constants below.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Collection, Sequence

import numpy as np

from ..shapes import ITEMSIZE, TileShape
from ..target import Target
from .batch import simulated
from .design import Probe, probes
from .predict import predict_from

PROBE_PAUSE_S = 0.5     # the longest idle before a probe: the GPU back under its power cap's limit (LOG.md v21)
PAUSE_PER_BUSY = 1.0    # idle per second the previous probe kept the GPU busy: at most half the time busy
CLOCK_WARM_S = 0.02     # then this long busy with the probe itself before it is timed (LOG.md v29)
REPS = 50               # graph replays a probe's median is taken over (bench.harness.REPS)
MIN_REPS = 10           # the fewest, for a probe whose replays are long
REPLAYS_S = 0.1         # about this much of a long probe's replays is timed
GRAPH_BELOW_S = 1e-4    # bench.harness: a call under this is captured GRAPH_BATCH times a replay
GRAPH_BATCH = 10
WARMUP_CALLS = 4        # bench.harness: 3 warm-up calls and 1 timed to choose the batch (then a replay after capture)

# The wall-time model's constants: fitted to the recorded H200 runs (LOG.md v44), whose walls they
# give within 25% but one (the first kernel of a fresh machine, compiling)
PROBE_HOST_S = 0.03         # per probe: inputs, prepare, the float64 check, capture, the fit's table
SIM_S_PER_UNIT = 16.5e-6    # the fit's event simulation, per work unit of a simulated probe per pass (1.65x a 2026 EPYC core)
TRACE_S_PER_ITER = 0.6e-6   # the DRAM probe's L2 trace, once per fit, per MAC iteration of its Schedule (0.2-0.3 us here, 1.2 on 32x32x32)
FIT_PASSES = 250            # passes over every probe in one fit (the median of refits of the recorded runs: 165-497)
FIT_TERMS = 15              # a Jacobian's columns: the passes batched at once
TASK_S = 5e-4               # per task sent to a worker (pickling its Schedules)
NVRTC_S = 2.5               # per compile unit missing from the cache (streamk kernels: 1-4 s a unit)


@dataclass(frozen=True, slots=True)
class Pacing:
    """How a calibration paces its probes and spreads its fit."""

    name: str
    scaled_pause: bool   # False: PROBE_PAUSE_S before every probe
    cut_reps: bool       # False: REPS replays of every probe
    fit_workers: int     # processes the fit's passes run on (1: this one)
    compile_first: bool  # every compile unit built up front, in parallel

    def __post_init__(self) -> None:
        if self.fit_workers < 1:
            raise ValueError(f"fit_workers must be >= 1 (got {self.fit_workers})")


BEFORE = Pacing("before (v43)", scaled_pause=False, cut_reps=False, fit_workers=1, compile_first=False)


def now(workers: int) -> Pacing:
    """This version's pacing on ``workers`` CPU processes."""
    return Pacing(f"now ({workers} workers)", scaled_pause=True, cut_reps=True, fit_workers=workers, compile_first=True)


def pause_s(previous_busy_s: float | None, pacing: Pacing | None = None) -> float:
    """Idle before a probe, after one that kept the GPU busy ``previous_busy_s`` (None: the first
    probe, after the float64 checks): that long, at most PROBE_PAUSE_S."""
    if previous_busy_s is None or (pacing is not None and not pacing.scaled_pause):
        return PROBE_PAUSE_S
    if not previous_busy_s >= 0:
        raise ValueError(f"previous_busy_s must be >= 0 s (got {previous_busy_s})")
    return min(PROBE_PAUSE_S, PAUSE_PER_BUSY * previous_busy_s)


def reps_for(replay_s: float, pacing: Pacing | None = None) -> int:
    """Graph replays to time a probe whose replay takes ``replay_s``: REPS, or about REPLAYS_S of
    them where that is fewer, at least MIN_REPS."""
    if not replay_s > 0:
        raise ValueError(f"replay_s must be > 0 s (got {replay_s})")
    if pacing is not None and not pacing.cut_reps:
        return REPS
    return max(MIN_REPS, min(REPS, math.ceil(REPLAYS_S / replay_s)))


def busy_s(call_s: float, pacing: Pacing) -> float:
    """How long timing one probe of ``call_s`` a call keeps the GPU busy: the clock warm-up, the
    harness's warm-up calls and its replays."""
    batch = GRAPH_BATCH if call_s < GRAPH_BELOW_S else 1
    return max(CLOCK_WARM_S, call_s) + call_s * (WARMUP_CALLS + batch * (1 + reps_for(batch * call_s, pacing)))


@dataclass(frozen=True, slots=True)
class KernelEstimate:
    """The estimated seconds of one kernel's calibration, by where they go."""

    dtype: str
    tile: TileShape
    probes: int
    pause_s: float
    gpu_s: float
    host_s: float
    fit_s: float

    @property
    def total_s(self) -> float:
        return self.pause_s + self.gpu_s + self.host_s + self.fit_s


def fit_s(design: Sequence[Probe], pacing: Pacing) -> float:
    """The fit's seconds: FIT_PASSES passes over the simulated probes, batched FIT_TERMS at a time
    in the Jacobians (every pass but one in FIT_TERMS + 1) over ``pacing.fit_workers`` processes,
    each task at least its largest probe; and once the DRAM probe's L2 trace."""
    units = [len(p.schedule.units) for p in design if simulated(p.schedule)]
    trace = sum(len(p.schedule.units) * p.schedule.problem.iters_per_tile for p in design
                if p.family == "dram-scattered") * TRACE_S_PER_ITER
    total, largest, w = sum(units), max(units, default=0), pacing.fit_workers
    if w == 1:
        return FIT_PASSES * total * SIM_S_PER_UNIT + trace
    jacobian = max(total / w, largest / FIT_TERMS)  # per pass, FIT_TERMS passes a batch
    single = max(total / w, largest)
    per_pass = (FIT_TERMS * jacobian + single) / (FIT_TERMS + 1)
    batches = 2 * FIT_PASSES / (FIT_TERMS + 1)  # each Jacobian and one line-search pass after it
    return FIT_PASSES * per_pass * SIM_S_PER_UNIT + batches * 2 * w * TASK_S + trace


def stand_in_values(target: Target, dtype: str, tile: TileShape) -> dict[str, float]:
    """The terms of ``dtype``/``tile``'s calibration on ``target``, or where it has none those of
    the same dtype's calibrated tile nearest in MACs per iteration, the per-iteration terms scaled
    by the MAC ratio (an estimate's GPU time only: a small share of the wall)."""
    own = target.kernel(dtype, tile).calibration
    if own is not None:
        return {t.name: t.us for t in own.terms}
    macs = tile.bm * tile.bn * tile.bk
    found = [t.calibration for t in target.tiles if t.dtype == dtype and t.calibration is not None]
    if not found:
        raise ValueError(f"target {target.name} has no calibrated {dtype} kernel to estimate {tile} from")
    near = min(found, key=lambda c: abs(math.log(c.tile.bm * c.tile.bn * c.tile.bk / macs)))
    ratio = macs / (near.tile.bm * near.tile.bn * near.tile.bk)
    per_iteration = ("c1", "c_shared", "c_free", "c_tpc", "c_l2", "c_shifted", "c_row32", "c_scatter")
    return {t.name: t.us * (ratio if t.name in per_iteration else 1.0) for t in near.terms}


def call_us(probe: Probe, values: dict[str, float], sms: int, ctas_per_sm: int, l2_bytes: float,
            element_bytes: int) -> float:
    """A probe's predicted microseconds under ``values``; the DRAM probe's as the longer of its
    time without the L2 model and every slice it reads at ``dram_us_per_mb`` (its L2 trace takes
    seconds to minutes of CPU on the small tiles, and the probe is built so that DRAM bounds it)."""
    if probe.family != "dram-scattered":
        return predict_from(probe.schedule, values, sms, ctas_per_sm, l2_bytes=l2_bytes, element_bytes=element_bytes,
                            packed_mb=probe.packed_mb)
    s = probe.schedule
    t = s.tile
    slices_mb = len(s.units) * s.problem.iters_per_tile * (t.bm + t.bn) * t.bk * element_bytes / 1e6
    return max(predict_from(s, values, sms, ctas_per_sm, element_bytes=element_bytes),
               values["launch"] + slices_mb * values.get("dram_us_per_mb", 0.0))


def estimate_kernel(target: Target, dtype: str, tile: TileShape, pacing: Pacing, *, l2_bytes: float,
                    quick: bool = False, families: Collection[str] | None = None) -> KernelEstimate:
    """The seconds ``streamk calibrate --dtype dtype --tile tile`` takes on ``target``'s GPU (L2
    of ``l2_bytes``) under ``pacing`` (``families``: only the design's probes of these families,
    as an older design had)."""
    from ..gpu.catalogue import spec_for_tile
    from ..gpu.decide.tiles import packed_bytes

    ctas = target.kernel(dtype, tile).ctas_per_sm
    packs = lambda shape: packed_bytes(shape, dtype, tile) / 1e6  # noqa: E731
    design = probes(tile, target.sms, ctas, l2_bytes, ITEMSIZE[dtype], quick, packs, row32=spec_for_tile(dtype, tile).tma)
    design = tuple(p for p in design if families is None or p.family in families)
    values = stand_in_values(target, dtype, tile)
    call_s = np.array([call_us(p, values, target.sms, ctas, l2_bytes, ITEMSIZE[dtype]) for p in design]) * 1e-6
    busy = [busy_s(t, pacing) for t in call_s]
    pauses = [pause_s(None if i == 0 else busy[i - 1], pacing) for i in range(len(busy))]
    return KernelEstimate(dtype, tile, len(design), float(sum(pauses)), float(sum(busy)),
                          PROBE_HOST_S * len(design), fit_s(design, pacing))


def estimate_all(target: Target, kernels: Sequence[tuple[str, TileShape]], pacing: Pacing, *, l2_bytes: float,
                 quick: bool = False, units_to_compile: int = 0) -> tuple[float, tuple[KernelEstimate, ...]]:
    """Seconds for ``calibrate --all`` over ``kernels`` under ``pacing`` (``units_to_compile``:
    compile units missing from the cache, built up front in parallel or else one by one as first
    used), and each kernel's estimate."""
    each = tuple(estimate_kernel(target, d, t, pacing, l2_bytes=l2_bytes, quick=quick) for d, t in kernels)
    compile_s = units_to_compile * NVRTC_S / (pacing.fit_workers if pacing.compile_first else 1)
    return compile_s + sum(e.total_s for e in each), each
