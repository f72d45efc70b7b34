"""Inputs as the kernels see them: pointer, shape, element strides, dtype; checked before CUDA.

PyTorch tensors are read through ``data_ptr()``/``stride()`` (which also covers bfloat16, which
``__cuda_array_interface__`` cannot describe), CuPy and anything else through
``__cuda_array_interface__``, NumPy arrays are host data the API copies in and out.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ...errors import ScheduleError
from ...shapes import ITEMSIZE
from ..catalogue import SPECS, KernelSpec, column_major, layout_of_operands
from ..request import NARROW_MODES

_TYPESTR = {"<f2": "float16", "<f4": "float32", "<f8": "float64"}


@dataclass(frozen=True, slots=True)
class Operand:
    """A 2-D operand: ``kind`` is torch, cuda (array interface) or numpy (host)."""

    obj: object
    kind: str
    ptr: int
    shape: tuple[int, int]
    strides: tuple[int, int]  # elements
    dtype: str

    @property
    def on_host(self) -> bool:
        return self.kind == "numpy"

    @property
    def rows_contiguous(self) -> bool:
        """Whether each row's elements are adjacent (unit column stride, or one column)."""
        return self.strides[1] == 1 or self.shape[1] == 1

    def transposed(self) -> Operand:
        """The same memory read as the transpose (shape and strides swapped)."""
        return Operand(self.obj, self.kind, self.ptr, (self.shape[1], self.shape[0]), (self.strides[1], self.strides[0]),
                       self.dtype)


def describe(x: object, name: str) -> Operand:
    """Read pointer, shape, element strides and dtype of ``x``; ScheduleError if unusable."""
    if type(x).__module__.startswith("torch"):
        if not x.is_cuda:  # type: ignore[attr-defined]
            raise ScheduleError(f"{name} must be on a CUDA device (got a tensor on {x.device})")  # type: ignore[attr-defined]
        dtype = str(x.dtype).removeprefix("torch.")  # type: ignore[attr-defined]
        return _checked(Operand(x, "torch", int(x.data_ptr()), tuple(x.shape), tuple(x.stride()), dtype), name)  # type: ignore[attr-defined]
    if hasattr(x, "__cuda_array_interface__"):
        cai = x.__cuda_array_interface__  # type: ignore[attr-defined]
        dtype = _TYPESTR.get(cai["typestr"], cai["typestr"])
        shape = tuple(cai["shape"])
        itemsize = int(cai["typestr"][2:])
        strides = cai.get("strides")
        if strides is None:
            strides = tuple(int(np.prod(shape[i + 1:])) for i in range(len(shape)))
        else:
            if any(s % itemsize for s in strides):
                raise ScheduleError(f"{name} strides must be whole elements (got {strides} bytes)")
            strides = tuple(s // itemsize for s in strides)
        return _checked(Operand(x, "cuda", int(cai["data"][0]), shape, strides, dtype), name)
    if isinstance(x, np.ndarray):
        return _checked(Operand(x, "numpy", 0, x.shape, tuple(s // x.itemsize for s in x.strides),
                                x.dtype.name), name)
    raise ScheduleError(f"{name} must be a torch or CuPy CUDA tensor (or anything with "
                        f"__cuda_array_interface__) or a NumPy array (got {type(x).__name__})")


def _checked(op: Operand, name: str) -> Operand:
    if len(op.shape) != 2:
        raise ScheduleError(f"{name} must be a matrix (rank 2), got rank {len(op.shape)} with shape {op.shape}")
    if any(s < 0 for s in op.strides):
        raise ScheduleError(f"{name} must have non-negative strides (got {op.strides})")
    return op


def check_operands(a: Operand, b: Operand, c: Operand | None, out_dtype: str | None = None) -> KernelSpec:
    """The kernel for these operands (and ``out_dtype``, C's dtype where the call allocates C);
    ScheduleError naming what is wrong otherwise."""
    if a.dtype != b.dtype:
        raise ScheduleError(f"A and B must have the same dtype (got {a.dtype} and {b.dtype})")
    if a.dtype not in SPECS:
        raise ScheduleError(f"dtype must be one of {', '.join(SPECS)} (got {a.dtype})")
    if a.shape[1] != b.shape[0]:
        raise ScheduleError(f"inner dimensions must agree: A is {a.shape[0]}x{a.shape[1]}, "
                            f"B is {b.shape[0]}x{b.shape[1]}")
    if a.on_host != b.on_host:
        raise ScheduleError("A and B must both be on the GPU or both be NumPy arrays")
    spec = SPECS[a.dtype]
    if out_dtype is not None:
        check_out_dtype(a.dtype, out_dtype, spec)
        if c is not None and c.dtype != out_dtype:
            raise ScheduleError(f"out_dtype is {out_dtype} but C is {c.dtype}: pass one of them")
    if c is not None:
        want = (a.shape[0], b.shape[1])
        if c.shape != want:
            raise ScheduleError(f"C must be {want[0]}x{want[1]} (got {c.shape[0]}x{c.shape[1]})")
        check_out_dtype(a.dtype, c.dtype, spec)
        if c.on_host != a.on_host:
            raise ScheduleError("C must live where A and B live (GPU tensors or NumPy arrays)")
        if c.ptr % ITEMSIZE[c.dtype]:
            raise ScheduleError(f"C must be aligned to its element size (address {c.ptr:#x})")
    return spec


def out_dtypes(dtype: str, spec: KernelSpec) -> tuple[str, ...]:
    """The dtypes C may have for ``dtype`` inputs: the accumulator's, and FP16 / BF16 inputs' own
    (the kernels convert once, as they write C: kernels/common/c_elem.cuh)."""
    return (spec.out_dtype, dtype) if dtype in ("float16", "bfloat16") else (spec.out_dtype,)


def c_dtype_of(c: Operand | None, out_dtype: str | None, spec: KernelSpec) -> str:
    """C's dtype: a given C's, else the asked ``out_dtype``, else the accumulator's."""
    return c.dtype if c is not None else out_dtype or spec.out_dtype


def check_out_dtype(dtype: str, out: str, spec: KernelSpec, name: str = "C") -> None:
    """ScheduleError unless C may be ``out`` for ``dtype`` inputs (``name``: what the message calls C's
    dtype, e.g. a CLI flag)."""
    allowed = out_dtypes(dtype, spec)
    if out not in allowed:
        raise ScheduleError(f"{name} must be {' or '.join(allowed)} for {dtype} inputs (got {out})")


def needs_pack(op: Operand, spec: KernelSpec) -> bool:
    """Whether the kernel can read ``op`` in place: row-major, 16-byte rows, a whole last chunk (TMA
    reads a row's partial last chunk itself: its map stops at the row's end)."""
    rows, cols = op.shape
    row_stride = op.strides[0]
    aligned = op.rows_contiguous and row_stride % spec.chunk == 0 and (spec.tma or cols % spec.chunk == 0) \
        and row_stride >= cols and op.ptr % 16 == 0
    return op.on_host or not aligned


def column_major_in_place(op: Operand, name: str, spec: KernelSpec) -> bool:
    """Whether ``spec``'s kernels read operand ``name`` ("A" or "B") in place as a column-major
    matrix: a kernel with that layout, unit row stride, and its columns as aligned as rows must be."""
    return spec.reads_column_major(name) and not op.rows_contiguous and not needs_pack(op.transposed(), spec)


def layout_of(a: Operand, b: Operand, spec: KernelSpec) -> str:
    """The layout (catalogue.LAYOUTS) of the main kernel that reads ``a`` and ``b`` where each
    is read in place: column-major where ``column_major_in_place`` (a packed copy is row-major)."""
    return layout_of_operands(column_major_in_place(a, "A", spec), column_major_in_place(b, "B", spec))


def load_bytes(op: Operand, spec: KernelSpec, *, narrow: bool = True) -> int:
    """Widest copy (16, or with ``narrow`` 8, 4 or, on the tiles with shifted copies, 2 bytes) that
    reads ``op`` in place: row-major, base, row stride and row length multiples of it. 0: the
    operand must be packed."""
    if not needs_pack(op, spec):
        return 16
    rows, cols = op.shape
    row_stride = op.strides[0]
    if not narrow or op.on_host or not op.rows_contiguous or row_stride < cols:
        return 0
    for width, _ in spec.narrow:
        per = width // spec.itemsize
        if row_stride % per == 0 and cols % per == 0 and op.ptr % width == 0:
            return width
    return 0


# Per 64-k stage per warp the mainloop issues 327 instructions with 16-byte copies, 334 with 8-byte
# and 458 with 4-byte ones (NVRTC 13.5, sm_90a): 8-byte copies beat packing wherever they apply;
# 4-byte ones only where they save the whole pack launch on a problem of at most this many flops
# per compulsory byte (H200, first 100 corpus shapes; benchmarks/LOG.md v9).
W4_MAX_INTENSITY = 200.0
# Shifted copies (the _w2 kernels) read rows of any alignment in place, in decode-like GEMMs (m or n
# at most SHIFTED_MAX_SIDE, which read each operand once) where the pack they save would copy at
# least SHIFTED_MIN_PACK_BYTES: on the H100 decode corpus they took 0.73x the time of pack + 16-byte
# copies where the pack copied >= 16 MB, ~0.95x at 4-16 MB and up to 1.6x below (a CTA's in-place
# reads wait on DRAM where the small packed copy came from the L2; LOG.md v21). Elsewhere 2-byte
# rows are packed: shifted copies took 1.29x the time on the 400 corpus shapes (LOG.md v14).
SHIFTED_MAX_SIDE = 64
SHIFTED_MIN_PACK_BYTES = 8 << 20


def decode_like(m: int, n: int) -> bool:
    """Whether a GEMM is decode-like: one output side at most SHIFTED_MAX_SIDE."""
    return min(m, n) <= SHIFTED_MAX_SIDE


def intensity(a: Operand, b: Operand, spec: KernelSpec) -> float:
    """Flops per compulsory byte (A and B read once, C written once)."""
    m, k = a.shape
    n = b.shape[1]
    out_bytes = ITEMSIZE[spec.out_dtype]
    return 2.0 * m * n * k / ((m * k + k * n) * spec.itemsize + m * n * out_bytes)


def pack_bytes(a: Operand, b: Operand, widths: tuple[int, int], itemsize: int) -> int:
    """The bytes the pack pass copies of ``a`` and ``b`` read at ``widths`` (0: packed)."""
    return sum(op.shape[0] * op.shape[1] for op, w in zip((a, b), widths) if w == 0) * itemsize


def copy_widths(a: Operand, b: Operand, spec: KernelSpec, narrow: str = "auto") -> tuple[int, int]:
    """Copy width (16, 8, 4 or 2 bytes) A and B are read with in place, 0 for one that is packed.

    ``narrow``: "auto" (8-byte copies wherever they apply, 4-byte ones under W4_MAX_INTENSITY when
    neither operand is packed; on the tiles that have them, shifted copies of any rows in
    decode-like GEMMs whose pack would copy SHIFTED_MIN_PACK_BYTES or more), "always" (the widest
    copy each operand allows) or "never" (pack every operand that is not 16-byte aligned, as v1-v8
    did). One kernel reads both at the narrower width.
    """
    if narrow not in NARROW_MODES:
        raise ScheduleError(f"narrow must be one of {', '.join(NARROW_MODES)} (got {narrow!r})")
    if spec.any_rows:  # such a kernel has one width: it reads any row of unit column stride in place,
        # and its elementwise operand at any strides
        return tuple(0 if op.on_host or not (op.rows_contiguous or name == spec.elementwise)
                     else 16 for name, op in (("A", a), ("B", b)))  # type: ignore[return-value]
    if spec.layouts:  # one width; a column-major operand in place where a kernel has its layout
        return tuple(16 if column_major_in_place(op, name, spec) else load_bytes(op, spec, narrow=False)
                     for name, op in (("A", a), ("B", b)))  # type: ignore[return-value]
    widths = tuple(load_bytes(op, spec, narrow=narrow != "never") for op in (a, b))
    if narrow != "auto":
        return widths
    wa, wb = (0 if w == 2 else w for w in widths)
    if 4 in (wa, wb) and (0 in (wa, wb) or intensity(a, b, spec) > W4_MAX_INTENSITY):
        wa, wb = (0 if w == 4 else w for w in (wa, wb))
    if 2 in widths and decode_like(a.shape[0], b.shape[1]):
        if pack_bytes(a, b, (wa, wb), spec.itemsize) >= SHIFTED_MIN_PACK_BYTES:
            return widths
    return wa, wb


PACKED_ROW_BYTES = 128  # packed rows start on an L2 line: a stage's 128-byte A row segment is one line


def padded(cols: int, spec: KernelSpec) -> int:
    """Row length (elements) of a packed or host-padded copy: ``cols`` rounded up to whole 128-byte
    lines, so every row the mainloop copies starts on a line (rounded to 16 bytes only, most rows
    straddled two lines per stage; LOG.md v10b)."""
    per_line = PACKED_ROW_BYTES // spec.itemsize
    return -(-cols // per_line) * per_line


def leading_dim(op: Operand, name: str, layout: str, width: int, spec: KernelSpec) -> int:
    """The stride (elements) between the rows the main kernel reads operand ``name`` ("A" or "B") by,
    read with copy width ``width`` under ``layout``: a packed or host copy's padded rows (``width``
    0, or on the host), a column-major operand's column stride where read so in place, else its row
    stride."""
    if op.on_host or width == 0:
        return padded(op.shape[1], spec)
    return op.strides[1] if column_major(layout, name) else op.strides[0]


def contiguous_b_row_bytes(k: int, n: int, spec: KernelSpec) -> int:
    """The bytes between the rows ``spec``'s main kernel reads a contiguous row-major k x n B by, at
    a 16-byte-aligned address (what auto and the CLI assume): n elements, or a packed copy's padded
    rows where n elements are no whole 16-byte chunks."""
    b = Operand(None, "cuda", 0, (k, n), (n, 1), "")
    return (padded(n, spec) if needs_pack(b, spec) else n) * spec.itemsize
