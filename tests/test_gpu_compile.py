"""Every kernel of the registry compiles with NVRTC for sm_80 and sm_90a (no GPU needed)."""

import json
import subprocess
import sys

import pytest

pytest.importorskip("cuda.bindings.nvrtc", reason="cuda-bindings (NVRTC bindings) is not installed")

from streamk.gpu.build import units_for  # noqa: E402
from streamk.gpu.catalogue import MAINLOOPS, VARIANTS  # noqa: E402


@pytest.mark.slow(45)
@pytest.mark.parametrize("arch", ["sm_80", "sm_90a"])
def test_every_kernel_compiles_without_spills(arch, tmp_path):
    env = {"STREAMK_CACHE_DIR": str(tmp_path), "PATH": "/usr/bin:/bin"}
    out = subprocess.run([sys.executable, "-m", "streamk", "kernels", "--arch", arch, "--json"],
                         capture_output=True, text=True, env=env, check=False)
    assert out.returncode == 0, out.stderr
    rows = json.loads(out.stdout)
    assert sorted(r["name"] for r in rows) == sorted(v.name for v in VARIANTS if arch in MAINLOOPS[v.mainloop].archs)
    assert any(r["mainloop"] == "sm90_tma" for r in rows) == (arch == "sm_90a")  # wgmma: sm_90a only
    failed = [r for r in rows if not r["ok"]]
    assert not failed, failed
    assert all(r["arch"] == arch and r["cached"] is False for r in rows)
    # the 128 fp32 accumulators of a 64x64 warp tile (and 32 fp64 ones) must live in registers:
    # under the 255-register cap ptxas spills at most a few dozen words, all of them values kept
    # across the unit loop, none in the mainloop (cuobjdump, benchmarks/LOG.md v9 and v10)
    spills = {r["name"]: r["spill_bytes"] for r in rows}
    # ... but the FP64 128x128 tile on sm_80, whose m8n8k4 mainloop (2x the DMMAs of sm_90's
    # m16n8k4) spills ~220 B beside its 64 fp64 accumulators a thread (an A100 runs it only when asked)
    a100_f64_wide = {n for n in spills if n.startswith("streamk_sm80_f64_t128x128")} if arch == "sm_80" else set()
    assert max(v for n, v in spills.items() if n not in a100_f64_wide) <= 128, spills
    assert all(spills[n] <= 256 for n in a100_f64_wide), spills
    assert spills["streamk_sm80_f64"] == 0, spills
    main = {r["name"]: r["registers"] for r in rows}
    assert 128 < main["streamk_sm80_f16"] <= 255 and 64 < main["streamk_sm80_f64"] <= 255, main
    # the larger FP64 tiles hold 32 (128x64) and 64 (128x128) fp64 accumulators a thread beside
    # double-buffered fragments; on sm_90a a few words kept across the unit loop spill, none in
    # the mainloop (sm80/f64_config.cuh F64Shape)
    f64_large = [f"streamk_sm80_f64_t{t}{w}" for t in ("128x64", "128x128") for w in ("", "_w8")]
    assert all(128 < main[n] <= 255 for n in f64_large), {n: main[n] for n in f64_large}
    if arch == "sm_90a":
        assert all(spills[n] <= 64 for n in f64_large), {n: spills[n] for n in f64_large}
    if arch == "sm_90a":  # the TMA + wgmma kernels keep their BN/2 accumulators per consumer thread in registers
        sm90 = {v.name: v for v in VARIANTS if v.mainloop == "sm90_tma" and v.role == "main"}
        assert {n for n in main if n.startswith("streamk_sm90_")} == set(sm90)
        assert {v.layout for v in sm90.values()} == {"", "acm", "bcm", "acm_bcm"}  # every operand layout
        # by tile rows and CTAs an SM: 128 rows, one CTA: at most 168 registers at launch, no spill;
        # two (128x64): 80, and a few words of the epilogue's thread coordinates kept across the unit
        # loop, none in the mainloop (cuobjdump); 64 rows (256 threads), one CTA: 255, no spill
        limits = {(128, 1): (168, 0), (128, 2): (80, 128), (64, 1): (255, 0)}
        # 128x256 with a column-major A keeps the shared-memory base across the unit loop in one
        # spilled word, read before the mainloop and once a C box, never inside it (cuobjdump; LOG.md v137)
        wide_acm = {n for n, v in sm90.items() if v.tile.bn == 256 and v.tile.bm == 128 and "acm" in v.layout}
        assert all(main[n] <= limits[v.tile.bm, v.blocks_per_sm][0] and
                   spills[n] <= (64 if n in wide_acm else limits[v.tile.bm, v.blocks_per_sm][1])
                   for n, v in sm90.items()), {n: (main[n], spills[n]) for n in sm90}
    assert len(list(tmp_path.glob("*.cubin"))) == len(units_for(arch))


def test_second_build_comes_from_the_cache(tmp_path, monkeypatch):
    from streamk.gpu.build import compile_source

    monkeypatch.setenv("STREAMK_CACHE_DIR", str(tmp_path))
    first = compile_source("pack", "sm_80")
    second = compile_source("pack", "sm_80")
    assert (first.cached, second.cached) == (False, True)
    assert first.image == second.image and first.image[:4] == b"\x7fELF"
    assert second.registers == first.registers and "streamk_pack_b16" in second.registers
