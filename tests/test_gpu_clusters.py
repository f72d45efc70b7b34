"""On an sm_90 GPU: launches in clusters of two CTAs that share B by TMA multicast (gpu/clusters.py)
compute C within the float64 bound and bitwise equal to the same launch without clusters (the
same wgmma order), over relaunches, CUDA graphs and two streams at once; mixed tables (paired and
unpaired clusters, an odd grid's empty CTA) included; and paired Stream-K (sched/paired.py), whose
twin CTAs run partial tiles and fixups in lockstep, under every fixup policy."""

from __future__ import annotations

import math

import pytest

from gpu_support import GPU, error_ratio, graph_replayed, inputs, relaunched
from streamk.gpu.request import Tuning
from streamk.fixup import plan_fixup
from streamk.gpu.clusters import twin_groups
from streamk.gpu.decide.launches import MULTICAST_TILES, STRADDLE_MULTICAST_TILES
from streamk.gpu.table import build_table
from streamk.schedule import FIXUP_POLICIES, Schedule
from streamk.shapes import GemmShape, TileShape

pytestmark = GPU

NO_CLUSTERS = Tuning(multicast=False)
TILES = [f"{t.bm}x{t.bn}x{t.bk}" for t in MULTICAST_TILES]
# (m, n, k, prepare options): DP waves in the Target's grouped order (odd grid, edge tiles in m,
# n and k), persistent CTAs (an even and an odd grid), auto as users call it (a hybrid whose
# Stream-K CTAs stay unpaired, walked backwards under turnstile)
CASES = [
    (1024, 1024, 512, {"schedule": "data-parallel", "tile_order": "grouped-8"}),
    (1100, 700, 333, {"schedule": "data-parallel", "tile_order": "grouped-8"}),
    (2560, 1536, 640, {"schedule": "data-parallel", "tile_order": "grouped-8", "grid": 132}),
    (2560, 1536, 640, {"schedule": "data-parallel", "tile_order": "grouped-4", "grid": 45}),
    (3071, 3073, 2047, {}),
]


def _skip_unless_sm90():
    from streamk.gpu.runtime.device import current

    if current().arch != "sm_90a":
        pytest.skip(f"TMA multicast runs on the sm_90a kernels (this GPU is {current().arch})")


def _cluster(prepared) -> int:
    return max(st.cluster for st in prepared.launch.steps)


@pytest.mark.parametrize("tile", TILES)
@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_clustered_launches_match_unclustered_ones_bitwise(dtype, tile):
    import torch

    from streamk.gpu import prepare

    _skip_unless_sm90()
    gen = torch.Generator(device="cuda").manual_seed(7)
    clustered = 0
    for m, n, k, options in CASES:
        A, B = inputs(m, n, k, dtype, gen)
        outs = []
        for tuning in (NO_CLUSTERS, Tuning()):
            C = torch.full((m, n), math.nan, device="cuda")
            p = prepare(A, B, C, tile=tile, _tuning=tuning, **options)
            first, last = relaunched(p, C, 20)
            assert torch.equal(first, last), (m, n, k, options, tuning)
            outs.append((first, _cluster(p)))
        (plain, one), (shared, two) = outs
        assert one == 1
        clustered += two == 2
        assert error_ratio(shared, A, B) <= 1, (m, n, k, options)
        assert torch.equal(shared, plain), (m, n, k, options, float((shared - plain).abs().max()))
    assert clustered >= 3  # the grouped DP cases pair


@pytest.mark.parametrize("tile", TILES)
def test_a_user_schedule_mixing_paired_and_unpaired_clusters(tile):
    """CTAs 0-1 share B (same column, same k), 2-3 do not (one splits its tile with CTA 4, an odd
    grid's last CTA, paired with the pad CTA): only the first cluster multicasts."""
    import torch

    from streamk.gpu import prepare

    _skip_unless_sm90()
    t = TileShape(*map(int, tile.split("x")))
    m, n, k = 4 * t.bm, 2 * t.bn, 10 * t.bk
    ipt = k // t.bk
    # row-major tiles: tile = tile_m * 2 + tile_n; 0 and 2 share column 0
    ctas = [[(0, 0, ipt), (4, 0, ipt)], [(2, 0, ipt), (6, 0, ipt)], [(1, 0, ipt), (3, 0, 4)], [(5, 0, ipt)],
            [(3, 4, ipt), (7, 0, ipt)]]
    s = Schedule.from_ctas("user", GemmShape(m, n, k), t, ctas, fixup="turnstile")
    gen = torch.Generator(device="cuda").manual_seed(3)
    A, B = inputs(m, n, k, "float16", gen)
    C = torch.full((m, n), math.nan, device="cuda")
    p = prepare(A, B, C, schedule=s)
    assert _cluster(p) == 2 and p.launch.steps[-1].grid == 6
    first, last = relaunched(p, C, 20)
    assert error_ratio(first, A, B) <= 1 and torch.equal(first, last)


def test_clustered_launches_on_two_streams_and_in_a_graph():
    import torch

    from streamk.gpu import gemm

    _skip_unless_sm90()
    gen = torch.Generator(device="cuda").manual_seed(5)
    shapes = [(2048, 1024, 1024), (1536, 2048, 768)]
    ops = [inputs(m, n, k, "float16", gen) for m, n, k in shapes]
    refs = [gemm(A, B, schedule="data-parallel", tile_order="grouped-8", tile="128x128x64") for A, B in ops]
    torch.cuda.synchronize()
    streams = [torch.cuda.Stream() for _ in ops]
    outs = [[], []]
    for _ in range(10):
        for (A, B), s, out in zip(ops, streams, outs):
            with torch.cuda.stream(s):
                out.append(gemm(A, B, schedule="data-parallel", tile_order="grouped-8", tile="128x128x64"))
    torch.cuda.synchronize()
    for ref, out, (A, B) in zip(refs, outs, ops):
        assert error_ratio(ref, A, B) <= 1 and all(torch.equal(ref, o) for o in out)

    A, B = ops[0]
    stream = torch.cuda.Stream()
    with torch.cuda.stream(stream):
        gemm(A, B, schedule="data-parallel", tile_order="grouped-8", tile="128x128x64")  # warm: plan built
    stream.synchronize()
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph, stream=stream):
        C = gemm(A, B, schedule="data-parallel", tile_order="grouped-8", tile="128x128x64")
    for _ in range(5):
        C.fill_(math.nan)
        graph.replay()
    torch.cuda.synchronize()
    assert torch.equal(C, refs[0])


PAIRED_TILES = [f"{t.bm}x{t.bn}x{t.bk}" for t in STRADDLE_MULTICAST_TILES]
# 11 tile rows of 128 (the last one unpaired), B rows of 1448 FP16 (2896 bytes: 16-byte aligned only,
# so these tiles multicast), 32 MAC iterations a tile: 96 CTAs split tiles over two or three CTAs
PAIRED_SHAPE = (1400, 1448, 2048)


def _twins(prepared) -> int:
    return int(twin_groups(build_table(plan_fixup(prepared.schedule)))[0].sum())


@pytest.mark.parametrize("fixup", FIXUP_POLICIES)
@pytest.mark.parametrize("tile", PAIRED_TILES)
def test_paired_stream_k_runs_in_clusters_eager_and_in_a_graph(tile, fixup):
    """Paired Stream-K in clusters under each policy (turnstile walked backwards as auto runs it; a
    one-wave grid, so owner-waits' upward waits may pair): C within the float64 bound, relaunches
    without a reset bitwise equal (but atomic's), a CUDA graph's replays equal to the eager run."""
    import torch

    from streamk.gpu import prepare

    _skip_unless_sm90()
    m, n, k = PAIRED_SHAPE
    gen = torch.Generator(device="cuda").manual_seed(11)
    A, B = inputs(m, n, k, "float16", gen)
    options = dict(schedule="stream-k", pair_rows=True, tile=tile, fixup=fixup, tile_order="grouped-8",
                   walk="backward" if fixup == "turnstile" else "forward", grid=96)
    C = torch.full((m, n), math.nan, device="cuda")
    p = prepare(A, B, C, **options)
    assert _cluster(p) == 2 and _twins(p) >= 40, (tile, fixup, _twins(p))
    first, last = relaunched(p, C, 20)
    deterministic = fixup != "atomic"
    assert error_ratio(first, A, B) <= 1 and error_ratio(last, A, B) <= 1, (tile, fixup)
    assert not deterministic or torch.equal(first, last)
    G = graph_replayed(A, B, **options)
    assert error_ratio(G, A, B) <= 1 and (not deterministic or torch.equal(G, first)), (tile, fixup)


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_auto_pairs_its_stream_k_where_b_rows_straddle_l2_lines(dtype):
    """2841x1448x6280 (LOG.md v41b's largest loss): auto's Stream-K over 23 x 6 tiles of 128x256x64
    runs paired in clusters; without clusters it runs unpaired; both within the float64 bound."""
    import torch

    from streamk.gpu import prepare

    _skip_unless_sm90()
    m, n, k = 2841, 1448, 6280
    gen = torch.Generator(device="cuda").manual_seed(13)
    A, B = inputs(m, n, k, dtype, gen)
    C, D = (torch.full((m, n), math.nan, device="cuda") for _ in range(2))
    p, plain = prepare(A, B, C), prepare(A, B, D, _tuning=NO_CLUSTERS)
    assert p.schedule.tile in STRADDLE_MULTICAST_TILES and _cluster(p) == 2 and _twins(p) >= 60
    assert _cluster(plain) == 1 and _twins(plain) < _twins(p)
    first, last = relaunched(p, C, 5)
    plain.run()
    torch.cuda.synchronize()
    assert error_ratio(first, A, B) <= 1 and torch.equal(first, last) and error_ratio(D, A, B) <= 1


@pytest.mark.parametrize("layout", ["RR", "RC"])
@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_64x192_pairs_share_straddling_b_rows_bitwise(dtype, layout):
    """64x192x64 launches pairs that share B where B's rows straddle 32-byte sectors (launches.
    STRADDLE_ONLY_TILES, LOG.md v162), row-major B and x @ W.t() alike: within the float64 bound and
    bitwise equal to the launch without clusters; rows of whole sectors launch none."""
    import torch

    from streamk.gpu import prepare

    _skip_unless_sm90()
    gen = torch.Generator(device="cuda").manual_seed(11)
    for m, n, k, pairs in ((150, 1000, 1000, True), (157, 1192, 328, True), (150, 1024, 1024, False)):
        A, B = inputs(m, n, k, dtype, gen, layout)
        C, D = (torch.full((m, n), math.nan, device="cuda") for _ in range(2))
        p = prepare(A, B, C, schedule="data-parallel", tile="64x192x64", tile_order="grouped-8")
        plain = prepare(A, B, D, schedule="data-parallel", tile="64x192x64", tile_order="grouped-8",
                        _tuning=NO_CLUSTERS)
        assert _cluster(p) == (2 if pairs else 1) and _cluster(plain) == 1, (m, n, k, layout)
        first, last = relaunched(p, C, 5)
        plain.run()
        torch.cuda.synchronize()
        assert error_ratio(first, A, B) <= 1 and torch.equal(first, last), (m, n, k, layout)
        assert torch.equal(first, D), (m, n, k, layout, float((first - D).abs().max()))


@pytest.mark.parametrize("fixup", ["owner-waits", "turnstile"])
@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_column_clusters_of_three_and_four_match_unclustered_launches_bitwise(dtype, fixup):
    """Aligned splits on 64x128x64 grouped by whole tile columns (sched.paired_splits by 3 and 4 rows) run in
    clusters of that many CTAs that all share B (decide.launches.column_rows): within the float64 bound,
    bitwise equal to the same launch without clusters and over relaunches, and a CUDA graph's replay equal
    to the eager run; auto takes them on 189x1512x6736."""
    import torch

    from streamk.gpu import prepare
    from streamk.sched import make_schedule
    from streamk.sched.paired import paired_splits
    from streamk.shapes import Machine

    _skip_unless_sm90()
    gen = torch.Generator(device="cuda").manual_seed(17)
    tile = TileShape(64, 128, 64)
    for m, n, k, splits, rows in ((150, 1000, 3000, 3, 3), (250, 700, 2500, 3, 4), (140, 1264, 4784, 3, 3)):
        A, B = inputs(m, n, k, dtype, gen)
        s = make_schedule("fixed-split", GemmShape(m, n, k), tile, Machine(132, 1), splits=splits,
                          tile_order="grouped-8").with_fixup(fixup)
        grouped = paired_splits(s, rows)
        C, D = (torch.full((m, n), math.nan, device="cuda") for _ in range(2))
        p, plain = prepare(A, B, C, schedule=grouped), prepare(A, B, D, schedule=grouped, _tuning=NO_CLUSTERS)
        assert _cluster(p) == rows and _cluster(plain) == 1, (m, n, k, fixup)
        first, last = relaunched(p, C, 5)
        plain.run()
        torch.cuda.synchronize()
        assert error_ratio(first, A, B) <= 1 and torch.equal(first, last), (m, n, k, fixup)
        assert torch.equal(first, D), (m, n, k, fixup, float((first - D).abs().max()))
        G = graph_replayed(A, B, schedule=grouped)
        assert torch.equal(G, first), (m, n, k, fixup)
    A, B = inputs(189, 1512, 6736, dtype, gen)
    C = torch.full((189, 1512), math.nan, device="cuda")
    p = prepare(A, B, C)
    assert _cluster(p) == 3 and p.schedule.tile == tile
    first, _ = relaunched(p, C, 2)
    assert error_ratio(first, A, B) <= 1
