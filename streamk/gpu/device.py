"""The CUDA device as streamk uses it: primary context, modules, occupancy and memory.

One ``Device`` per process (``current()``), on ordinal ``STREAMK_DEVICE`` (default 0). It shares
the primary context with PyTorch and CuPy, so their pointers and streams work unchanged. Kernel
modules are compiled (or read from the cache) for the device's own arch at first use.
"""

from __future__ import annotations

import ctypes
import os
import threading
from dataclasses import dataclass

from ..shapes import Machine
from .build import compile_source, compile_unit_of
from .errors import check

_LOCK = threading.Lock()
_CURRENT: Device | None = None
TABLE_CACHE_ENTRIES = 64  # uploaded schedule tables kept per device (each a few KB)


def driver():
    from cuda.bindings import driver as drv

    return drv


def arch_for(major: int, minor: int) -> str:
    """NVRTC target for a compute capability: Hopper gets sm_90a, others their own sm_XY."""
    return "sm_90a" if (major, minor) == (9, 0) else f"sm_{major}{minor}"


@dataclass(eq=False)
class Buffer:
    """A device allocation (workspace, flags, packed operands, a schedule table). Every prepared
    launch holds the Buffers its pointers lie in, so growing a scratch buffer or evicting a table
    never frees memory a launch that is still held can use: a Buffer nothing holds any more puts
    its pointer on the device's ``retired`` list, freed at the next synchronized growth."""

    ptr: int = 0
    nbytes: int = 0
    retired: list | None = None

    def __del__(self) -> None:
        if self.ptr and self.retired is not None:
            self.retired.append(self.ptr)


class Device:
    def __init__(self, ordinal: int = 0) -> None:
        drv = driver()
        check(drv.cuInit(0), "cuInit")
        self.handle = check(drv.cuDeviceGet(ordinal), f"cuDeviceGet({ordinal})")
        self.context = check(drv.cuDevicePrimaryCtxRetain(self.handle), "cuDevicePrimaryCtxRetain")
        self.activate()
        attr = drv.CUdevice_attribute
        self.sms = self._attr(attr.CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT)
        self.smem_per_sm = self._attr(attr.CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_MULTIPROCESSOR)
        self.smem_per_block = self._attr(attr.CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN)
        major = self._attr(attr.CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR)
        minor = self._attr(attr.CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR)
        if major < 8:
            raise RuntimeError(f"streamk's kernels need compute capability >= 8.0 (got {major}.{minor})")
        self.arch = arch_for(major, minor)
        name = check(drv.cuDeviceGetName(256, self.handle), "cuDeviceGetName")
        self.name = name.split(b"\0")[0].decode()
        self._modules: dict[str, object] = {}
        self._functions: dict[str, object] = {}
        self._smem_limit: dict[str, int] = {}
        self._occupancy: dict[tuple[str, int, int], int] = {}
        self._buffers: dict[str, Buffer] = {}
        self._tables: dict[bytes, tuple[Buffer, ...]] = {}
        self._retired: list[int] = []  # pointers of Buffers nothing holds (Buffer.__del__)
        self._state = self.alloc(8)  # epoch, done counter (schedule_table.cuh StateWord)
        check(drv.cuMemsetD32(self._state, 1, 1), "cuMemsetD32(epoch)")
        check(drv.cuMemsetD32(self._state + 4, 0, 1), "cuMemsetD32(done)")

    def activate(self) -> None:
        check(driver().cuCtxSetCurrent(self.context), "cuCtxSetCurrent")

    def _attr(self, attribute) -> int:
        return int(check(driver().cuDeviceGetAttribute(attribute, self.handle), f"cuDeviceGetAttribute({attribute.name})"))

    @property
    def state(self) -> int:
        return self._state

    # ---- kernels -------------------------------------------------------------------------
    def function(self, name: str, dynamic_smem: int = 0):
        """The CUfunction ``name``, its module loaded (and compiled) on first use; its dynamic
        shared-memory limit raised to ``dynamic_smem`` when that is over the default 48 KB."""
        drv = driver()
        if name not in self._functions:
            source = compile_unit_of(name)
            if source is None:
                raise KeyError(f"no shipped kernel named {name!r}")
            if source not in self._modules:
                cubin = compile_source(source, self.arch)
                self._modules[source] = check(drv.cuModuleLoadData(cubin.image), f"cuModuleLoadData({source})")
            fn = check(drv.cuModuleGetFunction(self._modules[source], name.encode()),
                       f"cuModuleGetFunction({name})")
            self._functions[name] = fn
            self._smem_limit[name] = 48 * 1024
        fn = self._functions[name]
        if dynamic_smem > self._smem_limit[name]:
            attr = drv.CUfunction_attribute.CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES
            check(drv.cuFuncSetAttribute(fn, attr, dynamic_smem), f"cuFuncSetAttribute({name}, {dynamic_smem} B)")
            self._smem_limit[name] = dynamic_smem
        return fn

    def smem_bytes(self, name: str) -> int:
        """Dynamic shared memory of entry point ``name``: its module's ``<name>_smem`` constant."""
        return int.from_bytes(self.read_global(name, f"{name}_smem", 4), "little", signed=True)

    def read_global(self, name: str, symbol: str, nbytes: int) -> bytes:
        """``nbytes`` of the device global ``symbol`` in entry point ``name``'s module (the ``_smem``
        constants, probe traces)."""
        self.function(name)
        source = compile_unit_of(name)
        ptr, size = check(driver().cuModuleGetGlobal(self._modules[source], symbol.encode()),
                          f"cuModuleGetGlobal({symbol})")
        out = ctypes.create_string_buffer(min(int(nbytes), int(size)))
        check(driver().cuMemcpyDtoH(ctypes.addressof(out), ptr, len(out)), f"cuMemcpyDtoH({symbol})")
        return out.raw

    def block_size(self, name: str) -> int:
        """Threads per block of ``name``: its __launch_bounds__, read from the module."""
        attr = driver().CUfunction_attribute.CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK
        return int(check(driver().cuFuncGetAttribute(attr, self.function(name)), f"cuFuncGetAttribute({name})"))

    def occupancy(self, name: str, threads: int, dynamic_smem: int) -> int:
        """Resident blocks per SM of ``name`` from the occupancy API."""
        key = (name, threads, dynamic_smem)
        if key not in self._occupancy:
            fn = self.function(name, dynamic_smem)
            blocks = check(driver().cuOccupancyMaxActiveBlocksPerMultiprocessor(fn, threads, dynamic_smem),
                           f"cuOccupancyMaxActiveBlocksPerMultiprocessor({name})")
            self._occupancy[key] = int(blocks)
        return self._occupancy[key]

    def one_per_sm_smem(self, name: str, threads: int, dynamic_smem: int) -> int:
        """Dynamic shared memory to ask for so that only one block of ``name`` fits on an SM (half
        of an SM's shared memory; at least ``dynamic_smem``), or ``dynamic_smem`` where the
        occupancy API still gives more than one or the block limit forbids it."""
        want = max(dynamic_smem, self.smem_per_sm // 2)
        if want > self.smem_per_block or self.occupancy(name, threads, want) != 1:
            return dynamic_smem
        return want

    def machine(self, name: str, threads: int, dynamic_smem: int) -> Machine:
        return Machine(self.sms, max(1, self.occupancy(name, threads, dynamic_smem)))

    # ---- memory --------------------------------------------------------------------------
    def alloc(self, nbytes: int) -> int:
        return int(check(driver().cuMemAlloc(max(int(nbytes), 16)), f"cuMemAlloc({nbytes})"))

    def scratch(self, key: str, nbytes: int, *, zero: bool = False) -> Buffer:
        """The named buffer of at least ``nbytes``: a new (zeroed if ``zero``) one, at least twice
        as large, when the current one is too small; launches holding the old one keep it."""
        buf = self._buffers.get(key)
        if buf is None or buf.nbytes < nbytes:
            size = max(int(nbytes), 2 * buf.nbytes if buf else 0, 4096)
            buf = self._buffers[key] = self._new_buffer(size)
            if zero:
                check(driver().cuMemsetD8(buf.ptr, 0, size), "cuMemsetD8")
        return buf

    def _new_buffer(self, nbytes: int) -> Buffer:
        if self._retired:  # free what nothing holds; a launch in flight may still read it
            drv = driver()
            check(drv.cuCtxSynchronize(), "cuCtxSynchronize")
            while self._retired:
                check(drv.cuMemFree(self._retired.pop()), "cuMemFree")
        return Buffer(self.alloc(nbytes), int(nbytes), self._retired)

    def upload(self, arrays) -> tuple[Buffer, ...]:
        """Device copies of int32 arrays, cached by content (schedule tables repeat)."""
        key = b"".join(a.tobytes() + len(a.tobytes()).to_bytes(8, "little") for a in arrays)
        if key in self._tables:
            return self._tables[key]
        if len(self._tables) >= TABLE_CACHE_ENTRIES:
            self._tables.clear()  # launches that hold a table keep it
        bufs = []
        for a in arrays:
            buf = self._new_buffer(max(a.nbytes, 16))
            if a.nbytes:
                check(driver().cuMemcpyHtoD(buf.ptr, a.ctypes.data, a.nbytes), "cuMemcpyHtoD(table)")
            bufs.append(buf)
        self._tables[key] = tuple(bufs)
        return self._tables[key]

    def copy_in(self, ptr: int, host) -> None:
        check(driver().cuMemcpyHtoD(ptr, host.ctypes.data, host.nbytes), "cuMemcpyHtoD")

    def copy_out(self, host, ptr: int) -> None:
        check(driver().cuMemcpyDtoH(host.ctypes.data, ptr, host.nbytes), "cuMemcpyDtoH")

    def synchronize(self) -> None:
        check(driver().cuCtxSynchronize(), "cuCtxSynchronize")


def current() -> Device:
    global _CURRENT
    with _LOCK:
        if _CURRENT is None:
            _CURRENT = Device(int(os.environ.get("STREAMK_DEVICE", "0")))
        else:
            _CURRENT.activate()
        return _CURRENT


def available() -> tuple[bool, str]:
    """(True, device name) when a CUDA device and its driver can be used, else (False, why not)."""
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
    ordinal = int(os.environ.get("STREAMK_DEVICE", "0"))
    err, device = drv.cuDeviceGet(ordinal)
    if int(err) != 0:
        return False, f"cuDeviceGet({ordinal}) failed with {err.name}"
    err, major = drv.cuDeviceGetAttribute(
        drv.CUdevice_attribute.CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, device)
    if int(err) != 0 or major < 8:
        return False, f"device {ordinal} has compute capability {major}.x; the kernels need sm_80 or later"
    err, name = drv.cuDeviceGetName(256, device)
    return True, name.split(b"\0")[0].decode()
