"""A GemmPlan: everything one GEMM signature needs, built once, launched many times.

A signature is what a launch's kernels, grid, table and buffer sizes depend on: shapes, dtypes,
element strides and 16-byte alignment of the operands, the schedule asked for and its options,
the device. ``build_plan`` decides (``streamk.gpu.decide``: orientation, kernel, schedule, fixup
plan; no CUDA), then binds the decision to the device (``bind``: occupancy, the verdict that the
launch can finish, table upload, parameter blocks); ``GemmPlan.enqueue`` fills the pointers of one
call into a parameter block kept per lane and launches: no host-device synchronization.
"""

from __future__ import annotations

import ctypes
import threading
import weakref

from ...errors import CudaError
from . import tma
from .bind import Bound, bind
from ..decide import Decision, decide
from ..decide.operands import Operand
from .device import Device, driver
from .lanes import Lane, Lanes
from .launch import GemmParams, PackPair, TmaParams
from ..request import GemmRequest


class GemmPlan:
    """The checked, uploaded form of one signature (see module doc)."""

    def __init__(self, dev: Device, lanes: Lanes, decision: Decision, bound: Bound) -> None:
        # shape: the caller's GEMM; transposed: the kernels run C^T = B^T A^T (decide.orient.orient), so
        # the schedule is that problem's and A's and B's pointers trade places at each launch
        self.dev, self.lanes, self.decision = dev, lanes, decision
        self.shape, self.spec, self.schedule, self.plan = decision.shape, decision.spec, decision.schedule, decision.plan
        self.transposed = decision.transposed
        self.residency, self.steps, self.tables, self.needs = bound.residency, bound.steps, bound.tables, bound.needs
        self.template, self.pack, self.extents = bound.template, bound.pack, bound.extents
        self.coresident = bound.coresident  # waits upward: ordered against other such launches (lanes.py)
        self.packs_a = self.pack is not None and self.pack.a.rows > 0
        self.packs_b = self.pack is not None and self.pack.b.rows > 0
        self.lock = threading.Lock()
        # lane -> (its generation, operand view, pack, [(step, argv)], keep-alive); weak, so a retired
        # lane (clear_cache, eviction, a destroyed graph's) is not kept alive by every plan it ran
        self._bound: weakref.WeakKeyDictionary[Lane, tuple] = weakref.WeakKeyDictionary()
        self.maps = bound.maps  # sm90: what its TMA maps describe (tma.maps_of)
        self.shares = bound.shares  # sm90 clusters: the device address of the CTAs' share words (0: no clusters)
        # sm90: C written through a TMA map where a launch's C base is 16-byte aligned and beta is 0
        t = self.template
        self.c_storable = self.maps is not None and tma.c_storable(self.spec.tile, t.ops.c_rs, t.ops.c_cs,
                                                                   decision.c_dtype, self.plan.policy)

    @property
    def out_dtype(self) -> str:
        """C's dtype."""
        return self.decision.c_dtype

    @property
    def names(self) -> list[str]:
        return [s.name for s in self.steps if s.grid]

    def _bind(self, lane: Lane):
        """This plan's parameter blocks on ``lane`` (its buffers' pointers filled in)."""
        outer = TmaParams(shares=self.shares) if self.maps else None  # the sm90 block holds the GemmParams
        params = outer.gemm if outer is not None else GemmParams()
        ctypes.pointer(params)[0] = self.template
        ops, table = params.ops, params.table  # views into params' memory
        table.workspace, table.flags, table.counters = lane.ptr("workspace"), lane.ptr("flags"), lane.ptr("counters")
        table.state = lane.state.ptr if self.template.table.state else 0
        pack = None
        if self.pack is not None:
            pack = PackPair()
            ctypes.pointer(pack)[0] = self.pack
            pack.a.dst, pack.b.dst = lane.ptr("pack_a"), lane.ptr("pack_b")
            if self.packs_a:
                ops.a = pack.a.dst
            if self.packs_b:
                ops.b = pack.b.dst
        argvs = {}
        for block in (params, pack, outer):
            if block is not None:
                argvs[id(block)] = (ctypes.c_void_p * 1)(ctypes.addressof(block))
        steps = [(st, ctypes.addressof(argvs[id(pack if st.packs else outer if st.tma else params)]))
                 for st in self.steps if st.grid]
        bound = (lane.generation, ops, pack, steps, (params, argvs, outer, [None]))
        self._bound[lane] = bound
        return bound

    def enqueue(self, lane: Lane, a: int, b: int, c: int, alpha: float, beta: float, stream: int,
                capturing: bool = False, only: Step | None = None) -> None:
        """Launch this plan's steps (or ``only`` that one) on ``stream`` with the operands at
        ``a``, ``b``, ``c``."""
        if self.transposed:
            a, b = b, a
        with self.lock:
            bound = self._bound.get(lane)
            if bound is None or bound[0] != lane.generation:
                bound = self._bind(lane)
            _, ops, pack, steps, keep = bound
            if self.packs_a:
                pack.a.src = a
            else:
                ops.a = a
            if self.packs_b:
                pack.b.src = b
            else:
                ops.b = b
            ops.c, ops.alpha, ops.beta = c, alpha, beta
            if self.maps:
                self._encode_maps(keep[2], keep[3], ops.a, ops.b, c if self.c_storable and beta == 0 and c % 16 == 0
                                  else 0)
            if only is not None:
                only.enqueue(next(argv for step, argv in steps if step is only), stream)
                return
            if self.coresident:
                self._order(stream, capturing, wait=True)
            for step, argv in steps:
                step.enqueue(argv, stream)
            if self.coresident:
                self._order(stream, capturing, wait=False)

    def _encode_maps(self, outer: TmaParams, last: list, a: int, b: int, c: int) -> None:
        """A's and B's TMA maps in ``outer`` for the operands at ``a`` and ``b``, and C's for the C
        at ``c`` (0: C written by the shared epilogue); re-encoded only when the pointers change
        (``last`` holds those they were encoded for)."""
        if last[0] == (a, b, c):
            return
        if last[0] is None or last[0][:2] != (a, b):
            tma.fill(outer, self.maps, a, b)
        if c:
            t = self.template
            tma.fill_c(outer, c, t.table.m, t.table.n, t.ops.c_rs, self.spec.tile.bm, self.out_dtype)
        outer.c_store = 1 if c else 0
        last[0] = (a, b, c)

    def _order(self, stream: int, capturing: bool, *, wait: bool) -> None:
        """Wait for (or record) the device's co-residency event; in a graph as external nodes, so
        replays are ordered against eager launches and other graphs too."""
        drv = driver()
        event = self.lanes.coresident
        if wait:
            flags = drv.CUevent_wait_flags.CU_EVENT_WAIT_EXTERNAL if capturing else 0
            err, = drv.cuStreamWaitEvent(stream, event, flags)
        else:
            flags = drv.CUevent_record_flags.CU_EVENT_RECORD_EXTERNAL if capturing else 0
            err, = drv.cuEventRecordWithFlags(event, stream, flags)
        if err:
            raise CudaError(f"{'cuStreamWaitEvent' if wait else 'cuEventRecordWithFlags'}(co-residency order) "
                            f"failed with {err.name}")


def build_plan(dev: Device, lanes: Lanes, a: Operand, b: Operand, c: Operand | None, req: GemmRequest) -> GemmPlan:
    """Check and build the plan of one signature (module doc); every refusal before any launch."""
    decision = decide(a, b, c, dev.target, req)
    return GemmPlan(dev, lanes, decision, bind(dev, decision, req.tuning))
