"""The decision: what runs for one GEMM on a Target, made once, with no CUDA.

``decide(a, b, c, target, request)`` returns a ``Decision``: which way round the problem runs, the
tile and its kernels (``KernelSpec``), the Schedule and its fixup plan, the copy widths and operand
layout the main kernel reads, and its entry name. ``streamk.gpu.runtime.plan.build_plan`` then binds a
Decision to a device (occupancy, table upload, parameter blocks). The rules live beside it:
``tiles`` (auto's tile and orientation, in-place reads), ``schedule`` (the
Schedule, auto's measured options), ``operands`` (copy widths, layouts), ``launches`` (PDL,
clusters, reduce slices).
"""

from __future__ import annotations

from dataclasses import dataclass

from ...errors import ScheduleError
from ...fixup import FixupPlan, plan_fixup
from ...schedule import Schedule
from ...shapes import GemmShape, TileShape
from ...target import Target
from ..catalogue import SPECS, KernelSpec, spec_for_tile
from ..request import GemmRequest
from .launches import QUAD_CLUSTER, QUAD_ORDER, cluster_shape
from .operands import Operand, c_dtype_of, copy_widths, layout_of, leading_dim, pack_bytes, padded
from .schedule import schedule_for
from .orient import orient, row_major_view


@dataclass(frozen=True, slots=True)
class Decision:
    """What runs for one GEMM: ``shape`` is the caller's problem; ``transposed``: the kernels run
    C^T = B^T A^T, and ``a``, ``b``, ``c`` (None: the row-major C the call allocates) are the
    operands as the kernels see them, ``schedule`` that problem's; ``widths``: the copy widths A and
    B are read with in place (0: packed first, then read 16 bytes wide); ``layout``: the main
    kernel's operand layout (catalogue.LAYOUTS); ``main``: its entry point; ``cluster``: the
    clusters its launch asks for, (tile rows, tile columns) a cluster spans (launches.cluster_shape:
    (1, 1) none, (2, 1) pairs sharing B where the table has them, (2, 2) blocks sharing A and B);
    ``c_dtype``: C's dtype (the accumulator's, or FP16 / BF16 inputs' own)."""

    shape: GemmShape
    transposed: bool
    a: Operand
    b: Operand
    c: Operand | None
    spec: KernelSpec
    schedule: Schedule
    plan: FixupPlan
    widths: tuple[int, int]
    layout: str
    main: str
    cluster: tuple[int, int]
    c_dtype: str

    @property
    def problem(self) -> GemmShape:
        """The GEMM the kernels run (the caller's, transposed where ``transposed``)."""
        return self.schedule.shape

    @property
    def packed(self) -> int:
        """The bytes the pack pass copies before the main kernel (what the calibrated model prices)."""
        return pack_bytes(self.a, self.b, self.widths, self.spec.itemsize)


def decide(a: Operand, b: Operand, c: Operand | None, target: Target, req: GemmRequest) -> Decision:
    """What runs for C = A @ B (checked operands, ``c`` None where the call allocates C) on
    ``target`` as ``req`` asks: ScheduleError naming what is wrong otherwise."""
    shape = GemmShape(a.shape[0], b.shape[1], a.shape[1])
    auto = isinstance(req.schedule, str) and req.schedule == "auto" and req.tile is None and not a.on_host
    way = orient(a, b, c, target) if auto else None
    transposed = way is not None and way.transposed
    if transposed:  # the kernels see A' = B^T, B' = A^T, C' = C^T
        a, b, c = b.transposed(), a.transposed(), c.transposed() if c is not None else None
    tile = way.tile if way is not None else asked_tile(a.dtype, req.schedule, req.tile)
    if (way.in_place if way is not None else tile is not None):  # a tile fixed, not auto's own pick
        _check_arch(spec_for_tile(a.dtype, tile), target)
    problem = GemmShape(a.shape[0], b.shape[1], a.shape[1])
    own = way is not None and not way.in_place  # auto's own tile (schedule_for picks it again, the model may overrule)
    sched = schedule_for(req.schedule, problem, a.dtype, target, tile=None if own else tile, fixup=req.fixup,
                         machine=req.machine,
                         b_row_bytes=b_row_bytes(a, b, tile, req), multicast=req.tuning.multicast,
                         row_major=row_major_view(a, b), **req.scheduler_options)
    spec = spec_for_tile(a.dtype, sched.tile)
    cluster = cluster_shape(req.tuning.multicast, req.tuning.cluster_2d, spec, sched)
    if cluster == QUAD_CLUSTER and isinstance(req.schedule, str) and sched.tile_order != QUAD_ORDER:
        # a given Schedule keeps its order; auto's short launches come in it already (launches.auto_quads)
        sched = sched.with_tile_order(QUAD_ORDER)  # CTAs 4q .. 4q + 3 on one 2x2 block of tiles
    if c is not None:
        check_output_layout(c)
    # an operand no copy width reads in place is packed, and the packed copy is read 16 bytes wide
    widths = copy_widths(a, b, spec, req.tuning.narrow)
    layout = layout_of(a, b, spec)  # column-major operands the sm90 kernels read in place
    main = spec.entry(min(w or 16 for w in widths), layout)
    plan = plan_fixup(sched)
    c_dtype = c_dtype_of(c, req.out_dtype, spec)
    if plan.policy == "atomic" and c_dtype != spec.out_dtype:
        raise ScheduleError(f"the atomic fixup adds partial tiles into C, which needs a {spec.out_dtype} C (C is "
                            f"{c_dtype}): pick another fixup or C dtype")
    return Decision(shape, transposed, a, b, c, spec, sched, plan, widths, layout, main, cluster, c_dtype)


def b_row_bytes(a: Operand, b: Operand, tile: TileShape | None, req: GemmRequest) -> int | None:
    """The bytes between the rows the main kernel on ``tile`` reads B by (whether they straddle L2 lines
    decides clusters: launches.use_multicast); host operands are copied in padded.
    None where the tile is not known yet and B is on the device (a named schedule's: not auto's)."""
    if tile is None:
        spec = SPECS[a.dtype]
        return padded(b.shape[1], spec) * spec.itemsize if b.on_host else None
    spec = spec_for_tile(a.dtype, tile)
    width = copy_widths(a, b, spec, req.tuning.narrow)[1]
    return leading_dim(b, "B", layout_of(a, b, spec), width, spec) * spec.itemsize


def asked_tile(dtype: str, schedule: str | Schedule, tile: TileShape | int | str | None) -> TileShape | None:
    """The tile the caller fixed (by ``tile=`` or by the Schedule's own), None for the target's choice."""
    if isinstance(schedule, Schedule):
        if tile is not None and spec_for_tile(dtype, tile).tile != schedule.tile:
            raise ScheduleError(f"tile={tile} disagrees with the schedule's tile {schedule.tile}")
        return spec_for_tile(dtype, schedule.tile).tile  # no kernel for it: the tiles there are
    return None if tile is None else spec_for_tile(dtype, tile).tile


def _check_arch(spec: KernelSpec, target: Target) -> None:
    if target.arch not in spec.archs:
        t = spec.tile
        raise ScheduleError(f"the {t.bm}x{t.bn}x{t.bk} kernels need {' or '.join(spec.archs)} (this device is "
                            f"{target.arch}); pick another tile")


def check_output_layout(c: Operand) -> None:
    """Refuse a C whose elements alias each other (a stride 0, or rows that overlap): several CTAs
    would write one element."""
    dims = sorted((s, d) for s, d in zip(c.strides, c.shape) if d > 1)
    if dims and (dims[0][0] < 1 or (len(dims) == 2 and dims[1][0] < dims[0][0] * dims[0][1])):
        raise ScheduleError(f"C's elements overlap (shape {c.shape}, element strides {c.strides}): every element "
                            f"of C must have its own memory; pass a contiguous C or none")
