"""Binding a Decision to a device: what ``build_plan`` does after ``decide``. The main kernel's
residency from the occupancy API (and the refusal of a launch that could never finish there), the
table uploaded in one allocation, the parameter block template, the pack pass, the steps of a
launch in order, and what the sm90 TMA maps and clusters need.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ...dispatch import dispatch_verdict, finishing_policies, waits_only_backward
from ...errors import CudaError, DeadlockError
from ...fixup import FixupPlan, needs_epoch
from ...shapes import ITEMSIZE
from . import tma
from ..clusters import CLUSTER, launch_clusters
from ..decide import Decision
from ..decide.launches import longest_cta_macs, reduce_slices, use_pdl
from ..decide.operands import Operand, leading_dim, padded
from .device import Buffer, Device
from .lanes import Needs
from .launch import GemmParams, PackPair, PackParams, Step, c_type
from ..request import Tuning
from ..table import STATE_WORDS, TABLE_VERSION, Table, build_table

PACK_THREADS = 256  # kernels/common/pack.cuh PACK_THREADS (a test checks they agree)
PACK_BLOCKS_PER_SM = 8  # grid-stride pack copies: enough blocks to fill the chip


def extent_bytes(op: Operand, itemsize: int) -> int:
    """Bytes from an operand's first element to one past its last (the same for its transpose)."""
    return itemsize * (1 + sum((d - 1) * s for d, s in zip(op.shape, op.strides)))


@dataclass(frozen=True, slots=True)
class Bound:
    """A Decision bound to a device: its residency, launches, uploaded table, lane buffer sizes,
    parameter block template, pack pass, operand extents (bytes of A, B, C), whether its waits
    point upwards (``coresident``: ordered against other such launches, lanes.py), what its TMA
    maps describe (tma.maps_of) and the device address of its CTAs' share words (0: no clusters)."""

    residency: int
    steps: list[Step]
    tables: tuple[Buffer, ...]
    needs: Needs
    template: GemmParams
    pack: PackPair | None
    extents: tuple[int, int, int]
    coresident: bool
    maps: tuple | None = None
    shares: int = 0


def refuse_unfinishable(plan: FixupPlan, residency: int) -> None:
    """DeadlockError, naming the policies checked to finish here, unless ``plan`` finishes on
    ``residency`` resident CTAs under in-order dispatch (streamk.dispatch)."""
    verdict = dispatch_verdict(plan, residency)  # waits_only_backward plans pass at once
    if verdict.finishes:
        return
    s = plan.schedule
    safe = finishing_policies(plan, residency)
    raise DeadlockError(
        f"schedule {s.decomposition} ({s.shape}, grid {s.grid}) with fixup {plan.policy!r} can never finish on this "
        f"launch's {residency} resident CTAs: {verdict.reason}; use fixup={safe[0]!r} "
        f"(checked to finish here: {', '.join(safe)})")


def bind(dev: Device, d: Decision, tuning: Tuning) -> Bound:
    """``d`` on ``dev``: residency from the occupancy API (refusing a launch that cannot finish),
    the table uploaded, the parameter blocks and the kernels' launches."""
    spec, sched, plan = d.spec, d.schedule, d.plan
    threads, smem = dev.block_size(d.main), dev.smem_bytes(d.main)
    # A grid of at most one block per SM is launched asking for half an SM's shared memory, so
    # the hardware puts one block on each SM (with room for two it placed pairs on one SM while
    # other SMs idled; LOG.md v12).
    launch_smem = smem
    if sched.grid <= dev.sms and dev.occupancy(d.main, threads, smem) > 1:
        launch_smem = dev.one_per_sm_smem(d.main, threads, smem)
    residency = dev.occupancy(d.main, threads, launch_smem) * dev.sms
    if residency == 0:
        raise CudaError(f"{d.main} cannot be resident on {dev.name} ({threads} threads, {launch_smem} B shared "
                        f"memory): the occupancy API gives 0 blocks per SM")
    coresident = not waits_only_backward(plan)
    if coresident:
        refuse_unfinishable(plan, residency)

    table = build_table(plan)
    ops = operand_params(d)
    # sm90 clusters (clusters.py): pairs sharing B where the table pairs them, or, asked for, 2x2
    # blocks sharing A and B, or a tile column's 3 or 4 CTAs sharing B; B's TMA map strides by its leading dimension (a column-major B's column
    # stride)
    cluster, shares, main_grid = 1, None, sched.grid
    for size, words in launch_clusters(table, spec, d.cluster, coresident, ops.ldb * spec.itemsize,
                                       sched.problem.iters_per_tile):
        grid = -(-sched.grid // size) * size  # the last cluster padded with empty CTAs
        clustered = dev.cluster_residency(d.main, threads, launch_smem, size)
        # waits pointing upwards finish in lockstep pairs only with every cluster resident; a launch in
        # clusters of more than two must not take more waves than the plain one (they fill fewer SMs)
        if clustered and (not coresident or clustered >= grid) and \
                (size <= CLUSTER or -(-grid // clustered) <= -(-sched.grid // residency)):
            cluster, shares, main_grid, residency = size, words, grid, clustered
            break
    table_buf, table_ptrs = _upload_table(dev, table_arrays(table, main_grid, shares))
    epoch = needs_epoch(plan)
    assert STATE_WORDS == 2
    shape, acc_bytes, c_bytes, host = d.problem, ITEMSIZE[spec.out_dtype], ITEMSIZE[d.c_dtype], d.a.on_host
    template = GemmParams(
        lda=ops.lda, ldb=ops.ldb, c_rs=ops.c_strides[0], c_cs=ops.c_strides[1], a_cs=ops.a_cs, b_cs=ops.b_cs,
        c_type=c_type(d.c_dtype, spec.out_dtype),
        cta_offsets=table_ptrs[0], units=table_ptrs[1],
        reads=table_ptrs[2], waits=table_ptrs[3], items=table_ptrs[4], state=1 if epoch else 0,
        m=shape.m, n=shape.n, k=shape.k, table_version=TABLE_VERSION)
    sizes = ops.sizes
    needs = Needs(workspace=table.num_slots * spec.tile.bm * spec.tile.bn * acc_bytes,
                  flags=len(table.units) if epoch else 0, counters=table.tiles if plan.policy == "last-arrival" else 0,
                  pack_a=0 if host else sizes.get("A", 0), pack_b=0 if host else sizes.get("B", 0),
                  host_a=sizes.get("A", 0) if host else 0, host_b=sizes.get("B", 0) if host else 0,
                  host_c=shape.m * shape.n * c_bytes if host else 0)
    main = Step(d.main, dev.function(d.main, launch_smem), main_grid, threads, launch_smem, tma=spec.tma,
                cluster=cluster)
    steps = launch_steps(dev, d, ops.pack, main, len(table.items), tuning.pdl)
    # the caller's A and B (the kernels' B and A where transposed; an operand's extent is its transpose's)
    a, b = (d.b, d.a) if d.transposed else (d.a, d.b)
    extents = (extent_bytes(a, spec.itemsize), extent_bytes(b, spec.itemsize),
               extent_bytes(d.c, c_bytes) if d.c is not None else 0)
    maps = tma.maps_of(d.a.dtype, shape, ops.lda, ops.ldb, spec.tile, d.layout) if spec.tma else None
    return Bound(residency, steps, (table_buf,), needs, template, ops.pack, extents, coresident, maps,
                 table_ptrs[5] if cluster > 1 else 0)


def table_arrays(table: Table, main_grid: int, shares: np.ndarray | None) -> tuple[np.ndarray, ...]:
    """The int32 arrays the main kernel reads (table.py), for a grid of ``main_grid`` CTAs (the
    schedule's, or more: the last cluster's empty CTAs), then the CTAs' share words
    (clusters.py) where it runs in clusters."""
    cta_offsets = np.append(table.cta_offsets, [table.cta_offsets[-1]] * (main_grid - table.grid))
    # a row per CTA at least: kernels on the smaller tiles read row blockIdx.x before they know
    # their first unit (common/work.cuh); a CTA with no units ignores it
    unit_rows = table.units
    if len(unit_rows) < main_grid:
        unit_rows = np.concatenate([unit_rows, np.zeros((main_grid - len(unit_rows), unit_rows.shape[1]), np.int32)])
    return (cta_offsets, unit_rows, table.reads, table.waits, table.items) + ((shares,) if shares is not None else ())


@dataclass(frozen=True, slots=True)
class OperandLayout:
    """How the kernels read A, B and C: leading dimensions, column strides of A and B (1 where
    packed), C's strides, the pack pass's parameters (None: nothing packed on the device), and the
    bytes of each packed or host-padded copy by operand name."""

    lda: int
    ldb: int
    a_cs: int
    b_cs: int
    c_strides: tuple[int, int]
    pack: PackPair | None
    sizes: dict[str, int]


def operand_params(d: Decision) -> OperandLayout:
    """The operands' part of the parameter blocks for ``d``."""
    spec, a, b, c = d.spec, d.a, d.b, d.c
    widths = dict(zip("AB", d.widths))
    # leading dimensions: a row-major operand's row stride, a column-major one's column stride, a
    # packed copy's padded rows
    lda, ldb = (leading_dim(op, name, d.layout, width, spec) for (name, op), width in zip((("A", a), ("B", b)), d.widths))
    pack = None
    packs = {name: op.on_host or widths[name] == 0 for name, op in (("A", a), ("B", b))}
    sizes = {}
    if packs["A"] or packs["B"]:
        pack = PackPair(a=PackParams(ld=spec.chunk), b=PackParams(ld=spec.chunk))
        for name, op, half in (("A", a, pack.a), ("B", b, pack.b)):
            if packs[name]:
                ld = padded(op.shape[1], spec)
                sizes[name] = op.shape[0] * ld * spec.itemsize
                if op.on_host:  # copied in already padded (prepared.py): nothing to pack on the device
                    lda, ldb = (ld, ldb) if name == "A" else (lda, ld)
                    continue
                half.rs, half.cs, half.rows, half.cols, half.ld = op.strides[0], op.strides[1], op.shape[0], op.shape[1], ld
                lda, ldb = (ld, ldb) if name == "A" else (lda, ld)
        if pack.a.rows == 0 and pack.b.rows == 0:
            pack = None
    shape = d.problem
    c_strides = c.strides if c is not None and not a.on_host else (1, shape.m) if d.transposed else (shape.n, 1)
    # column strides: the operand's own where it is read in place (only the dot tiles' elementwise
    # operand may have one other than 1), else the packed copy's
    a_cs, b_cs = (1 if packs[name] else op.strides[1] for name, op in (("A", a), ("B", b)))
    return OperandLayout(lda, ldb, a_cs, b_cs, tuple(c_strides), pack, sizes)


def launch_steps(dev: Device, d: Decision, pack: PackPair | None, main: Step, items: int, pdl: bool | None) -> list[Step]:
    """The kernels of one launch in order: the pack pass, the atomic policy's prescale, ``main``,
    the separate-reduce pass (``items``: the table's split tiles), each with its grid, block and PDL."""
    spec, grid = d.spec, d.schedule.grid
    steps: list[Step] = []
    if pack is not None:
        chunks = (pack.a.rows * pack.a.ld + pack.b.rows * pack.b.ld) // spec.chunk
        pack_grid = max(1, min(-(-chunks // PACK_THREADS), dev.sms * PACK_BLOCKS_PER_SM))
        steps.append(Step(spec.pack, dev.function(spec.pack), pack_grid, PACK_THREADS, 0, packs=True))
    # the passes run the accumulators' thread count: the main kernel's block, or on sm90 its
    # consumer warp groups (their own __launch_bounds__)
    if d.plan.policy == "atomic" and items:
        steps.append(Step(spec.prescale, dev.function(spec.prescale), items, dev.block_size(spec.prescale), 0))
    # the main kernel waits (griddepcontrol) for the kernel before it: the pack pass or the prescale,
    # or, as the GEMM's first kernel, whatever ran before it on the stream (outer_loop.cuh reads
    # nothing another kernel may write before its wait); not behind a prescale behind a pack
    before = "pack" if pack is not None else "prescale" if steps else "stream"
    main.pdl = len(steps) <= 1 and use_pdl(pdl, grid, dev.sms, dev.arch, behind=before,
                                           cta_macs=longest_cta_macs(spec, d.schedule) if before == "stream" else 0)
    steps.append(main)
    if d.plan.policy == "separate-reduce" and items:
        rsmem, rthreads = dev.smem_bytes(spec.reduce), dev.block_size(spec.reduce)
        steps.append(Step(spec.reduce, dev.function(spec.reduce, rsmem), items, rthreads, rsmem,
                          grid_y=reduce_slices(items, spec, rthreads, dev.sms),
                          pdl=use_pdl(pdl, grid, dev.sms, dev.arch, behind="main")))
    return steps

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
