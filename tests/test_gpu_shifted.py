"""On a GPU: the shifted-copy (_w2) kernels read rows only 2-byte aligned in place, at every row
shift, next to NaNs they must never let into C, under every fixup policy; auto takes them on
decode-like GEMMs instead of packing."""

from __future__ import annotations

import math

import pytest

from gpu_support import GPU, error_ratio, nan_padded_view
from streamk.gpu.catalogue import SHIFTED_TILES
from streamk.schedule import FIXUP_POLICIES

pytestmark = GPU

SHIFTED = [str(t) for t in SHIFTED_TILES]
DECOMPS = [("data-parallel", {}), ("stream-k", {}), ("fixed-split", {"splits": 3})]


@pytest.mark.parametrize("tile", SHIFTED)
@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_shifted_rows_at_every_offset_and_stride_within_the_bound(dtype, tile):
    import torch

    from streamk.gpu import prepare
    from streamk.gpu.request import Tuning

    gen = torch.Generator(device="cuda").manual_seed(21)
    always = Tuning(narrow="always")
    failures, ran = [], 0
    cases = [(3, 300, 77), (131, 67, 200), (64, 129, 1001), (40, 64, 7), (1, 9, 1)]
    for s, (m, n, k) in enumerate(cases):
        for j in range(8):  # row strides of every residue mod 8, bases at odd and even element offsets
            lda, ldb = k + (j + s) % 8, n + (3 * j + 1) % 8
            A = nan_padded_view(m, k, lda, (j * 5 + 1) % 8, dtype, gen)
            B = nan_padded_view(k, n, ldb, (j * 3 + 6) % 8, dtype, gen)
            decomp, options = DECOMPS[j % len(DECOMPS)]
            policy = FIXUP_POLICIES[(j + s) % len(FIXUP_POLICIES)]
            alpha, beta = (1.5, 0.5) if policy == "atomic" else (1.0, 0.0)
            C0 = torch.randn(m, n, generator=gen, device="cuda")
            C = C0.clone() if beta else torch.full((m, n), math.nan, device="cuda")
            opts = dict(options)
            if "splits" in opts:
                opts["splits"] = min(3, -(-k // 32))
            p = prepare(A, B, C, alpha=alpha, beta=beta, schedule=decomp, fixup=policy, tile=tile, _tuning=always,
                        **opts)
            p.run()
            torch.cuda.synchronize()
            ran += 1
            shifted = any(name.endswith("_w2") for name in p.launch.names)
            packed = any("pack" in name for name in p.launch.names)
            ratio = error_ratio(C, A, B, alpha, beta, C0)
            if ratio > 1 or not shifted or packed:
                failures.append((m, n, k, lda, ldb, decomp, policy, ratio, p.launch.names))
    assert ran == 8 * len(cases)
    assert not failures, failures[:5]


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_auto_reads_decode_like_operands_in_place_and_packs_the_rest(dtype):
    """Decode-like GEMMs whose pack would copy 8 MB or more (an odd n with m <= 64, an odd k with n
    <= 64, a 4-byte-aligned A co-packed with B): read in place by a _w2 kernel (or, at most 8
    columns, the dot kernel), no pack pass; a small pack, or a GEMM of two large sides, still packs."""
    import torch

    from gpu_support import inputs, relaunched
    from streamk.gpu import prepare

    gen = torch.Generator(device="cuda").manual_seed(22)
    for (m, n, k), in_place in (((3, 13327, 1368), True), ((16, 4001, 3001), True), ((2048, 17, 4095), True),
                                ((4879, 1, 5958), True), ((64, 129, 65), False), ((300, 30001, 257), False)):
        A, B = inputs(m, n, k, dtype, gen)
        C = torch.full((m, n), math.nan, device="cuda")
        p = prepare(A, B, C)
        first, last = relaunched(p, C, 3)
        names = p.launch.names
        dot = any(name.startswith("streamk_dot") for name in names)
        assert (dot or any(name.endswith("_w2") for name in names)) == in_place, ((m, n, k), names)
        assert any("pack" in name for name in names) != in_place, ((m, n, k), names)
        assert error_ratio(first, A, B) <= 1, ((m, n, k), names)
        assert p.schedule.fixup == "atomic" or torch.equal(first, last), ((m, n, k), p.schedule)
