"""Kernel parameter blocks (ctypes mirrors of schedule_table.cuh) and the launch of one step.

A GEMM enqueues a few steps: the pack pass for operands no copy width reads in place, the atomic
policy's prescale, the table-driven main kernel, the separate-reduce pass. Everything is
device-side and stream-ordered, so it can be timed with CUDA events or captured in a CUDA graph
(the epoch lives in device memory, so graph replays get fresh epochs).
"""

from __future__ import annotations

import ctypes
from dataclasses import dataclass, field

from ...errors import CudaError

_P = ctypes.c_void_p
_LL = ctypes.c_longlong


class OperandParams(ctypes.Structure):
    """A, B and C as the mainloops read them; the column strides of A and B default to 1 (the only
    other value any kernel reads is the dot tiles' elementwise operand's)."""

    _fields_ = [("a", _P), ("b", _P), ("c", _P), ("lda", _LL), ("ldb", _LL), ("c_rs", _LL), ("c_cs", _LL),
                ("alpha", ctypes.c_double), ("beta", ctypes.c_double), ("a_cs", _LL), ("b_cs", _LL),
                ("c_type", ctypes.c_int), ("c_pad", ctypes.c_int)]

    def __init__(self, **fields) -> None:
        super().__init__(**{"a_cs": 1, "b_cs": 1, **fields})


# OperandParams.c_type: C's element type (kernels/common/c_elem.cuh CType)
C_ACC, C_F16, C_BF16 = 0, 1, 2


def c_type(c_dtype: str, acc_dtype: str) -> int:
    """The c_type of a C of ``c_dtype`` written by kernels accumulating in ``acc_dtype`` (C holds
    that dtype, or FP16 / BF16)."""
    return C_ACC if c_dtype == acc_dtype else {"float16": C_F16, "bfloat16": C_BF16}[c_dtype]


class TableParams(ctypes.Structure):
    _fields_ = [("cta_offsets", _P), ("units", _P), ("reads", _P), ("waits", _P), ("items", _P),
                ("workspace", _P), ("flags", _P), ("counters", _P), ("state", _P),
                ("m", ctypes.c_int), ("n", ctypes.c_int), ("k", ctypes.c_int), ("table_version", ctypes.c_int)]


class GemmParams(ctypes.Structure):
    """The operands' description, then the table's (184 bytes, kernels/common/schedule_table.cuh).
    Built from the flat field names: ``GemmParams(a=..., m=..., ...)`` or
    ``gemm_params(...)``; ``ops=`` and ``table=`` take the two halves whole."""

    _fields_ = [("ops", OperandParams), ("table", TableParams)]

    def __init__(self, ops: OperandParams | None = None, table: TableParams | None = None, **fields) -> None:
        names = {name for name, _ in OperandParams._fields_} | {name for name, _ in TableParams._fields_}
        if unknown := set(fields) - names:
            raise TypeError(f"GemmParams fields must be among {sorted(names)} (got {sorted(unknown)})")
        ops = ops or OperandParams(**{k: v for k, v in fields.items() if k in dict(OperandParams._fields_)})
        table = table or TableParams(**{k: v for k, v in fields.items() if k in dict(TableParams._fields_)})
        super().__init__(ops, table)


def gemm_params(**fields) -> GemmParams:
    """The kernels' parameter block from the flat field names (a, b, c, lda, ldb, c_rs, c_cs, alpha,
    beta, a_cs, b_cs; cta_offsets, units, reads, waits, items, workspace, flags, counters, state, m, n, k,
    table_version); unnamed fields are 0 (a_cs and b_cs: 1)."""
    return GemmParams(**fields)


class TmaParams(ctypes.Structure):
    """The sm90 mainloop's parameter block (kernels/sm90/tma_wgmma.cuh TmaParams): the GemmParams,
    the CTAs' share words (clusters.py; null without clusters), whether C is
    written through its TMA map, then A's, B's and C's TMA maps at 64-byte offsets (tma.encode
    writes them)."""

    _fields_ = [("gemm", GemmParams), ("shares", _P), ("c_store", ctypes.c_int), ("_pad", ctypes.c_ubyte * 60),
                ("a", ctypes.c_ubyte * 128), ("b", ctypes.c_ubyte * 128), ("c", ctypes.c_ubyte * 128)]


assert TmaParams.shares.offset == 184 and TmaParams.c_store.offset == 192 and TmaParams.a.offset == 256
assert TmaParams.b.offset == 384 and TmaParams.c.offset == 512 and ctypes.sizeof(TmaParams) == 640


class PackParams(ctypes.Structure):
    _fields_ = [("src", _P), ("dst", _P), ("rs", _LL), ("cs", _LL), ("rows", _LL), ("cols", _LL), ("ld", _LL)]


class PackPair(ctypes.Structure):
    _fields_ = [("a", PackParams), ("b", PackParams)]


@dataclass
class Step:
    """One kernel of a GEMM: function, grid (x, and y for the sliced reduce pass), block, dynamic
    shared memory; ``pdl``: launched with programmatic stream serialization, so it may start
    while the step before it finishes (the kernel waits for it: ptx.cuh pdl_wait); ``packs``: its
    parameter block is the PackPair, not the GemmParams; ``tma``: the TmaParams; ``cluster``: CTAs
    per cluster (blockIdx.x ci .. ci + c - 1 together: 2, 3 or 4, clusters.py)."""

    name: str
    function: object
    grid: int
    block: int
    smem: int
    grid_y: int = 1
    pdl: bool = False
    packs: bool = False
    tma: bool = False  # its parameter block is the TmaParams around the GemmParams
    cluster: int = 1
    _config: object = field(default=None, repr=False)

    def enqueue(self, argv: int, stream: int) -> None:
        """Launch with the parameter block whose pointer array lies at ``argv``."""
        from cuda.bindings import driver

        if self.pdl or self.cluster > 1:
            config = self.launch_config()
            config.hStream = stream
            err, = driver.cuLaunchKernelEx(config, self.function, argv, 0)
        else:
            err, = driver.cuLaunchKernel(self.function, self.grid, self.grid_y, 1, self.block, 1, 1, self.smem,
                                         stream, argv, 0)
        if err:
            raise CudaError(f"cuLaunchKernel({self.name}, grid=({self.grid}, {self.grid_y}), block={self.block}, "
                            f"smem={self.smem}{', PDL' if self.pdl else ''}"
                            f"{f', clusters of {self.cluster}' if self.cluster > 1 else ''}) failed with {err.name}")

    def launch_config(self):
        """The cuLaunchKernelEx configuration (its attributes: PDL, the cluster's size); made once."""
        if self._config is None:
            self._config = launch_config(self.grid, self.grid_y, self.block, self.smem, self.pdl, self.cluster)
        return self._config


def launch_config(grid: int, grid_y: int, block: int, smem: int, pdl: bool, cluster: int):
    """A CUlaunchConfig (no stream yet) with programmatic stream serialization where ``pdl`` and
    clusters of ``cluster`` CTAs along x where it is above 1."""
    from cuda.bindings import driver

    attrs = []
    if pdl:
        attr = driver.CUlaunchAttribute()
        attr.id = driver.CUlaunchAttributeID.CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION
        attr.value.programmaticStreamSerializationAllowed = 1
        attrs.append(attr)
    if cluster > 1:
        attr = driver.CUlaunchAttribute()
        attr.id = driver.CUlaunchAttributeID.CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION
        attr.value.clusterDim.x, attr.value.clusterDim.y, attr.value.clusterDim.z = cluster, 1, 1
        attrs.append(attr)
    config = driver.CUlaunchConfig()
    config.gridDimX, config.gridDimY, config.gridDimZ = grid, grid_y, 1
    config.blockDimX, config.blockDimY, config.blockDimZ = block, 1, 1
    config.sharedMemBytes = smem
    config.attrs = attrs
    config.numAttrs = len(attrs)
    return config
