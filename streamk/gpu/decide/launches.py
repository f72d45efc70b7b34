"""How a decided GEMM's kernels are launched: programmatic dependent launch between them, sm90
clusters that multicast B, and the separate-reduce pass's blocks per split tile.

Each rule carries the measurement it rests on (benchmarks/LOG.md has the history).
"""

from __future__ import annotations

from ...shapes import ITEMSIZE
from ..catalogue import SM90_M64_TILE, SM90_M64_WIDE_TILE, SM90_TILE, KernelSpec

# Programmatic dependent launch between one GEMM's kernels (pack -> main -> separate-reduce): by
# default only where the main grid is at most one CTA per SM. H100, 400 shapes, one call (LOG.md
# v13): such launches 1.046x faster geomean with it (208 shapes; worst 0.962x), larger grids
# 1.006-1.009x but down to 0.87x on some big packed GEMMs (main-kernel CTAs placed while the pack
# pass still ran). A GEMM's first main kernel launches so too, behind whatever kernel ran before
# it on the stream (often another GEMM; LOG.md v40, unmeasured; a kernel that never triggers lets
# it start only at its end): that kernel may be a multi-wave grid like the pack, so the same
# one-wave default holds there.
BEHIND = ("pack", "prescale", "main", "stream")  # the kernel a PDL launch follows
MAY_BE_MULTI_WAVE = ("pack", "stream")


def use_pdl(pdl: bool | None, main_grid: int, sms: int, arch: str, *, behind: str) -> bool:
    """Whether a kernel of this launch uses programmatic dependent launch behind ``behind``: "pack"
    or "prescale" (the main kernel behind that pass), "main" (the reduce pass behind the main
    kernel) or "stream" (the main kernel as the GEMM's first, behind any kernel before it). Behind
    the pack pass or an unknown kernel, by default only where the main grid fits one CTA per SM:
    main-kernel CTAs placed while a large multi-wave pack still ran cost up to 1.15x (LOG.md v13).
    Behind the main kernel or the one-wave atomic prescale, every grid: nothing waits to be placed."""
    if behind not in BEHIND:
        raise ValueError(f"behind must be one of {', '.join(BEHIND)} (got {behind!r})")
    if int("".join(ch for ch in arch if ch.isdigit())) < 90:
        return False  # griddepcontrol is sm_90's
    if pdl is not None:
        return pdl
    return main_grid <= sms or behind not in MAY_BE_MULTI_WAVE


# sm90 clusters of two CTAs sharing B by TMA multicast (clusters.py) on the tile whose mainloop asks the
# most of the L2 (128x128x64: 32 KB a CTA per 0.38 us MAC iteration; 128x256x64: 48 KB per 0.69 us).
# H100, auto vs auto without clusters, corpus shapes of each tile (LOG.md v26): 128x128x64 1.015x,
# 1.015x (seed 20260121, twice) and 1.017x (seed 7); 128x256x64 1.000x, 1.005x, 0.996x and 8192^3
# 0.98x: no gain, so no clusters there. The 64-row tiles read B twice per flop what 128-row ones do
# (64x128x64: 16 of a stage's 24 KB), so they share it too (unmeasured; +nomc in the bench compares).
MULTICAST_TILES = (SM90_TILE, SM90_M64_TILE, SM90_M64_WIDE_TILE)


def use_multicast(multicast: bool, spec: KernelSpec) -> bool:
    """Whether launches of ``spec``'s main kernel run in clusters that share B where the table pairs CTAs."""
    return multicast and spec.tma and spec.tile in MULTICAST_TILES


REDUCE_MAX_VECS = 4  # fixup.cuh: accumulator vectors per thread of one reduce block


def reduce_slices(items: int, spec: KernelSpec, threads: int, sms: int) -> int:
    """Blocks per split tile of the separate-reduce pass: enough for two blocks per SM where the
    split tiles are few (one block per tile read its slots at ~1.3 us per 64 KB, LOG.md v10), a
    power of two dividing the tile's 16-byte vectors per thread, with at most REDUCE_MAX_VECS of
    them per block (fixup.cuh reduce_slice)."""
    acc_bytes = ITEMSIZE[spec.out_dtype]
    vecs = spec.tile.bm * spec.tile.bn * acc_bytes // (16 * threads)
    slices = max(1, vecs // REDUCE_MAX_VECS)
    while slices < vecs and items * slices < 2 * sms:
        slices *= 2
    return slices

