"""On a GPU: every kernel x dtype x fixup policy x decomposition computes C within the float64
bound, deterministic policies bitwise equal over repeated launches, edge shapes, any layouts."""

from __future__ import annotations

import math

import pytest

from gpu_support import DTYPES, GPU, error_ratio, inputs, out_dtype, relaunched
from streamk.errors import DeadlockError, ScheduleError
from streamk.schedule import FIXUP_POLICIES

pytestmark = GPU

DECOMPS = [("data-parallel", {}), ("fixed-split", {"splits": 3}), ("stream-k", {}), ("stream-k", {"grid": 7}),
           ("dp-one-tile-sk", {}), ("two-tile-sk-dp", {}), ("auto", {})]
# m, n or k of 1, primes, not multiples of any tile, rows 8- or 4-byte aligned (read in place by
# the narrow-copy kernels), one shape of several waves
SHAPES = [(1, 300, 77), (129, 130, 1), (7, 13, 17), (131, 257, 67), (200, 130, 90), (150, 124, 252),
          (509, 263, 1021), (1000, 999, 1001)]


def _tiles(dtype: str) -> list:
    """Every kernel's tile as "BMxBNxBK" (128x128x32: sm80; 128x128x64, 128x256x64, the 64-row
    64x128x64 and others: the sm90 TMA + wgmma ones); FP64: the paper's tile as auto runs it (None), then the larger ones (128x64x16,
    128x128x16)."""
    from streamk.gpu.catalogue import tile_specs

    names = [f"{t.bm}x{t.bn}x{t.bk}" for t in tile_specs(dtype)]
    return [None, *names[1:]] if dtype == "float64" else names


def _skip_unless_built_for_this_device(dtype: str, tile) -> None:
    from streamk.gpu.runtime.device import current
    from streamk.gpu.catalogue import spec_for_tile

    arch = current().arch
    if tile is not None and arch not in spec_for_tile(dtype, tile).archs:
        pytest.skip(f"the {tile} kernels are built for {spec_for_tile(dtype, tile).archs}, this GPU is {arch}")


CASES = [(dtype, tile) for dtype in DTYPES for tile in _tiles(dtype)]


@pytest.mark.parametrize("dtype, tile", CASES, ids=[f"{d}-{t or 'paper'}" for d, t in CASES])
def test_every_decomposition_and_policy_within_the_bound(dtype, tile):
    import torch

    from streamk.gpu import prepare

    _skip_unless_built_for_this_device(dtype, tile)
    gen = torch.Generator(device="cuda").manual_seed(20260121)
    failures, ran = [], 0
    for s, (m, n, k) in enumerate(SHAPES):
        for d, (decomp, options) in enumerate(DECOMPS):
            for q, policy in enumerate(FIXUP_POLICIES):
                layout = ["RR", "CR", "RC", "CC"][(s + d + q) % 4]
                A, B = inputs(m, n, k, dtype, gen, layout)
                alpha, beta = (1.5, 0.5) if policy == "atomic" or q == 1 else (1.0, 0.0)
                C0 = torch.randn(m, n, generator=gen, device="cuda").to(out_dtype(dtype))
                outs = []
                opts = dict(options)
                if "splits" in opts:  # at most the tile's MAC iterations
                    opts["splits"] = min(3, -(-k // (16 if tile is None else int(tile.split("x")[2]))))
                try:
                    for _ in range(2):
                        C = C0.clone() if beta else torch.full((m, n), math.nan, device="cuda", dtype=out_dtype(dtype))
                        p = prepare(A, B, C, alpha=alpha, beta=beta, schedule=decomp, fixup=policy, tile=tile, **opts)
                        p.run()
                        outs.append(C)
                except (DeadlockError, ScheduleError):  # e.g. a grid of 7 on fewer iterations
                    continue
                torch.cuda.synchronize()
                ran += 1
                ratio = error_ratio(outs[0], A, B, alpha, beta, C0)
                same = policy == "atomic" or torch.equal(outs[0], outs[1])
                if ratio > 1 or not same:
                    failures.append((m, n, k, decomp, opts, policy, layout, ratio, same, p.launch.names))
    assert ran > 0.9 * len(SHAPES) * len(DECOMPS) * len(FIXUP_POLICIES)
    assert not failures, failures[:5]


@pytest.mark.parametrize("tile", [None, "128x128x64", "128x256x64", "64x128x64", "64x192x64", "64x256x64"])
@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_auto_as_users_call_it_on_large_gemms_is_bitwise_stable(dtype, tile):
    """auto with no policy: on a wave or more of 128x256 tiles its two-tile hybrid walked
    backwards under turnstile, a path the matrix above never takes; on the sm90 tiles, auto's
    choice in the kernels' grouped tile order (the Target's), the persistent ring carried across
    many units."""
    import torch

    from streamk.gpu import prepare

    _skip_unless_built_for_this_device(dtype, tile)
    gen = torch.Generator(device="cuda").manual_seed(11)
    options = {} if tile is None else {"tile": tile}
    for m, n, k in ((2048, 4352, 1056), (2047, 4351, 1057), (3071, 3073, 4095)):
        A, B = inputs(m, n, k, dtype, gen)
        C = torch.full((m, n), math.nan, device="cuda")
        p = prepare(A, B, C, **options)
        assert p.schedule.tile_order == ("grouped-8" if p.schedule.tile.bk == 64 else "row-major")  # the Target's
        first, last = relaunched(p, C, 100)
        assert error_ratio(first, A, B) <= 1 and torch.equal(last, first), (m, n, k, p.schedule)


@pytest.mark.parametrize("dtype", ["float16", "float64"])
def test_strided_outputs_with_beta(dtype):
    """C column-major, or a view at an odd offset inside a wider matrix (rows 4-byte aligned only):
    the epilogue's element-wise and narrow store paths, under every kind of fixup."""
    import torch

    from streamk.gpu import gemm

    gen = torch.Generator(device="cuda").manual_seed(12)
    m, n, k = 300, 200, 160
    A, B = inputs(m, n, k, dtype, gen)
    for layout in ("column-major", "offset-view"):
        for decomp, options, policy in (("data-parallel", {}, None), ("stream-k", {}, "atomic"),
                                        ("fixed-split", {"splits": 2}, "separate-reduce"),
                                        ("stream-k", {}, "owner-waits")):
            C0 = torch.randn(m, n, generator=gen, device="cuda").to(out_dtype(dtype))
            if layout == "column-major":
                C = C0.t().contiguous().t()
            else:
                C = torch.zeros(m + 3, n + 5, device="cuda", dtype=out_dtype(dtype))[1:1 + m, 3:3 + n]
                C.copy_(C0)
            gemm(A, B, C, alpha=0.75, beta=-1.25, schedule=decomp, fixup=policy, **options)
            assert error_ratio(C, A, B, 0.75, -1.25, C0) <= 1, (layout, decomp, policy)


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_auto_on_few_deep_sm90_tiles_runs_the_reduce_pass_bitwise_stable(dtype):
    """auto on the sm90 128x128x64 tile below 0.2 tiles per SM with deep k: basic Stream-K on every SM
    and the separate-reduce pass (streamk.sched.auto few_tiles_reduce), as users get it."""
    import torch

    from streamk.gpu import prepare

    _skip_unless_built_for_this_device(dtype, "128x128x64")
    gen = torch.Generator(device="cuda").manual_seed(13)
    for m, n, k in ((142, 328, 5624), (565, 168, 4785)):
        A, B = inputs(m, n, k, dtype, gen)
        C = torch.full((m, n), math.nan, device="cuda")
        p = prepare(A, B, C, tile="128x128x64")
        assert p.schedule.fixup == "separate-reduce" and any("reduce" in name for name in p.launch.names)
        first, last = relaunched(p, C, 50)
        assert error_ratio(first, A, B) <= 1 and torch.equal(last, first), (m, n, k, p.schedule)
