"""Which CTA pairs share B through sm90 TMA multicast (streamk/gpu/clusters.py): read off the table,
for any Schedule; no GPU needed."""

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from streamk.dispatch import waits_only_backward
from streamk.fixup import Action, plan_fixup
from streamk.gpu.clusters import CLUSTER, launch_groups, multicast_groups, twin_groups
from streamk.gpu.table import build_table
from streamk.sched import make_schedule
from streamk.schedule import Schedule
from streamk.shapes import GemmShape, Machine, TileShape

from strategies import schedules

TILE = TileShape(128, 128, 64)
H100 = Machine(132, 1)


def _pairs(schedule: Schedule) -> np.ndarray:
    plan = plan_fixup(schedule)
    return multicast_groups(build_table(plan), not waits_only_backward(plan))


def _pairs_by_loop(schedule: Schedule, alone: bool = True) -> list[int]:
    """The twins of clusters.py written unit by unit: both CTAs' units, in order, are on one tile
    column over the same k range, and with ``alone`` whole tiles written alone."""
    table = build_table(plan_fixup(schedule))
    rows = [table.units[table.cta_offsets[c]:table.cta_offsets[c + 1]] for c in range(table.grid)]
    rows += [table.units[:0]] * (table.grid % CLUSTER)
    col = {f: i for i, f in enumerate(("tile", "tile_m", "tile_n", "k_begin", "k_end", "action"))}
    out = []
    for first, second in zip(rows[0::2], rows[1::2]):
        same = len(first) == len(second) > 0 and all(
            (not alone or u[col["action"]] == v[col["action"]] == Action.WRITE) and
            all(u[col[f]] == v[col[f]] for f in ("action", "tile_n", "k_begin", "k_end")) for u, v in zip(first, second))
        out.append(int(same))
    return out


def test_grouped_data_parallel_pairs_every_cluster():
    s = make_schedule("data-parallel", GemmShape(2048, 1024, 512), TILE, H100, tile_order="grouped-8")
    pairs = _pairs(s)
    assert len(pairs) == s.grid // 2 and pairs.all(), (s.grid, pairs)


def test_row_major_data_parallel_shares_no_b():
    # consecutive tiles of a row share A, not B: no cluster pairs
    s = make_schedule("data-parallel", GemmShape(2048, 1024, 512), TILE, H100)
    assert not _pairs(s).any()


def test_an_odd_grid_pads_its_last_cluster_with_an_empty_cta():
    s = make_schedule("data-parallel", GemmShape(5 * 128, 128, 512), TILE, H100, tile_order="grouped-8")
    pairs = _pairs(s)
    assert s.grid == 5 and pairs.tolist() == [1, 1, 0]


def test_basic_stream_k_never_pairs_and_paired_stream_k_always_does():
    s = make_schedule("stream-k", GemmShape(2048, 1024, 4096), TILE, H100, tile_order="grouped-8", grid=132)
    assert not _pairs(s).any()
    s = make_schedule("stream-k", GemmShape(2048, 1024, 4096), TILE, H100, tile_order="grouped-8", grid=132,
                      pair_rows=True)
    assert _pairs(s).all()


def test_persistent_ctas_pair_where_they_hold_as_many_tiles():
    s = make_schedule("data-parallel", GemmShape(16 * 128, 17 * 128, 256), TILE, H100, tile_order="grouped-8",
                      grid=132)
    pairs = _pairs(s)
    counts = np.diff(s.cta_offsets)
    assert pairs.sum() > 0 and all(counts[2 * i] == counts[2 * i + 1] for i in np.flatnonzero(pairs))
    assert pairs.tolist() == _pairs_by_loop(s)


@settings(max_examples=200, deadline=None)
@given(schedules(), st.sampled_from(["row-major", "grouped-2", "grouped-8", "column-major"]))
def test_pairs_are_the_unit_by_unit_rule(schedule, order):
    s = Schedule.from_ctas(schedule.decomposition, schedule.shape, schedule.tile, schedule.ctas, tile_order=order)
    twins, plain = twin_groups(build_table(plan_fixup(s)))
    assert twins.tolist() == _pairs_by_loop(s, alone=False), (s.shape, s.tile, s.grid, order)
    assert plain.tolist() == _pairs_by_loop(s), (s.shape, s.tile, s.grid, order)
    # the rule keeps every twin pair, or, where the waits point back, the whole tiles written alone
    plan = plan_fixup(s)
    fallback = np.zeros_like(plain) if not waits_only_backward(plan) else plain
    assert _pairs(s).tolist() in (twins.tolist(), fallback.tolist()), (s.shape, s.tile, s.grid, order)


def test_only_the_multicast_tiles_launch_clusters():
    from streamk.gpu.catalogue import spec_for_tile
    from streamk.gpu.decide.launches import MULTICAST_TILES, use_multicast

    for dtype in ("float16", "bfloat16"):
        for tile in ("128x128x64", "128x256x64", "128x128x32"):
            spec = spec_for_tile(dtype, tile)
            assert use_multicast(True, spec) == (spec.tile in MULTICAST_TILES), (dtype, tile)
            assert not use_multicast(False, spec)
    assert TileShape(128, 128, 64) in MULTICAST_TILES


def test_64x192_shares_b_only_where_its_rows_straddle_sectors():
    """64x192x64 launches pairs that share B where B's rows are no multiple of 32 bytes, at any depth,
    and none on rows of whole sectors (LOG.md v162)."""
    from streamk.gpu.catalogue import spec_for_tile
    from streamk.gpu.decide.launches import use_multicast

    spec = spec_for_tile("float16", "64x192x64")
    assert use_multicast(True, spec, 2000, 1) and use_multicast(True, spec, 2000, 100)  # 2,000-byte rows
    assert not use_multicast(True, spec, 2048, 100) and not use_multicast(True, spec, 2016, 100)
    assert not use_multicast(True, spec, None, 100) and not use_multicast(False, spec, 2000, 100)
    wide = make_schedule("data-parallel", GemmShape(150, 1000, 1000), spec.tile, H100, tile_order="grouped-8")
    table = build_table(plan_fixup(wide))
    assert launch_groups(table, spec, False, True, 2000, wide.problem.iters_per_tile) is not None
    assert launch_groups(table, spec, False, True, 2048, wide.problem.iters_per_tile) is None


def test_the_wide_tiles_share_b_where_its_rows_straddle_l2_lines_or_tiles_split_on_deep_tiles():
    """128x256x64 and 128x192x64 launch clusters only where a tile runs at least 16 MAC iterations and
    B's TMA rows are no multiple of 32 bytes (each box row then touches two L2 lines) or the launch
    splits tiles (paired Stream-K)."""
    from streamk.gpu.catalogue import spec_for_tile
    from streamk.gpu.decide.launches import MULTICAST_MIN_ITERATIONS, use_multicast

    for tile in ("128x256x64", "128x192x64"):
        spec = spec_for_tile("float16", tile)
        deep = MULTICAST_MIN_ITERATIONS
        assert use_multicast(True, spec, 1448 * 2, deep)  # 2896-byte rows: 16-byte aligned only
        assert not use_multicast(True, spec, 1448 * 2, deep - 1)  # shallow
        assert not use_multicast(True, spec, 1440 * 2, deep) and not use_multicast(True, spec, 1536 * 2, deep)
        assert not use_multicast(True, spec, None, deep) and not use_multicast(False, spec, 1448 * 2, deep)
        assert use_multicast(True, spec, 1536 * 2, deep, splits_tiles=True)  # aligned rows, split tiles
        assert use_multicast(True, spec, None, deep, splits_tiles=True)
        assert not use_multicast(True, spec, 1536 * 2, deep - 1, splits_tiles=True)  # shallow
    assert use_multicast(True, spec_for_tile("float16", "128x128x64"), 1536 * 2, 1)  # always, as before
    assert not use_multicast(True, spec_for_tile("float16", "128x64x64"), 1448 * 2, 64)


def test_the_model_sees_the_rows_a_launchs_ctas_request_themselves():
    """clusters.requested (the model's row32 term, calibrate/predict.py): B-sharing pairs request half
    of B as the launch pairs them (a row-major order, B rows on 32-byte lines or shallow tiles pair
    none); 2x2 clusters of deep tiles half of A and of B, their odd edges' pairs and corner less; of
    short tiles none (QUAD_MAX_ITERATIONS)."""
    from streamk.gpu.catalogue import spec_for_tile
    from streamk.gpu.clusters import requested

    wide = spec_for_tile("float16", "128x256x64")
    shape = GemmShape(4096, 1448, 2048)  # 2896-byte B rows, 32 MAC iterations a tile
    grouped = make_schedule("data-parallel", shape, wide.tile, H100, tile_order="grouped-8")
    assert requested(plan_fixup(grouped), wide, 1448 * 2, 132) == (1.0, 0.5)
    row_major = make_schedule("data-parallel", shape, wide.tile, H100)
    assert requested(plan_fixup(row_major), wide, 1448 * 2, 132) == (1.0, 1.0)
    assert requested(plan_fixup(grouped), wide, 1536 * 2, 132) == (1.0, 1.0)  # rows on lines: it launches alone
    odd = make_schedule("data-parallel", GemmShape(5 * 128, 128, 512), TILE, H100, tile_order="grouped-8")
    square = spec_for_tile("float16", "128x128x64")
    assert requested(plan_fixup(odd), square, 256, 132) == pytest.approx((1.0, 1 - 0.5 * 4 / 5))  # the fifth alone
    quads = make_schedule("data-parallel", GemmShape(4 * 128, 4 * 128, 1024), TILE, H100, tile_order="quads-8")
    assert requested(plan_fixup(quads), square, 1024, 132) == (0.5, 0.5)
    short = make_schedule("data-parallel", GemmShape(4 * 128, 4 * 128, 512), TILE, H100, tile_order="quads-8")
    assert requested(plan_fixup(short), square, 1024, 132) == (1.0, 1.0)  # 8 iterations: priced as none
    edges = make_schedule("data-parallel", GemmShape(3 * 128, 3 * 128, 1024), TILE, H100, tile_order="quads-8")
    a, b = requested(plan_fixup(edges), square, 768, 132)  # a block, a column pair, a row pair, a corner
    assert a == pytest.approx((4 * 0.5 + 2 * 0.5 + 2 + 1) / 9) and b == pytest.approx((4 * 0.5 + 2 * 0.5 + 2 + 1) / 9)
    # fours fill 120 of an H200's 132 slots (30 clusters; LOG.md v160): 124 CTAs launch in the blocks' pairs
    wave = make_schedule("data-parallel", GemmShape(4 * 128, 31 * 128, 1024), TILE, H100, tile_order="quads-8")
    assert requested(plan_fixup(wave), square, 31 * 256, 132) == (1.0, 0.5)
    fits = make_schedule("data-parallel", GemmShape(4 * 128, 30 * 128, 1024), TILE, H100, tile_order="quads-8")
    assert requested(plan_fixup(fits), square, 30 * 256, 132) == (0.5, 0.5)


def test_a_clustered_launch_asks_for_clusters_of_two_beside_pdl():
    driver = pytest.importorskip("cuda.bindings.driver")
    from streamk.gpu.runtime.launch import Step

    ids = driver.CUlaunchAttributeID
    both = Step("streamk_sm90_f16", None, 10, 384, 201792, pdl=True, cluster=CLUSTER).launch_config()
    assert [a.id for a in both.attrs] == [ids.CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION,
                                          ids.CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION]
    dims = both.attrs[1].value.clusterDim
    assert (dims.x, dims.y, dims.z) == (2, 1, 1) and both.gridDimX == 10 and both.sharedMemBytes == 201792
    alone = Step("streamk_sm90_f16", None, 10, 384, 201792, cluster=CLUSTER).launch_config()
    assert [a.id for a in alone.attrs] == [ids.CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION]
