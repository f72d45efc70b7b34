"""NVRTC: compile the shipped kernels to a CUBIN for one arch, with an on-disk cache.

The kernels include no CUDA header (their few PTX instructions are inline asm, 16-bit values
are raw bits), so NVRTC needs no include path on any version: 13.0 on the GPU machines and
13.5 from the pip wheel give the same result. Cache key: sha256 of every kernel source and
header, the options, the arch and NVRTC's version; files are written to a temp name and
``os.replace``d, so concurrent builders never see half a cubin. ``STREAMK_CACHE_DIR`` moves the
cache (default ``~/.cache/streamk``); ``STREAMK_NO_CACHE=1`` always recompiles;
``STREAMK_DEFINES`` adds -D macros for tuning experiments (part of the key).
"""

from __future__ import annotations

import hashlib
import os
import re
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

from .errors import check

KERNEL_DIR = Path(__file__).with_name("kernels")

def _tile_entries(*tiles: str, widths: tuple[str, ...] = ("", "_w8", "_w4")) -> tuple[str, ...]:
    """The entry points STREAMK_SM80_HALF_TILE (sm80_half.cuh) defines for each of ``tiles``: FP16
    and BF16 main kernels per copy width, then each tile's FP32 reduce and prescale passes."""
    return (tuple(f"streamk_sm80_{t}_{tile}{w}" for tile in tiles for w in widths for t in ("f16", "bf16"))
            + tuple(f"streamk_{step}_f32_{tile}" for tile in tiles for step in ("reduce", "prescale")))


# Source file -> its entry points (extern "C" __global__ names), looked up by name at launch.
SOURCES: dict[str, tuple[str, ...]] = {
    "sm80_f16.cu": ("streamk_sm80_f16", "streamk_sm80_bf16", "streamk_reduce_f32", "streamk_prescale_f32"),
    "sm80_f16_w8.cu": ("streamk_sm80_f16_w8", "streamk_sm80_bf16_w8"),
    "sm80_f16_w4.cu": ("streamk_sm80_f16_w4", "streamk_sm80_bf16_w4"),
    "sm80_f16_w2.cu": ("streamk_sm80_f16_w2", "streamk_sm80_bf16_w2"),
    "sm80_f16_t64.cu": _tile_entries("t64", widths=("", "_w8", "_w4", "_w2")),
    "sm80_f16_rect.cu": _tile_entries("t128x64", "t64x128"),
    "sm80_f16_t32.cu": _tile_entries("t32x64", "t32x32"),
    "sm80_f16_wide.cu": _tile_entries("t128x256"),
    "sm80_f64.cu": ("streamk_sm80_f64", "streamk_sm80_f64_w8", "streamk_reduce_f64", "streamk_prescale_f64"),
    "pack.cu": ("streamk_pack_b16", "streamk_pack_b64"),
}
ARCHS = ("sm_80", "sm_90a")
BASE_OPTIONS = ("-std=c++17", "--ptxas-options=--verbose", "-default-device", "--extra-device-vectorization")


def options() -> tuple[str, ...]:
    """NVRTC options; ``STREAMK_DEFINES="A=1,B=2"`` adds -D macros (tuning experiments only)."""
    defines = [d.strip() for d in os.environ.get("STREAMK_DEFINES", "").split(",") if d.strip()]
    return BASE_OPTIONS + tuple(f"-D{d}" for d in defines)

_PTXAS_ENTRY = re.compile(r"Compiling entry function '(\w+)' for '(\w+)'")
_PTXAS_USAGE = re.compile(r"Used (\d+) registers")
_PTXAS_SPILL = re.compile(r"(\d+) bytes spill stores, (\d+) bytes spill loads")


@dataclass(frozen=True, slots=True)
class Cubin:
    """One compiled source: the CUBIN bytes and what ptxas reported per entry point."""

    source: str
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
    return Path(os.environ.get("STREAMK_CACHE_DIR") or Path.home() / ".cache" / "streamk")


def _headers() -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(KERNEL_DIR.glob("*.cuh"))}


def cache_key(source: str, arch: str, opts: tuple[str, ...] | None = None) -> str:
    digest = hashlib.sha256()
    digest.update((KERNEL_DIR / source).read_bytes())
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
    """Compile one kernel file for ``arch`` (``sm_80`` or ``sm_90a``), from the cache when it can."""
    if source not in SOURCES:
        raise ValueError(f"source must be one of {sorted(SOURCES)} (got {source!r})")
    key = cache_key(source, arch)
    path = cache_dir() / f"{Path(source).stem}-{arch}-{key[:24]}.cubin"
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

    text = (KERNEL_DIR / source).read_bytes()
    prog = check(nvrtc.nvrtcCreateProgram(text, source.encode(), 0, [], []), "nvrtcCreateProgram")
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
