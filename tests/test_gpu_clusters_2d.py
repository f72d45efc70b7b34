"""On an sm_90 GPU: whole-tile launches in 2x2 clusters that share A and B (Tuning.cluster_2d, bench
+mc2d; gpu/clusters.py share words): C within the float64 bound and bitwise equal to the same
schedule without clusters (each tile's wgmma order is the same), for even and odd tile rows and
columns, one tile row (clusters of four along n sharing A), persistent CTAs, over relaunches and
in a CUDA graph. (The box assignment and barrier counts are checked on the CPU:
tests/test_clusters_2d.py.)"""

from __future__ import annotations

import math

import pytest

from gpu_support import GPU, error_ratio, inputs, relaunched
from streamk.gpu.clusters import QUAD
from streamk.gpu.decide.launches import QUAD_ORDER, QUAD_TILES
from streamk.gpu.request import Tuning

pytestmark = GPU

NO_CLUSTERS = Tuning(multicast=False)
QUADS = Tuning(cluster_2d=True)
TILES = [f"{t.bm}x{t.bn}x{t.bk}" for t in QUAD_TILES]


def _skip_unless_sm90():
    from streamk.gpu.runtime.device import current

    if current().arch != "sm_90a":
        pytest.skip(f"TMA multicast runs on the sm_90a kernels (this GPU is {current().arch})")


def _cluster(prepared) -> int:
    return max(st.cluster for st in prepared.launch.steps)


def _cases(bm: int, bn: int) -> list[tuple[int, int, int, dict]]:
    """(m, n, k, options) in tiles of bm x bn: even rows and columns, odd rows, odd columns, both odd
    (edge tiles in m, n and k), one tile row, persistent CTAs (a grid of 16 over 64 tiles)."""
    return [(4 * bm, 4 * bn, 512, {}), (5 * bm - 28, 4 * bn, 333, {}), (4 * bm, 5 * bn - 36, 640, {}),
            (5 * bm - 3, 3 * bn - 5, 200, {}), (100, 6 * bn, 1024, {}), (8 * bm, 8 * bn, 256, {"grid": 16})]


@pytest.mark.parametrize("tile", TILES)
@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_2x2_clusters_match_unclustered_launches_bitwise(dtype, tile):
    import torch

    from streamk.gpu import prepare

    _skip_unless_sm90()
    bm, bn, _ = map(int, tile.split("x"))
    gen = torch.Generator(device="cuda").manual_seed(17)
    for m, n, k, options in _cases(bm, bn):
        A, B = inputs(m, n, k, dtype, gen)
        C, D = (torch.full((m, n), math.nan, device="cuda") for _ in range(2))
        p = prepare(A, B, C, schedule="data-parallel", tile=tile, _tuning=QUADS, **options)
        plain = prepare(A, B, D, schedule="data-parallel", tile=tile, _tuning=NO_CLUSTERS, **options)
        assert p.schedule.tile_order == QUAD_ORDER and _cluster(plain) == 1
        # 64 CTAs or fewer fit in clusters of four on any H100 / H200 (their GPCs hold 16-18 SMs)
        assert _cluster(p) == QUAD or p.launch.steps[-1].grid > 64, (m, n, k, _cluster(p))
        first, last = relaunched(p, C, 10)
        plain.run()
        torch.cuda.synchronize()
        assert error_ratio(first, A, B) <= 1, (m, n, k, options)
        assert torch.equal(first, last), (m, n, k, options)
        assert torch.equal(first, D), (m, n, k, options, float((first - D).abs().max()))


@pytest.mark.parametrize("tile", TILES)
def test_2x2_clusters_in_a_cuda_graph(tile):
    import torch

    from streamk.gpu import prepare

    _skip_unless_sm90()
    bm, bn, _ = map(int, tile.split("x"))
    m, n, k = 5 * bm - 28, 5 * bn - 36, 1000  # odd tile rows and columns: blocks, pairs and a corner
    gen = torch.Generator(device="cuda").manual_seed(19)
    A, B = inputs(m, n, k, "float16", gen)
    C = torch.full((m, n), math.nan, device="cuda")
    p = prepare(A, B, C, schedule="data-parallel", tile=tile, _tuning=QUADS)
    ref = p.run().clone()
    torch.cuda.synchronize()
    assert error_ratio(ref, A, B) <= 1
    stream = torch.cuda.Stream()
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph, stream=stream):
        p.run()
    for _ in range(5):
        C.fill_(math.nan)
        graph.replay()
    torch.cuda.synchronize()
    assert torch.equal(C, ref)


@pytest.mark.parametrize("shape", [(168, 3712, 2088), (149, 3624, 3160), (263, 1688, 4064), (1536, 1408, 2088)])
def test_auto_with_2x2_clusters_on_issue_42s_shapes(shape):
    """auto+mc2d as the bench runs it on the shapes LOG.md v45 traced: within the float64 bound,
    clustered where auto's schedule runs whole tiles on an sm90 tile that multicasts."""
    import torch

    from streamk.gpu import prepare

    _skip_unless_sm90()
    m, n, k = shape
    gen = torch.Generator(device="cuda").manual_seed(23)
    A, B = inputs(m, n, k, "float16", gen)
    C = torch.full((m, n), math.nan, device="cuda")
    p = prepare(A, B, C, _tuning=QUADS)
    first, last = relaunched(p, C, 5)
    print(shape, p.schedule.decomposition, p.schedule.tile, p.schedule.tile_order, "cluster", _cluster(p))
    assert error_ratio(first, A, B) <= 1 and torch.equal(first, last)


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_auto_on_persistent_ctas_in_2x2_clusters(dtype):
    """auto's many short 128x256 tiles on persistent CTAs in 2x2 blocks (launches.persistent_quads;
    edge tiles in m, n and k), clustered (in pairs where fours do not fit the grid: bind.py): within
    the float64 bound, bitwise equal to the same schedule launched without clusters, and over
    relaunches."""
    import torch

    from streamk.gpu import prepare
    from streamk.gpu.catalogue import spec_for_tile
    from streamk.gpu.decide.launches import persistent_quads

    _skip_unless_sm90()
    m, n, k = 2811, 3544, 601  # 22 x 14 = 308 tiles of 128x256 (78% of 3 waves), 10 MAC iterations each
    gen = torch.Generator(device="cuda").manual_seed(29)
    A, B = inputs(m, n, k, dtype, gen)
    C, D = (torch.full((m, n), math.nan, device="cuda") for _ in range(2))
    p = prepare(A, B, C)
    s = p.schedule
    assert persistent_quads(s.shape, spec_for_tile(dtype, s.tile), s.grid) and s.tile_order == QUAD_ORDER
    assert _cluster(p) in (2, QUAD)
    plain = prepare(A, B, D, schedule=s, _tuning=NO_CLUSTERS)
    assert _cluster(plain) == 1
    first, last = relaunched(p, C, 10)
    plain.run()
    torch.cuda.synchronize()
    assert error_ratio(first, A, B) <= 1
    assert torch.equal(first, last) and torch.equal(first, D)


@pytest.mark.parametrize("layout", ["RR", "RC", "CR", "CC"])
@pytest.mark.parametrize("m, n, k", [
    (2823, 408, 2920),  # 23 x 4 = 92 tiles of 128x128x64, 46 MAC iterations; rows of 5,840 and 816 bytes
    (1114, 2128, 1016),  # 9 x 12 = 108 tiles of 128x192x64, 16 iterations (LOG.md v161)
    (319, 2272, 952),  # 5 x 18 = 90 tiles of 64x128x64, 15 iterations (LOG.md v161)
])
def test_auto_runs_a_deep_wave_in_2x2_clusters_in_every_layout(m, n, k, layout):
    """auto's one wave of deep tiles whose rows straddle L2 sectors runs in clusters of four
    (launches.auto_quads, LOG.md v158, v161) with A and B row- or column-major (x @ W.t() included):
    within the float64 bound and bitwise equal to the same schedule launched without clusters."""
    import torch

    from streamk.gpu import prepare

    _skip_unless_sm90()
    gen = torch.Generator(device="cuda").manual_seed(29)
    A, B = inputs(m, n, k, "float16", gen, layout)
    C, D = (torch.full((m, n), math.nan, device="cuda") for _ in range(2))
    p = prepare(A, B, C)
    plain = prepare(A, B, D, _tuning=NO_CLUSTERS)
    assert p.schedule.tile_order == QUAD_ORDER and _cluster(p) == QUAD, (layout, p.schedule)
    assert _cluster(plain) == 1
    first, last = relaunched(p, C, 5)
    plain.run()
    torch.cuda.synchronize()
    assert error_ratio(first, A, B) <= 1 and torch.equal(first, last)
    assert torch.equal(first, D), float((first - D).abs().max())
