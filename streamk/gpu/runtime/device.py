"""The CUDA device as streamk uses it: primary context, modules, occupancy, memory and setup work.

One ``Device`` per ordinal (``device(ordinal)``; NumPy inputs run on ``STREAMK_DEVICE``, default
0). It shares the primary context with PyTorch and CuPy, so their pointers and streams work
unchanged. Every driver call a Device makes runs inside ``entered()``: its context is made current
for the call and the caller's restored after it, so streamk never leaves another device's context
current behind a caller's back (that broke one process driving two GPUs). Kernel modules are compiled (or read from the cache) for the device's own arch at
first use; everything read from a module (functions, shared-memory sizes, occupancy) is read once.

Setup work (allocations, zeroing, table uploads) runs on a private non-blocking stream in relaxed
stream-capture mode, as PyTorch's caching allocator does, so it is legal while the caller's
stream is being captured into a CUDA graph and never synchronizes the caller's streams.
"""

from __future__ import annotations

import ctypes
import threading
from contextlib import contextmanager
from typing import Iterator

import numpy as np

from ...env import device_ordinal
from ...errors import CudaError, InputError
from ...target import Target, TargetTile, for_arch
from ..build import compile_source, compile_unit_of
from ..errors import check

_LOCK = threading.Lock()
_DEVICES: dict[int, Device] = {}


def driver():
    from cuda.bindings import driver as drv

    return drv


def arch_for(major: int, minor: int) -> str:
    """NVRTC target for a compute capability: Hopper gets sm_90a, others their own sm_XY."""
    return "sm_90a" if (major, minor) == (9, 0) else f"sm_{major}{minor}"


def _source_of(name: str) -> str:
    source = compile_unit_of(name)
    if source is None:
        raise KeyError(f"no shipped kernel named {name!r}")
    return source


class Device:
    def __init__(self, ordinal: int) -> None:
        drv = driver()
        check(drv.cuInit(0), "cuInit")
        self.ordinal = ordinal
        self.handle = check(drv.cuDeviceGet(ordinal), f"cuDeviceGet({ordinal})")
        self.context = check(drv.cuDevicePrimaryCtxRetain(self.handle), "cuDevicePrimaryCtxRetain")
        self._context = int(self.context)
        attr = drv.CUdevice_attribute
        self.sms = self._attr(attr.CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT)
        self.smem_per_sm = self._attr(attr.CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_MULTIPROCESSOR)
        self.smem_per_block = self._attr(attr.CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN)
        self.l2_bytes = self._attr(attr.CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE)
        major = self._attr(attr.CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR)
        minor = self._attr(attr.CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR)
        if major < 8:
            raise CudaError(f"streamk's kernels need compute capability >= 8.0 (device {ordinal} is {major}.{minor})")
        self.arch = arch_for(major, minor)
        name = check(drv.cuDeviceGetName(256, self.handle), "cuDeviceGetName")
        self.name = name.split(b"\0")[0].decode()
        self._modules: dict[str, object] = {}
        self._functions: dict[str, object] = {}
        self._smem_limit: dict[str, int] = {}
        self._smem: dict[str, int] = {}
        self._occupancy: dict[tuple, int] = {}
        self._target: Target | None = None
        self.lock = threading.RLock()  # module loads, lanes and the plan cache of this device
        with self.entered():
            self._setup_stream = check(drv.cuStreamCreate(drv.CUstream_flags.CU_STREAM_NON_BLOCKING),
                                       "cuStreamCreate")

    @contextmanager
    def entered(self) -> Iterator[None]:
        """This device's context current for the block, the caller's restored after it."""
        drv = driver()
        err, prev = drv.cuCtxGetCurrent()
        switch = int(prev) != self._context
        if switch:
            check(drv.cuCtxSetCurrent(self.context), f"cuCtxSetCurrent(device {self.ordinal})")
        try:
            yield
        finally:
            if switch:
                drv.cuCtxSetCurrent(prev)

    def is_current(self) -> bool:
        """Whether this device's context is the calling thread's current one."""
        err, ctx = driver().cuCtxGetCurrent()
        return int(err) == 0 and int(ctx) == self._context

    def refuse_foreign_stream(self, stream: int) -> None:
        """InputError where ``stream`` belongs to another device's context: this device's kernels
        cannot run there. The NULL, legacy and per-thread handles name the current context's, which
        streamk enters; an unknown handle is left to the launch to refuse."""
        if stream in (0, 1, 2):
            return
        err, ctx = driver().cuStreamGetCtx(stream)
        if int(err) == 0 and int(ctx) != self._context:
            raise InputError(f"stream {stream:#x} belongs to another device than cuda:{self.ordinal}, where this "
                             f"GEMM's operands are: pass a stream of cuda:{self.ordinal}")

    def _attr(self, attribute) -> int:
        return int(check(driver().cuDeviceGetAttribute(attribute, self.handle), f"cuDeviceGetAttribute({attribute.name})"))

    # ---- kernels -------------------------------------------------------------------------
    def _module(self, name: str):
        source = _source_of(name)
        if source not in self._modules:
            cubin = compile_source(source, self.arch)
            with self.lock, self.setup():
                self._modules[source] = check(driver().cuModuleLoadData(cubin.image), f"cuModuleLoadData({source})")
        return self._modules[source]

    def function(self, name: str, dynamic_smem: int = 0):
        """The CUfunction ``name``, its module loaded (and compiled) on first use; its dynamic
        shared-memory limit raised to ``dynamic_smem`` when that is over the default 48 KB."""
        drv = driver()
        with self.lock, self.entered():
            if name not in self._functions:
                self._functions[name] = check(drv.cuModuleGetFunction(self._module(name), name.encode()),
                                              f"cuModuleGetFunction({name})")
                self._smem_limit[name] = 48 * 1024
            fn = self._functions[name]
            if dynamic_smem > self._smem_limit[name]:
                attr = drv.CUfunction_attribute.CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES
                check(drv.cuFuncSetAttribute(fn, attr, dynamic_smem), f"cuFuncSetAttribute({name}, {dynamic_smem} B)")
                self._smem_limit[name] = dynamic_smem
        return fn

    def smem_bytes(self, name: str) -> int:
        """Dynamic shared memory of entry point ``name``: its module's ``<name>_smem`` constant
        (read once)."""
        if name not in self._smem:
            self._smem[name] = int.from_bytes(self.read_global(name, f"{name}_smem", 4), "little", signed=True)
        return self._smem[name]

    def read_global(self, name: str, symbol: str, nbytes: int) -> bytes:
        """``nbytes`` of the device global ``symbol`` in entry point ``name``'s module (the ``_smem``
        constants, probe traces); synchronous, so never on a GEMM's call path."""
        self.function(name)
        with self.setup() as stream:
            ptr, size = check(driver().cuModuleGetGlobal(self._module(name), symbol.encode()),
                              f"cuModuleGetGlobal({symbol})")
            out = ctypes.create_string_buffer(min(int(nbytes), int(size)))
            check(driver().cuMemcpyDtoHAsync(ctypes.addressof(out), ptr, len(out), stream), f"cuMemcpyDtoH({symbol})")
        return out.raw

    def block_size(self, name: str) -> int:
        """Threads per block of ``name``: its __launch_bounds__, read from the module."""
        attr = driver().CUfunction_attribute.CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK
        fn = self.function(name)
        with self.entered():
            return int(check(driver().cuFuncGetAttribute(attr, fn), f"cuFuncGetAttribute({name})"))

    def occupancy(self, name: str, threads: int, dynamic_smem: int) -> int:
        """Resident blocks per SM of ``name`` from the occupancy API."""
        key = (name, threads, dynamic_smem)
        if key not in self._occupancy:
            fn = self.function(name, dynamic_smem)
            with self.entered():
                blocks = check(driver().cuOccupancyMaxActiveBlocksPerMultiprocessor(fn, threads, dynamic_smem),
                           f"cuOccupancyMaxActiveBlocksPerMultiprocessor({name})")
            self._occupancy[key] = int(blocks)
        return self._occupancy[key]

    def cluster_residency(self, name: str, threads: int, dynamic_smem: int, cluster: int) -> int:
        """Resident CTAs of ``name`` on the whole device when launched in clusters of ``cluster``
        (the occupancy API's clusters times their size: a cluster's CTAs share one GPC)."""
        from .launch import launch_config

        key = (name, threads, dynamic_smem, cluster)
        if key not in self._occupancy:
            config = launch_config(1, 1, threads, dynamic_smem, False, cluster)
            config.gridDimX = cluster
            fn = self.function(name, dynamic_smem)
            with self.entered():
                clusters = check(driver().cuOccupancyMaxActiveClusters(fn, config),
                                 f"cuOccupancyMaxActiveClusters({name}, {cluster})")
            self._occupancy[key] = int(clusters) * cluster
        return self._occupancy[key]

    def one_per_sm_smem(self, name: str, threads: int, dynamic_smem: int) -> int:
        """Dynamic shared memory to ask for so that only one block of ``name`` fits on an SM (half
        of an SM's shared memory; at least ``dynamic_smem``), or ``dynamic_smem`` where the
        occupancy API still gives more than one or the block limit forbids it."""
        want = max(dynamic_smem, self.smem_per_sm // 2)
        if want > self.smem_per_block or self.occupancy(name, threads, want) != 1:
            return dynamic_smem
        return want

    @property
    def target(self) -> Target:
        """What the planners see of this device: the preset of its arch with its SM count, or, for an
        arch with no preset, every main kernel's residency from the occupancy API (compiling them all once)."""
        if self._target is None:
            self._target = for_arch(self.arch, self.sms, self.name) or self._occupancy_target()
        return self._target

    def _occupancy_target(self) -> Target:
        from ..catalogue import SPECS, tile_specs

        tiles = []
        for dtype in SPECS:
            for tile, spec in tile_specs(dtype).items():
                smem = self.smem_bytes(spec.main)
                ctas = self.occupancy(spec.main, self.block_size(spec.main), smem) if smem <= self.smem_per_block else 0
                if ctas:
                    tiles.append(TargetTile(dtype, tile, ctas))
        return Target(self.name, self.arch, self.sms, tuple(tiles))

    # ---- setup work ----------------------------------------------------------------------
    @contextmanager
    def setup(self) -> Iterator[object]:
        """Yield the private setup stream with this device's context current and this thread in
        relaxed capture mode; synchronize that stream (only it) at the end."""
        drv = driver()
        with self.entered():
            mode = check(drv.cuThreadExchangeStreamCaptureMode(
                drv.CUstreamCaptureMode.CU_STREAM_CAPTURE_MODE_RELAXED), "cuThreadExchangeStreamCaptureMode")
            try:
                yield self._setup_stream
                check(drv.cuStreamSynchronize(self._setup_stream), "cuStreamSynchronize(setup)")
            finally:
                drv.cuThreadExchangeStreamCaptureMode(mode)

    def alloc(self, nbytes: int, *, zero: bool = False) -> Buffer:
        """A device allocation of at least ``nbytes`` (16), zeroed if asked; freed with the Buffer."""
        drv = driver()
        size = max(int(nbytes), 16)
        with self.setup() as stream:
            ptr = int(check(drv.cuMemAlloc(size), f"cuMemAlloc({size})"))
            if zero:
                check(drv.cuMemsetD8Async(ptr, 0, size, stream), "cuMemsetD8Async")
        return Buffer(self, ptr, size)

    def upload(self, array: np.ndarray) -> Buffer:
        """A device copy of ``array`` (complete when this returns)."""
        host = np.ascontiguousarray(array)
        size = max(host.nbytes, 16)
        with self.setup() as stream:
            buf = Buffer(self, int(check(driver().cuMemAlloc(size), f"cuMemAlloc({size})")), size)
            if host.nbytes:
                check(driver().cuMemcpyHtoDAsync(buf.ptr, host.ctypes.data, host.nbytes, stream), "cuMemcpyHtoD")
        return buf

    def synchronize(self) -> None:
        with self.entered():
            check(driver().cuCtxSynchronize(), "cuCtxSynchronize")


class Buffer:
    """Device memory owned by one object (a lane's buffer, a plan's table); freed when dropped.
    Whoever drops a Buffer a launch may still use keeps it alive until that launch is done
    (``streamk.gpu.runtime.lanes``)."""

    __slots__ = ("device", "ptr", "nbytes")

    def __init__(self, device: Device, ptr: int, nbytes: int) -> None:
        self.device, self.ptr, self.nbytes = device, ptr, nbytes

    def __del__(self) -> None:
        if self.ptr:
            try:
                # The collector may drop a Buffer while this thread captures a CUDA graph, in whose
                # default (global) mode cuMemFree is refused and ends the capture: free it in
                # relaxed mode, as allocations during a capture are made (Device.setup).
                drv = driver()
                with self.device.entered():
                    _, mode = drv.cuThreadExchangeStreamCaptureMode(
                        drv.CUstreamCaptureMode.CU_STREAM_CAPTURE_MODE_RELAXED)
                    try:
                        drv.cuMemFree(self.ptr)
                    finally:
                        drv.cuThreadExchangeStreamCaptureMode(mode)
            except Exception:  # noqa: BLE001 - interpreter shutdown: the driver frees it with the context
                pass
            self.ptr = 0


def device(ordinal: int | None = None) -> Device:
    """The Device of ``ordinal`` (default ``STREAMK_DEVICE`` or 0); CudaError naming what is
    missing where there is no usable GPU. The calling thread's current context is left as it was."""
    if ordinal is None:
        ordinal = device_ordinal()
    dev = _DEVICES.get(ordinal)
    if dev is None:
        with _LOCK:
            dev = _DEVICES.get(ordinal)
            if dev is None:
                ok, why = available(ordinal)
                if not ok:
                    raise CudaError(f"no usable GPU: {why}")
                dev = _DEVICES[ordinal] = Device(ordinal)
    return dev


def current() -> Device:
    """The device NumPy inputs run on (``STREAMK_DEVICE``, default 0)."""
    return device()


def available(ordinal: int | None = None) -> tuple[bool, str]:
    """(True, device name) when a CUDA device and its driver can be used, else (False, why not)."""
    if ordinal is None:
        ordinal = device_ordinal()
    try:
        from cuda.bindings import driver as drv
    except ImportError as exc:
        return False, f"cuda-bindings is not installed ({exc}); pip install 'streamk[gpu]'"
    try:
        err, = drv.cuInit(0)
    except RuntimeError as exc:  # cuda.pathfinder's DynamicLibNotFoundError: no libcuda
        return False, f"no CUDA driver (libcuda) on this machine: {exc}"
    if int(err) != 0:
        return False, f"cuInit failed with {err.name}"
    err, count = drv.cuDeviceGetCount()
    if int(err) != 0 or count == 0:
        return False, "no CUDA device found"
    err, handle = drv.cuDeviceGet(ordinal)
    if int(err) != 0:
        return False, f"cuDeviceGet({ordinal}) failed with {err.name} ({count} device(s) present)"
    err, major = drv.cuDeviceGetAttribute(
        drv.CUdevice_attribute.CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, handle)
    if int(err) != 0 or major < 8:
        return False, f"device {ordinal} has compute capability {major}.x; the kernels need sm_80 or later"
    err, name = drv.cuDeviceGetName(256, handle)
    return True, name.split(b"\0")[0].decode()
