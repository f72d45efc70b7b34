"""A GemmPlan: everything one GEMM signature needs, built once, launched many times.

A signature is what a launch's kernels, grid, table and buffer sizes depend on: shapes, dtypes,
element strides and 16-byte alignment of the operands, the schedule asked for and its options,
the device. ``build_plan`` checks and builds (kernel choice, schedule, fixup plan, the verdict
that the launch can finish, table upload); ``GemmPlan.enqueue`` fills the pointers of one call
into a parameter block kept per lane and launches: no host-device synchronization.
"""

from __future__ import annotations

import ctypes
import threading
from typing import Any

import numpy as np

from ..dispatch import dispatch_verdict, waits_only_backward
from ..errors import CudaError, DeadlockError, ScheduleError
from ..fixup import FixupPlan, needs_epoch, plan_fixup
from ..schedule import FIXUP_POLICIES, Schedule
from ..shapes import ITEMSIZE, GemmShape, Machine, TileShape
from ..target import Target
from . import tma
from .clusters import CLUSTER, launch_pairs
from .device import Buffer, Device, driver
from .lanes import Lane, Lanes, Needs
from .kernel_registry import column_major
from .launch import GemmParams, PackPair, PackParams, Step, TmaParams
from .request import GemmRequest
from .operands import KernelSpec, Operand, copy_widths, layout_of, padded, spec_for_tile
from .select import in_place_tile, reduce_slices, runs_transposed, schedule_for, use_pdl
from .table import STATE_WORDS, TABLE_VERSION, build_table

PACK_THREADS = 256  # kernels/common/pack.cuh PACK_THREADS (a test checks they agree)
PACK_BLOCKS_PER_SM = 8  # grid-stride pack copies: enough blocks to fill the chip


def extent_bytes(op: Operand, itemsize: int) -> int:
    """Bytes from an operand's first element to one past its last."""
    return itemsize * (1 + sum((d - 1) * s for d, s in zip(op.shape, op.strides)))


def check_output_layout(c: Operand) -> None:
    """Refuse a C whose elements alias each other (a stride 0, or rows that overlap): several CTAs
    would write one element."""
    dims = sorted((s, d) for s, d in zip(c.strides, c.shape) if d > 1)
    if dims and (dims[0][0] < 1 or (len(dims) == 2 and dims[1][0] < dims[0][0] * dims[0][1])):
        raise ScheduleError(f"C's elements overlap (shape {c.shape}, element strides {c.strides}): every element "
                            f"of C must have its own memory; pass a contiguous C or none")


class GemmPlan:
    """The checked, uploaded form of one signature (see module doc)."""

    def __init__(self, dev: Device, lanes: Lanes, shape: GemmShape, spec: KernelSpec, schedule: Schedule, plan: FixupPlan,
                 residency: int, steps: list[Step], tables: tuple[Buffer, ...], needs: Needs,
                 template: GemmParams, pack: PackPair | None, extents: tuple[int, int, int],
                 coresident: bool, maps: tuple | None = None, pairs: int = 0, transposed: bool = False) -> None:
        # shape: the caller's GEMM; transposed: the kernels run C^T = B^T A^T (select.runs_transposed),
        # so the schedule is that problem's and A's and B's pointers trade places at each launch
        self.dev, self.lanes, self.shape, self.spec, self.schedule, self.plan = dev, lanes, shape, spec, schedule, plan
        self.transposed = transposed
        self.residency, self.steps, self.tables, self.needs = residency, steps, tables, needs
        self.template, self.pack, self.extents = template, pack, extents
        self.coresident = coresident  # waits upward: ordered against other such launches (lanes.py)
        self.packs_a = pack is not None and pack.a.rows > 0
        self.packs_b = pack is not None and pack.b.rows > 0
        self.lock = threading.Lock()
        self._bound: dict[Lane, tuple] = {}  # lane -> (its generation, operand view, pack, [(step, argv)], keep-alive)
        self.maps = maps  # sm90: what its TMA maps describe (tma.maps_of)
        self.pairs = pairs  # sm90 clusters: the device address of their pairing flags (0: no clusters)

    @property
    def names(self) -> list[str]:
        return [s.name for s in self.steps if s.grid]

    def _bind(self, lane: Lane):
        """This plan's parameter blocks on ``lane`` (its buffers' pointers filled in)."""
        outer = TmaParams(pairs=self.pairs) if self.maps else None  # the sm90 block holds the GemmParams
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
                self._encode_maps(keep[2], keep[3], ops.a, ops.b)
            if only is not None:
                only.enqueue(next(argv for step, argv in steps if step is only), stream)
                return
            if self.coresident:
                self._order(stream, capturing, wait=True)
            for step, argv in steps:
                step.enqueue(argv, stream)
            if self.coresident:
                self._order(stream, capturing, wait=False)

    def _encode_maps(self, outer: TmaParams, last: list, a: int, b: int) -> None:
        """A's and B's TMA maps in ``outer`` for the operands at ``a`` and ``b`` (re-encoded only
        when the pointers change; ``last`` holds the pair they were encoded for)."""
        if last[0] == (a, b):
            return
        tma.fill(outer, self.maps, a, b)
        last[0] = (a, b)

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


def _tile_asked(dtype: str, schedule: str | Schedule, tile: TileShape | int | str | None) -> TileShape | None:
    """The tile the caller fixed (by ``tile=`` or by the Schedule's own), None for the target's choice."""
    if isinstance(schedule, Schedule):
        if tile is not None and spec_for_tile(dtype, tile).tile != schedule.tile:
            raise ScheduleError(f"tile={tile} disagrees with the schedule's tile {schedule.tile}")
        return spec_for_tile(dtype, schedule.tile).tile  # no kernel for it: the tiles there are
    return None if tile is None else spec_for_tile(dtype, tile).tile


def resolve(target: Target, a: Operand, b: Operand, schedule: str | Schedule, fixup: str | None,
            tile: TileShape | int | str | None, machine: Machine | None, options: dict[str, Any]) -> Schedule:
    """The Schedule a launch on ``target`` runs for these operands and arguments: what ``streamk
    schedule DECOMP --target GPU`` prints for the same shape, dtype and options."""
    shape = GemmShape(a.shape[0], b.shape[1], a.shape[1])
    return schedule_for(schedule, shape, a.dtype, target, tile=_tile_asked(a.dtype, schedule, tile), fixup=fixup,
                        machine=machine, **options)


def refuse_unfinishable(plan: FixupPlan, residency: int) -> None:
    """DeadlockError, naming the policies checked to finish here, unless ``plan`` finishes on
    ``residency`` resident CTAs under in-order dispatch (streamk.dispatch)."""
    verdict = dispatch_verdict(plan, residency)  # waits_only_backward plans pass at once
    if verdict.finishes:
        return
    s = plan.schedule
    safe = [p for p in FIXUP_POLICIES if p != plan.policy and dispatch_verdict(plan_fixup(s, p), residency).finishes]
    raise DeadlockError(
        f"schedule {s.decomposition} ({s.shape}, grid {s.grid}) with fixup {plan.policy!r} can never finish on this "
        f"launch's {residency} resident CTAs: {verdict.reason}; use fixup={safe[0]!r} "
        f"(checked to finish here: {', '.join(safe)})")


def build_plan(dev: Device, lanes: Lanes, a: Operand, b: Operand, c: Operand | None, req: GemmRequest) -> GemmPlan:
    """Check and build the plan of one signature (module doc); every refusal before any launch."""
    schedule, fixup, tile, machine, tuning = req.schedule, req.fixup, req.tile, req.machine, req.tuning
    options = req.scheduler_options
    asked_shape = GemmShape(a.shape[0], b.shape[1], a.shape[1])
    extents_of = (a, b)
    tile = in_place_tile(a, b, c, schedule, tile, dev.target) or tile  # column-major operands read as given
    transposed = runs_transposed(a, b, c, schedule, tile, dev.target)
    if transposed:  # the kernels see A' = B^T, B' = A^T, C' = C^T
        a, b, c = b.transposed(), a.transposed(), c.transposed() if c is not None else None
    shape = GemmShape(a.shape[0], b.shape[1], a.shape[1])
    asked = _tile_asked(a.dtype, schedule, tile)
    archs = spec_for_tile(a.dtype, asked).archs if asked is not None else (dev.arch,)
    if dev.arch not in archs:
        raise ScheduleError(f"the {asked.bm}x{asked.bn}x{asked.bk} kernels need {' or '.join(archs)} (this device is "
                            f"{dev.arch}); pick another tile")
    sched = resolve(dev.target, a, b, schedule, fixup, tile, machine, options)
    spec = spec_for_tile(a.dtype, sched.tile)
    if c is not None:
        check_output_layout(c)
    # an operand no copy width reads in place is packed, and the packed copy is read 16 bytes wide
    widths = dict(zip("AB", copy_widths(a, b, spec, tuning.narrow)))
    layout = layout_of(a, b, spec)  # column-major operands the sm90 kernels read in place
    main = spec.entry(min(w or 16 for w in widths.values()), layout)
    threads, smem = dev.block_size(main), dev.smem_bytes(main)
    plan = plan_fixup(sched)
    # A grid of at most one block per SM is launched asking for half an SM's shared memory, so
    # the hardware puts one block on each SM (with room for two it placed pairs on one SM while
    # other SMs idled; LOG.md v12).
    launch_smem = smem
    if sched.grid <= dev.sms and dev.occupancy(main, threads, smem) > 1:
        launch_smem = dev.one_per_sm_smem(main, threads, smem)
    residency = dev.occupancy(main, threads, launch_smem) * dev.sms
    if residency == 0:
        raise CudaError(f"{main} cannot be resident on {dev.name} ({threads} threads, {launch_smem} B shared "
                        f"memory): the occupancy API gives 0 blocks per SM")
    coresident = not waits_only_backward(plan)
    if coresident:
        refuse_unfinishable(plan, residency)

    table = build_table(plan)
    # sm90 clusters of two CTAs sharing B where the table pairs them (clusters.py)
    pairs = launch_pairs(table, spec, coresident, tuning.multicast)
    cluster = CLUSTER if pairs is not None else 1
    if cluster > 1 and (clustered := dev.cluster_residency(main, threads, launch_smem, cluster)):
        residency = clustered
    else:
        cluster, pairs = 1, None
    main_grid = sched.grid + sched.grid % cluster  # an odd grid's last cluster gets an empty CTA
    cta_offsets = np.append(table.cta_offsets, [table.cta_offsets[-1]] * (main_grid - sched.grid))
    # a row per CTA at least: kernels on the smaller tiles read row blockIdx.x before they know
    # their first unit (common/work.cuh); a CTA with no units ignores it
    unit_rows = table.units
    if len(unit_rows) < main_grid:
        unit_rows = np.concatenate([unit_rows, np.zeros((main_grid - len(unit_rows), unit_rows.shape[1]), np.int32)])
    arrays = (cta_offsets, unit_rows, table.reads, table.waits, table.items) + ((pairs,) if cluster > 1 else ())
    table_buf, table_ptrs = _upload_table(dev, arrays)
    acc_bytes = ITEMSIZE[spec.out_dtype]
    epoch = needs_epoch(plan)
    assert STATE_WORDS == 2

    # leading dimensions: a row-major operand's row stride, a column-major one's column stride
    lda, ldb = (op.strides[1] if column_major(layout, name) else op.strides[0] for name, op in (("A", a), ("B", b)))
    pack = None
    packs = {name: op.on_host or widths[name] == 0 for name, op in (("A", a), ("B", b))}
    sizes = {}
    if packs["A"] or packs["B"]:
        pack = PackPair(a=PackParams(ld=spec.chunk), b=PackParams(ld=spec.chunk))
        for name, op, half in (("A", a, pack.a), ("B", b, pack.b)):
            if packs[name]:
                ld = padded(op.shape[1], spec)
                sizes[name] = op.shape[0] * ld * spec.itemsize
                if op.on_host:  # copied in already padded (api.py): nothing to pack on the device
                    lda, ldb = (ld, ldb) if name == "A" else (lda, ld)
                    continue
                half.rs, half.cs, half.rows, half.cols, half.ld = op.strides[0], op.strides[1], op.shape[0], op.shape[1], ld
                lda, ldb = (ld, ldb) if name == "A" else (lda, ld)
        if pack.a.rows == 0 and pack.b.rows == 0:
            pack = None
    host = a.on_host
    c_strides = c.strides if c is not None and not host else (1, shape.m) if transposed else (shape.n, 1)
    # column strides: the operand's own where it is read in place (only the dot tiles' elementwise
    # operand may have one other than 1), else the packed copy's
    a_cs, b_cs = (1 if packs[name] else op.strides[1] for name, op in (("A", a), ("B", b)))
    template = GemmParams(
        lda=lda, ldb=ldb, c_rs=c_strides[0], c_cs=c_strides[1], a_cs=a_cs, b_cs=b_cs,
        cta_offsets=table_ptrs[0], units=table_ptrs[1],
        reads=table_ptrs[2], waits=table_ptrs[3], items=table_ptrs[4], state=1 if epoch else 0,
        m=shape.m, n=shape.n, k=shape.k, table_version=TABLE_VERSION)
    needs = Needs(workspace=table.num_slots * spec.tile.bm * spec.tile.bn * acc_bytes,
                  flags=len(table.units) if epoch else 0, counters=table.tiles if plan.policy == "last-arrival" else 0,
                  pack_a=0 if host else sizes.get("A", 0), pack_b=0 if host else sizes.get("B", 0),
                  host_a=sizes.get("A", 0) if host else 0, host_b=sizes.get("B", 0) if host else 0,
                  host_c=shape.m * shape.n * acc_bytes if host else 0)

    steps: list[Step] = []
    if pack is not None:
        chunks = (pack.a.rows * pack.a.ld + pack.b.rows * pack.b.ld) // spec.chunk
        grid = max(1, min(-(-chunks // PACK_THREADS), dev.sms * PACK_BLOCKS_PER_SM))
        steps.append(Step(spec.pack, dev.function(spec.pack), grid, PACK_THREADS, 0, packs=True))
    items = len(table.items)
    # the passes run the accumulators' thread count: the main kernel's block, or on sm90 its
    # consumer warp groups (their own __launch_bounds__)
    if plan.policy == "atomic" and items:
        steps.append(Step(spec.prescale, dev.function(spec.prescale), items, dev.block_size(spec.prescale), 0))
    # the main kernel waits (griddepcontrol) for the one pass before it: the pack or the prescale
    main_pdl = len(steps) == 1 and use_pdl(tuning.pdl, sched.grid, dev.sms, dev.arch, behind_pack=pack is not None)
    steps.append(Step(main, dev.function(main, launch_smem), main_grid, threads, launch_smem,
                      pdl=main_pdl, tma=spec.tma, cluster=cluster))
    if plan.policy == "separate-reduce" and items:
        rsmem, rthreads = dev.smem_bytes(spec.reduce), dev.block_size(spec.reduce)
        steps.append(Step(spec.reduce, dev.function(spec.reduce, rsmem), items, rthreads, rsmem,
                          grid_y=reduce_slices(items, spec, rthreads, dev.sms),
                          pdl=use_pdl(tuning.pdl, sched.grid, dev.sms, dev.arch, behind_pack=False)))
    extents = (extent_bytes(extents_of[0], spec.itemsize), extent_bytes(extents_of[1], spec.itemsize),
               extent_bytes(c, acc_bytes) if c is not None else 0)
    maps = tma.maps_of(a.dtype, shape, lda, ldb, spec.tile, layout) if spec.tma else None
    return GemmPlan(dev, lanes, asked_shape, spec, sched, plan, residency, steps, (table_buf,), needs, template, pack,
                    extents, coresident, maps, table_ptrs[5] if cluster > 1 else 0, transposed)


def _upload_table(dev: Device, arrays: tuple[np.ndarray, ...]) -> tuple[Buffer, list[int]]:
    """The table's int32 arrays in one allocation and one copy, each starting on 16 bytes."""
    parts, ptrs, at = [], [], 0
    for x in arrays:
        flat = np.ascontiguousarray(x, dtype=np.int32).reshape(-1)
        pad = -len(flat) % 4
        parts += [flat, np.zeros(pad, np.int32)]
        ptrs.append(at * 4)
        at += len(flat) + pad
    buf = dev.upload(np.concatenate(parts))
    return buf, [buf.ptr + offset for offset in ptrs]
