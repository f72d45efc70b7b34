"""NVRTC: compile the kernels' compile units to a CUBIN for one arch, with an on-disk cache.

A compile unit (``catalogue.source.units``) is source generated from the catalogue: the headers
under ``kernels/`` and one ``extern "C"`` entry point per variant. The kernels include no CUDA
header (their few PTX instructions are inline asm, 16-bit values are raw bits), so NVRTC needs no
include path but ``kernels/`` on any version: 13.0 on the GPU machines and 13.5 from the pip wheel
give the same result. Cache key: sha256 of the unit's source, every header, the options, the arch
and NVRTC's version; files are written to a temp name and ``os.replace``d, so concurrent builders
never see half a cubin. ``STREAMK_CACHE_DIR`` moves the cache (default ``~/.cache/streamk``);
``STREAMK_NO_CACHE=1`` always recompiles; ``STREAMK_TRACE=1`` builds the probe's phase trace
(kernels/common/trace.cuh, benchmarks/gpu_probe.py --trace; part of the key).
"""

from __future__ import annotations

import hashlib
import os
import re
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

from .. import env
from .errors import check
from .catalogue.source import unit_source, units
from .catalogue.variants import BY_NAME, MAINLOOPS

KERNEL_DIR = Path(__file__).with_name("kernels")
UNITS: dict[str, tuple[str, ...]] = {unit: tuple(v.name for v in vs) for unit, vs in units().items()}


def units_for(arch: str) -> dict[str, tuple[str, ...]]:
    """The compile units (and their entries) built for ``arch``: sm90 mainloops only for sm_90a."""
    return {unit: tuple(v.name for v in vs) for unit, vs in units(arch).items()}
BASE_OPTIONS = ("-std=c++17", "--ptxas-options=--verbose", "-default-device", "--extra-device-vectorization")


def compile_unit_of(entry: str) -> str | None:
    """The compile unit holding entry point ``entry``, or None for a name the registry lacks."""
    variant = BY_NAME.get(entry)
    return variant.unit if variant else None


def options() -> tuple[str, ...]:
    """NVRTC options; ``STREAMK_TRACE=1`` adds the probe's trace (a documented debug switch)."""
    return BASE_OPTIONS + (("-DSTREAMK_TRACE=1",) if os.environ.get("STREAMK_TRACE") == "1" else ())

_PTXAS_ENTRY = re.compile(r"Compiling entry function '(\w+)' for '(\w+)'")
_PTXAS_USAGE = re.compile(r"Used (\d+) registers")
_PTXAS_SPILL = re.compile(r"(\d+) bytes spill stores, (\d+) bytes spill loads")


@dataclass(frozen=True, slots=True)
class Cubin:
    """One compiled source: the CUBIN bytes and what ptxas reported per entry point."""

    source: str  # the compile unit
    arch: str
    image: bytes
    seconds: float
    cached: bool
    log: str
    registers: dict[str, int] = field(default_factory=dict)
    spills: dict[str, int] = field(default_factory=dict)


def nvrtc_version() -> tuple[int, int]:
    from cuda.bindings import nvrtc

    major, minor = check(nvrtc.nvrtcVersion(), "nvrtcVersion")
    return int(major), int(minor)


def cache_dir() -> Path:
    return env.cache_dir()  # created; SettingError naming STREAMK_CACHE_DIR where unusable


def _headers() -> dict[str, bytes]:
    return {p.relative_to(KERNEL_DIR).as_posix(): p.read_bytes() for p in sorted(KERNEL_DIR.rglob("*.cuh"))}


def cache_key(source: str, arch: str, opts: tuple[str, ...] | None = None) -> str:
    digest = hashlib.sha256()
    digest.update(unit_source(source).encode())
    for name, text in _headers().items():
        digest.update(name.encode() + b"\0" + text)
    digest.update(repr((opts or options(), arch, nvrtc_version())).encode())
    return digest.hexdigest()


def _parse_ptxas(log: str) -> tuple[dict[str, int], dict[str, int]]:
    registers: dict[str, int] = {}
    spills: dict[str, int] = {}
    entry = None
    for line in log.splitlines():
        if (m := _PTXAS_ENTRY.search(line)):
            entry = m.group(1)
        elif entry and (m := _PTXAS_SPILL.search(line)):
            spills[entry] = int(m.group(1)) + int(m.group(2))
        elif entry and (m := _PTXAS_USAGE.search(line)):
            registers[entry] = int(m.group(1))
    return registers, spills


def compile_source(source: str, arch: str) -> Cubin:
    """Compile one compile unit (``UNITS``) for ``arch`` (``sm_80`` or ``sm_90a``), from the cache
    when it can."""
    if source not in UNITS:
        raise ValueError(f"source must be a compile unit, one of {sorted(UNITS)} (got {source!r})")
    if source not in units_for(arch):
        raise ValueError(f"compile unit {source} is not built for {arch} (it needs one of "
                         f"{', '.join(MAINLOOPS[BY_NAME[UNITS[source][0]].mainloop].archs)})")
    key = cache_key(source, arch)
    path = cache_dir() / f"{source}-{arch}-{key[:24]}.cubin"
    log_path = path.with_suffix(".log")
    start = time.perf_counter()
    if path.exists() and os.environ.get("STREAMK_NO_CACHE") != "1":
        log = log_path.read_text() if log_path.exists() else ""
        return Cubin(source, arch, path.read_bytes(), time.perf_counter() - start, True, log,
                     *_parse_ptxas(log))
    image, log = _nvrtc(source, arch)
    seconds = time.perf_counter() - start
    _write_atomic(path, image)
    _write_atomic(log_path, log.encode())
    return Cubin(source, arch, image, seconds, False, log, *_parse_ptxas(log))


def _nvrtc(source: str, arch: str) -> tuple[bytes, str]:
    from cuda.bindings import nvrtc

    text = unit_source(source).encode()
    prog = check(nvrtc.nvrtcCreateProgram(text, f"{source}.cu".encode(), 0, [], []), "nvrtcCreateProgram")
    try:
        opts = [o.encode() for o in options()] + [f"--gpu-architecture={arch}".encode(),
                                                 f"--include-path={KERNEL_DIR}".encode()]
        result = nvrtc.nvrtcCompileProgram(prog, len(opts), opts)
        log = _program_log(prog)
        check(result, f"nvrtcCompileProgram({source}, {arch})", log=log)
        size = check(nvrtc.nvrtcGetCUBINSize(prog), "nvrtcGetCUBINSize")
        if size == 0:
            raise ValueError(f"NVRTC gave no CUBIN for {source} at {arch}: the arch must be a real one "
                             f"such as sm_80 or sm_90a, not compute_XX")
        image = b" " * size
        check(nvrtc.nvrtcGetCUBIN(prog, image), "nvrtcGetCUBIN")
        return image, log
    finally:
        nvrtc.nvrtcDestroyProgram(prog)


def _program_log(prog) -> str:
    from cuda.bindings import nvrtc

    size = check(nvrtc.nvrtcGetProgramLogSize(prog), "nvrtcGetProgramLogSize")
    buf = b" " * size
    check(nvrtc.nvrtcGetProgramLog(prog, buf), "nvrtcGetProgramLog")
    return buf.rstrip(b"\0 ").decode(errors="replace")


def _write_atomic(path: Path, data: bytes) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=path.name + ".")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
