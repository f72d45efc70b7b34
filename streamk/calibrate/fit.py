"""Fit the calibrated terms to measured times: Gauss-Newton on the calibrated simulator's time.

The model is the simulator itself (``predict.predict_from``): its time is piecewise linear in the
terms, linear where the critical path stays put, so each step solves a weighted linear least
squares problem (``np.linalg.lstsq``) on a finite-difference Jacobian, and the fit stops when a
step changes nothing. Residuals are relative (each probe weighted by 1 / its measured time), as
CUDA-event noise is: a 5 us probe counts as much as a 200 us one. Standard errors come from the
last Jacobian and the residuals' variance, sigma^2 (J^T J)^-1.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from multiprocessing.pool import Pool
from typing import Callable, Sequence

import numpy as np

from ..errors import StreamkError
from ..fixup import Action, plan_fixup
from ..schedule import Schedule
from ..shapes import ITEMSIZE, GemmShape, TileShape
from ..target import streams_unaligned
from .design import TPC_PREFIX, Probe, probes
from .model import MAY_NOT_BIND, PACK_TERMS, TERM_DOC, Calibration, Term, term_names
from .batch import predict_many
from .traffic import row32_share

# a first guess of the H100's order of magnitude; the fit moves it
START_US = {"launch": 2.0, "a": 2.0, "c1": 0.5, "c_shared": 1.0, "b": 1.0, "d": 1.0, "pass_launch": 2.0,
            "d_reduce": 0.5, "unit": 1.0, "dram_us_per_mb": 5.0, "atomic": 1.0, "handoff": 2.0, "a_shared": 0.5,
            "c_free": 0.05, "c_l2": 0.05, "l2_us_per_mb": 0.1, "c_shifted": 0.3, "c_row32": 0.1, "c_tpc": 0.05,
            "pack": 1.0, "pack_us_per_mb": 0.5}
STEP = 1e-3        # finite-difference step, in us: far below any term, inside one linear piece
MAX_ITERATIONS = 30
TOLERANCE = 1e-10  # stop once no term moves more than this (us)
MAX_CONDITION = 1e10  # above this J^T J cannot tell the terms apart
RETIME_RESIDUAL = 0.25  # a probe this far off the first fit is timed once more


class FitError(StreamkError):
    """The design or the measurements cannot determine every term."""


@dataclass(frozen=True, slots=True)
class Fit:
    """The fitted terms, their standard errors, and each probe's measured and predicted time."""

    names: tuple[str, ...]
    values: np.ndarray
    errors: np.ndarray
    measured_us: np.ndarray
    predicted_us: np.ndarray
    steps: int
    held: tuple[str, ...] = ()  # terms no probe's time moved on this device: left out (model.MAY_NOT_BIND)

    @property
    def rel_residuals(self) -> np.ndarray:
        return (self.measured_us - self.predicted_us) / self.measured_us

    @property
    def rms_rel_residual(self) -> float:
        return float(np.sqrt(np.mean(self.rel_residuals ** 2)))

    def calibration(self, dtype: str, tile: TileShape, ctas_per_sm: int, device: str, sms: int,
                    l2_bytes: int) -> Calibration:
        terms = [Term(n, float(v), float(e)) for n, v, e in zip(self.names, self.values, self.errors)]
        if "c_shared" in self.held:  # no probe priced it (model.MAY_NOT_BIND): a shared CTA runs at c1
            c1 = next(t for t in terms if t.name == "c1")
            terms.insert(terms.index(c1) + 1, Term("c_shared", c1.us, c1.se))
        terms = tuple(terms)
        return Calibration(dtype, tile, ctas_per_sm, terms, device, sms, len(self.measured_us),
                           self.rms_rel_residual, l2_bytes)


def hands_on(schedule: Schedule) -> bool:
    """Whether ``schedule`` holds a turnstile handoff (a middle contributor), the units handoff prices."""
    return schedule.fixup == "turnstile" and bool(np.any(plan_fixup(schedule).action == Action.HANDOFF))


def _predict(schedules: Sequence[Schedule], names: tuple[str, ...], theta: np.ndarray, sms: int,
             ctas_per_sm: int, memory: dict) -> np.ndarray:
    return predict_many(schedules, memory["packed_mb"], names, [theta], sms, ctas_per_sm, l2_bytes=memory["l2_bytes"],
                        element_bytes=memory["element_bytes"], pool=memory.get("pool"))[0]


def _jacobian(schedules, names, theta, base, sms, ctas_per_sm, memory) -> np.ndarray:
    moved = theta + STEP * np.eye(len(theta))  # forward steps: a term at 0 is never probed below it
    pred = predict_many(schedules, memory["packed_mb"], names, list(moved), sms, ctas_per_sm,
                        l2_bytes=memory["l2_bytes"], element_bytes=memory["element_bytes"], pool=memory.get("pool"))
    return ((pred - base) / STEP).T


def _nonnegative_lstsq(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """argmin ||a x - b|| over x >= 0 (Lawson and Hanson's active set): a term the unconstrained
    optimum drives below zero is held at 0 and the others re-fitted, and a held one is released
    where the gradient says raising it helps. Clipping the unconstrained step instead left the
    other terms fitted to a negative one (the first H100 calibration, LOG v17d)."""
    n = a.shape[1]
    free = np.ones(n, dtype=bool)
    x = np.zeros(n)
    for _ in range(4 * n + 4):
        x = np.zeros(n)
        if free.any():
            x[free] = np.linalg.lstsq(a[:, free], b, rcond=None)[0]
        negative = free & (x < 0)
        if negative.any():
            free &= ~negative  # hold the most-violating terms at 0 and solve again
            continue
        gradient = a.T @ (b - a @ x)
        release = ~free & (gradient > 1e-12 * max(1.0, float(np.abs(gradient).max())))
        if not release.any():
            break
        free[np.argmax(np.where(release, gradient, -np.inf))] = True
    return np.maximum(x, 0.0)


def fit(schedules: Sequence[Schedule], measured_us: Sequence[float], sms: int, ctas_per_sm: int, *,
        l2_bytes: float, element_bytes: int, held: tuple[str, ...] = (),
        packed_mb: Sequence[float] | None = None, pool: Pool | None = None) -> Fit:
    """The terms (``model.term_names(ctas_per_sm)`` but ``held``) that best predict ``measured_us``
    for ``schedules`` on ``sms`` SMs with an L2 of ``l2_bytes`` and operands of ``element_bytes``
    (the GPU packing ``packed_mb`` MB of them before each schedule; none where not given), in
    relative least squares; FitError where they are not determined. The descent starts twice, from
    the first guess and from the optimum without c_free (then released from 0), and keeps the
    better fit: c_free can push a lone CTA's MAC iteration below zero, a corner the descent from
    the first guess fell into and did not leave on the dot tiles (LOG.md v33b)."""
    kw = dict(l2_bytes=l2_bytes, element_bytes=element_bytes,
              packed_mb=tuple(packed_mb) if packed_mb is not None else (0.0,) * len(schedules), pool=pool)
    fits, errors = [], []
    try:
        fits.append(_descend(schedules, measured_us, sms, ctas_per_sm, held=held, **kw))
    except FitError as exc:
        errors.append(exc)
    if "c_free" not in held:
        try:
            base = _descend(schedules, measured_us, sms, ctas_per_sm, held=held + ("c_free",), **kw)
            start = dict(zip(base.names, base.values.tolist()), c_free=0.0)
            fits.append(_descend(schedules, measured_us, sms, ctas_per_sm, held=held, start=start, **kw))
        except FitError as exc:
            errors.append(exc)
    if not fits:
        raise errors[0]
    return min(fits, key=lambda f: f.rms_rel_residual)


def _descend(schedules: Sequence[Schedule], measured_us: Sequence[float], sms: int, ctas_per_sm: int, *,
             l2_bytes: float, element_bytes: int, packed_mb: tuple[float, ...], held: tuple[str, ...] = (),
             start: dict[str, float] | None = None, pool: Pool | None = None) -> Fit:
    """fit's descent from ``start`` (the first guess START_US where it names no term). A term that
    no probe's time moves at the optimum (model.MAY_NOT_BIND: the DRAM stretch where the device's
    bandwidth keeps up with every probe, whose max() never binds) is refitted as held rather than
    refused."""
    memory = {"l2_bytes": l2_bytes, "element_bytes": element_bytes, "packed_mb": packed_mb, "pool": pool}
    y = np.asarray(measured_us, dtype=float)
    if len(y) != len(schedules) or not np.all(np.isfinite(y) & (y > 0)):
        raise FitError(f"need one finite time > 0 per schedule (got {len(y)} times for {len(schedules)} schedules)")
    if len(packed_mb) != len(schedules):
        raise FitError(f"need one packed MB per schedule (got {len(packed_mb)} for {len(schedules)} schedules)")
    # c_shifted only where a probe streams unaligned rows (a kernel that packs them never does), the
    # pack's terms only where a probe packs (a kernel that reads every row in place never does)
    shifted = any(streams_unaligned(s.shape, s.tile, element_bytes) for s in schedules)
    packs = any(mb > 0 for mb in packed_mb)
    # c_row32 only where a probe reads rows off a 32-byte boundary (the dp-row32 probes of a TMA kernel)
    row32 = any(row32_share(s.shape, s.tile, element_bytes) > 0 for s in schedules)
    # c_tpc only where the design holds the dp-tpc probes (design.probes(tpc=True)): the dp-partial ones
    # alone leave it level with c_free on the quick design
    tpc = any(s.decomposition.startswith(TPC_PREFIX) for s in schedules)
    # handoff only where a probe hands a turnstile sum on (the turnstile-chain probes; LOG.md v51, v52)
    chains = any(hands_on(s) for s in schedules)
    # c_shared and a_shared only where probes do run at shared residency (a design without any cannot
    # price them); a_shared from the dp-waves' intercept against the one-CTA probes' launch + a (LOG.md v54)
    shares = any(s.grid > sms for s in schedules)
    # c_scatter never: every probe's waves step through k together (traffic.scattered_share 0); fitted
    # offline on the fidelity oracles (LOG.md v66)
    names = tuple(n for n in term_names(ctas_per_sm) if n not in held and n != "c_scatter"
                  and (n != "c_shifted" or shifted) and (n != "c_row32" or row32) and (n != "c_tpc" or tpc)
                  and (n != "handoff" or chains)
                  and (n != "a_shared" or shares) and (n not in PACK_TERMS or packs))
    if len(y) <= len(names):
        raise FitError(f"{len(names)} terms need more than {len(names)} probes (got {len(y)})")
    w = 1.0 / y
    theta = np.array([(start or {}).get(n, START_US[n]) for n in names])
    pred = _predict(schedules, names, theta, sms, ctas_per_sm, memory)
    if not np.all(np.isfinite(pred)):
        raise FitError("a probe cannot finish on the simulated machine: the design does not fit this device")
    cost = float(np.sum((w * (y - pred)) ** 2))
    last, steps = None, 0
    for _ in range(MAX_ITERATIONS):
        jac = _jacobian(schedules, names, theta, pred, sms, ctas_per_sm, memory)
        if last is not None and np.allclose(jac, last, rtol=1e-6, atol=1e-9):
            break  # the same linear piece as the last step's, whose least-squares optimum that step reached
        last = jac
        # this linear piece's best terms >= 0: pred(t) = pred + jac (t - theta)
        step = _nonnegative_lstsq(jac * w[:, None], w * (y - pred + jac @ theta)) - theta
        for _ in range(40):  # halve a step that does not lower the cost (a kink of the critical path)
            trial = np.maximum(theta + step, 0.0)
            trial_pred = _predict(schedules, names, trial, sms, ctas_per_sm, memory)
            trial_cost = float(np.sum((w * (y - trial_pred)) ** 2))
            if trial_cost <= cost:
                break
            step /= 2
        if trial_cost > cost:
            break  # no step along this Jacobian helps: theta (and jac) stay
        moved = float(np.max(np.abs(trial - theta)))
        theta, pred, cost, steps = trial, trial_pred, trial_cost, steps + 1
        if moved <= TOLERANCE:
            break  # jac is still this theta's up to the tolerance
    else:
        jac = _jacobian(schedules, names, theta, pred, sms, ctas_per_sm, memory)  # the last step's theta
    jac = jac * w[:, None]
    scale = float(np.abs(jac).max())  # a column this far below the rest is finite-difference noise
    idle = tuple(n for n, col in zip(names, np.abs(jac).T) if col.max() <= 1e-9 * scale and n in MAY_NOT_BIND
                 and (n != "c_shared" or shares))
    if idle:
        return _descend(schedules, y, sms, ctas_per_sm, l2_bytes=l2_bytes, element_bytes=element_bytes,
                        packed_mb=packed_mb, held=held + idle, start=dict(zip(names, theta.tolist())), pool=pool)
    normal = jac.T @ jac
    if np.linalg.cond(normal) > MAX_CONDITION:
        _, sv, vt = np.linalg.svd(jac)
        null = vt[sv < sv[0] / math.sqrt(MAX_CONDITION)]  # directions no probe's time moves along
        loose = [n for n, col in zip(names, np.abs(null).T) if col.max() > 0.1]
        raise FitError(f"the probes cannot tell these terms apart: {', '.join(loose)}; add probes that move them "
                       f"separately (streamk.calibrate.design)")
    dof = len(y) - len(names)
    sigma2 = cost / dof
    errors = np.sqrt(np.diag(np.linalg.inv(normal)) * sigma2)
    return Fit(names, theta, errors, y, pred, steps, held)


Timer = Callable[[Sequence[Schedule], str], np.ndarray]  # (schedules, dtype) -> microseconds each


def calibrate_with(timer: Timer, dtype: str, tile: TileShape, sms: int, ctas_per_sm: int, l2_bytes: float,
                   quick: bool = False, packed_mb: Callable[[GemmShape], float] | None = None, row32: bool = False,
                   tpc: bool = False, pool: Pool | None = None) -> tuple[tuple[Probe, ...], Fit]:
    """The whole calibration against any ``timer``: the GPU's (``device.time_schedules``) or, in
    the tests, the calibrated simulator under known terms; ``l2_bytes``: the device's L2;
    ``packed_mb``: the MB of contiguous A and B the kernel packs for a shape, ``row32``: whether it
    reads A and B in place through TMA boxes (``design.probes``); ``pool``: worker processes for
    the fit's predictions (``batch.predict_many``; the same fit, sooner)."""
    element_bytes = ITEMSIZE[dtype]
    design = probes(tile, sms, ctas_per_sm, l2_bytes, element_bytes, quick, packed_mb, row32=row32, tpc=tpc)
    schedules = [p.schedule for p in design]
    measured = np.asarray(timer(schedules, dtype), dtype=float)
    kw = dict(l2_bytes=l2_bytes, element_bytes=element_bytes, packed_mb=[p.packed_mb for p in design], pool=pool)
    result = fit(schedules, measured, sms, ctas_per_sm, **kw)
    outliers = np.flatnonzero(np.abs(result.rel_residuals) > RETIME_RESIDUAL)
    if outliers.size == 0:
        return design, result
    # A probe far off the fit is most often a slow spell of the GPU (a clock ramp, another
    # process): time it once more and keep the faster run, since interference only adds time.
    again = np.asarray(timer([schedules[i] for i in outliers], dtype), dtype=float)
    measured[outliers] = np.minimum(measured[outliers], again)
    return design, fit(schedules, measured, sms, ctas_per_sm, **kw)


def table(result: Fit, labels: Sequence[str]) -> str:
    """The fitted terms with their errors, then every probe's measured, predicted and residual."""
    lines = [f"{'term':<12} {'us':>10} {'+-':>9}  prices"]
    for n, v, e in zip(result.names, result.values, result.errors):
        lines.append(f"{n:<12} {v:>10.4f} {e:>9.4f}  {TERM_DOC[n]}")
    lines.append(f"\n{'probe':<36} {'measured us':>12} {'predicted us':>12} {'residual':>9}")
    for label, m, p, r in zip(labels, result.measured_us, result.predicted_us, result.rel_residuals):
        lines.append(f"{label:<36} {m:>12.3f} {p:>12.3f} {100 * r:>8.2f}%")
    rms = result.rms_rel_residual
    if result.held:
        lines.append(f"held (no probe's time moved them on this device; c_shared prices as c1, any other as 0): "
                     f"{', '.join(result.held)}")
    lines.append(f"rms relative residual {100 * rms:.2f}% over {len(labels)} probes"
                 f"{'' if math.isfinite(rms) else ' (not finite)'}; Gauss-Newton steps taken: {result.steps}")
    return "\n".join(lines)
