"""``streamk kernels``: compile every kernel of the registry with NVRTC for an arch (no GPU needed)."""

from __future__ import annotations

import argparse
import sys

from ..errors import StreamkError
from .common import print_json


def add_parser(sub) -> argparse.ArgumentParser:
    p = sub.add_parser("kernels", description="Compile every kernel the GPU backend ships for one arch with NVRTC and "
                                   "list each entry point with its registers and spills (cached on disk: "
                                   "STREAMK_CACHE_DIR, STREAMK_NO_CACHE=1).")
    p.add_argument("--arch", choices=["sm_80", "sm_90a"], default="sm_80", help="target (default sm_80)")
    p.add_argument("--json", action="store_true", help="print a JSON list of {name, ok, arch, ...}")
    return p


def _compile(source: str, arch: str):
    """One unit's Cubin, or the StreamkError that says why it did not compile (a row, not a stop)."""
    from ..gpu.build import compile_source

    try:
        return compile_source(source, arch)
    except StreamkError as exc:
        return exc


def compile_all(arch: str) -> list[dict]:
    """Compile every unit for ``arch`` (into the on-disk cache), the units spread over
    ``STREAMK_SWEEP_WORKERS`` processes (default every CPU): NVRTC takes 1-4 s a unit."""
    try:
        from ..gpu.build import nvrtc_version, units_for
        from ..gpu.catalogue import BY_NAME
        version = nvrtc_version()
    except ImportError as exc:
        raise StreamkError(f"NVRTC is not installed ({exc}); pip install 'streamk[gpu]'") from None
    from ..parallel import run_ordered, workers_available

    units = units_for(arch)
    rows = []
    cubins = run_ordered(_compile, [(source, arch) for source in units], workers_available())
    for (source, entries), cubin in zip(units.items(), cubins):
        if isinstance(cubin, StreamkError):
            rows += [{"name": e, "source": source, "arch": arch, "ok": False, "error": str(cubin)} for e in entries]
            continue
        for entry in entries:
            v = BY_NAME[entry]
            rows.append({"name": entry, "source": source, "arch": arch, "ok": entry in cubin.registers,
                         "role": v.role, "mainloop": v.mainloop, "dtype": v.dtype,
                         "tile": [v.tile.bm, v.tile.bn, v.tile.bk] if v.tile else None, "load_bytes": v.load_bytes,
                         "stages": v.stages, "blocks_per_sm": v.blocks_per_sm,
                         "seconds": round(cubin.seconds, 3), "cached": cubin.cached,
                         "registers": cubin.registers.get(entry), "spill_bytes": cubin.spills.get(entry),
                         "cubin_bytes": len(cubin.image), "nvrtc": f"{version[0]}.{version[1]}"})
            if entry not in cubin.registers:
                rows[-1]["error"] = f"{entry} not found in the ptxas report of {source}"
    return rows


def run(args: argparse.Namespace) -> int:
    rows = compile_all(args.arch)
    if args.json:
        print_json(rows)
    else:
        width = max(len(r["name"]) for r in rows)
        for r in rows:
            status = "ok" if r["ok"] else f"FAILED: {r.get('error', '')}"
            extra = f"{r['registers']:>4} regs {r['spill_bytes']} B spill {r['seconds']:.2f}s" if r["ok"] else ""
            print(f"{r['name']:<{width}} {r['arch']:<7} {extra} {status}")
    if not all(r["ok"] for r in rows):
        print("some kernels failed to compile", file=sys.stderr)
        return 1
    return 0
