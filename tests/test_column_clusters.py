"""Aligned splits grouped by whole tile columns (sched.paired_splits with rows 3 or 4) and the clusters of
that many CTAs that share B (gpu/clusters.py, decide.launches column_rows / column_splits): the groups'
layout, the share words, that the rule's clusters finish in lockstep (test_paired's replay of the kernel's
ring), and where auto takes them on an H200. No GPU needed."""

from __future__ import annotations

import numpy as np
from hypothesis import given, note, settings
from hypothesis import strategies as st

from streamk import FIXUP_POLICIES, Problem, plan_fixup
from streamk.dispatch import waits_only_backward
from streamk.gpu.catalogue import SM90_M64_TILE, spec_for_tile
from streamk.gpu.clusters import SHARE_BITS, launch_clusters, multicast_groups
from streamk.gpu.decide.launches import (COLUMN_ROWS, PAIR_CLUSTER, PAIRED_SPLIT_MIN_ITERS,
                                         cluster_shape, cluster_slots, column_rows, column_splits)
from streamk.gpu.table import build_table
from streamk.sched import make_schedule
from streamk.sched.paired import paired_splits
from streamk.schedule import tile_coordinates
from streamk.shapes import GemmShape, Machine, TileShape
from strategies import machines, problems
from test_paired import ORDERS, lockstep_finishes

SPEC = spec_for_tile("float16", SM90_M64_TILE)


def _grouped(shape: GemmShape, tile: TileShape, machine: Machine, order: str, splits: int, rows: int,
             fixup: str = "owner-waits"):
    s = make_schedule("fixed-split", shape, tile, machine, splits=splits, tile_order=order).with_fixup(fixup)
    return s, paired_splits(s, rows)


@settings(max_examples=120, deadline=None)
@given(problems(max_tiles=40, max_iters=30), machines(), st.sampled_from(ORDERS), st.integers(2, 4),
       st.sampled_from(COLUMN_ROWS))
def test_grouped_splits_run_each_tiles_splits_on_the_rows_of_one_column(problem, machine, order, splits, rows):
    """paired_splits(s, rows) of a fixed-split: the same grid, policy and order; CTAs rows i .. rows i + rows - 1
    of the groups run unit j on tile rows rows r .. rows r + rows - 1 of one column over one k range; the
    CTAs of the last tile rows (fewer than ``rows``) after them; None where no group fits."""
    shape, tile = problem
    p = Problem(shape, tile)
    s, grouped = _grouped(shape, tile, machine, order, min(splits, p.iters_per_tile), rows)
    if p.tiles_m < rows or s.grid == p.tiles:
        assert grouped is None
        return
    assert grouped is not None
    note(f"units={grouped.units.tolist()} offsets={grouped.cta_offsets.tolist()}")
    assert (grouped.grid, grouped.fixup, grouped.tile_order) == (s.grid, s.fixup, s.tile_order)
    tm, tn = tile_coordinates(order, p.tiles_m, p.tiles_n, grouped.units[:, 0])
    single = tm >= p.tiles_m - p.tiles_m % rows
    lone = np.bincount(grouped.unit_cta, weights=single, minlength=grouped.grid) > 0
    first_lone = int(np.argmax(np.append(lone, True)))
    assert first_lone >= rows and first_lone % rows == 0 and lone[first_lone:].all()
    for c in range(0, first_lone, rows):
        at = [slice(int(grouped.cta_offsets[c + i]), int(grouped.cta_offsets[c + i + 1])) for i in range(rows)]
        assert (tm[at[0]] % rows == 0).all()
        for i in range(1, rows):
            assert np.array_equal(tm[at[i]], tm[at[0]] + i) and np.array_equal(tn[at[i]], tn[at[0]])
            assert np.array_equal(grouped.units[at[i], 1:], grouped.units[at[0], 1:])


@settings(max_examples=120, deadline=None)
@given(problems(max_tiles=40, max_iters=30), machines(), st.sampled_from(ORDERS), st.integers(2, 4),
       st.sampled_from(COLUMN_ROWS), st.sampled_from(FIXUP_POLICIES), st.data())
def test_the_rules_column_clusters_finish_in_lockstep(problem, machine, order, splits, rows, fixup, data):
    """Replayed in lockstep (the tightest ring) with the clusters of ``rows`` CTAs the rule keeps, grouped
    splits finish: every cluster resident at once where waits point upwards, any number in order where
    they point back."""
    shape, tile = problem
    p = Problem(shape, tile)
    _, s = _grouped(shape, tile, machine, order, min(splits, p.iters_per_tile), rows, fixup)
    if s is None:
        return
    plan = plan_fixup(s)
    coresident = not waits_only_backward(plan)
    groups = multicast_groups(build_table(plan), coresident, rows)
    clusters = -(-s.grid // rows)
    resident = None if coresident else data.draw(st.integers(1, clusters), label="resident clusters")
    assert lockstep_finishes(s, groups, resident, size=rows)


def test_grouped_splits_launch_in_column_clusters_that_all_share_b():
    """140x1264x4784 on 64x128x64, 3 splits a tile grouped by its 3 tile rows: clusters of three whose
    CTAs all share B (B mask 0b111, each its own A), then its pairs as the fallback; the same splits
    ungrouped ask for pairs and share nothing."""
    shape = GemmShape(140, 1264, 4784)
    s, grouped = _grouped(shape, SM90_M64_TILE, Machine(132, 1), "grouped-8", 3, 3)
    assert column_rows(grouped) == 3 and cluster_shape(True, False, SPEC, grouped) == (3, 1)
    assert column_rows(s) == 0 and cluster_shape(True, False, SPEC, s) == PAIR_CLUSTER
    assert cluster_shape(False, False, SPEC, grouped) == (1, 1)
    table = build_table(plan_fixup(grouped))
    (size, words), *fallback = launch_clusters(table, SPEC, (3, 1), True, shape.n * 2, grouped.problem.iters_per_tile)
    assert size == 3 and [f[0] for f in fallback] == [2] and len(words) == grouped.grid == 90
    assert (words >> SHARE_BITS == 0b111).all() and ((words & 0xFF) == 1 << (np.arange(90) % 3)).all()
    assert launch_clusters(build_table(plan_fixup(s)), SPEC, (2, 1), True, shape.n * 2,
                           s.problem.iters_per_tile) == []


def test_whole_tiles_down_a_column_keep_their_pairs():
    """Grouped data-parallel CTAs run tiles down a column too, but split no tile: they keep pairs."""
    s = make_schedule("data-parallel", GemmShape(250, 2048, 512), SM90_M64_TILE, Machine(132, 1),
                      tile_order="grouped-8")
    assert column_rows(s) == 0 and cluster_shape(True, False, SPEC, s) == PAIR_CLUSTER


def _auto_on_h200(shape: GemmShape, dtype: str = "float16", **kw):
    from streamk.gpu.decide.schedule import schedule_for
    from streamk.target import preset

    return schedule_for("auto", shape, dtype, preset("h200"), **kw)


def test_auto_groups_its_deep_64x128_splits_by_tile_columns_where_the_clusters_fit():
    """189x1512x6736 (3 tile rows, 108 CTAs of 35 iterations): auto's aligned splits on 64x128x64 run
    grouped by 3 (clusters of three sharing B); without multicast, or on the H100 preset, ungrouped. A
    grid past the clusters' residency (cluster_slots), or splits shorter than PAIRED_SPLIT_MIN_ITERS, stay ungrouped."""
    from streamk.target import preset

    shape = GemmShape(189, 1512, 6736)
    s, plain = _auto_on_h200(shape), _auto_on_h200(shape, multicast=False)
    assert s.tile == SM90_M64_TILE and column_rows(s) == 3 and column_rows(plain) == 0
    assert (s.grid, s.fixup) == (plain.grid, plain.fixup) and s.grid <= cluster_slots(3, 132) == 117
    assert s.problem.total_iters // s.grid >= PAIRED_SPLIT_MIN_ITERS
    from streamk.gpu.decide.schedule import schedule_for

    assert column_rows(schedule_for("auto", shape, "float16", preset("h100"), tile=SM90_M64_TILE)) == 0
    wide = make_schedule("fixed-split", shape, SM90_M64_TILE, Machine(132, 1), splits=4)  # 144 CTAs
    short = make_schedule("fixed-split", GemmShape(189, 1512, 1536), SM90_M64_TILE, Machine(132, 1), splits=3)
    assert column_splits(True, SPEC, plain, 132) == 3
    assert column_splits(True, SPEC, wide, 132) == 0 and column_splits(True, SPEC, short, 132) == 0
    assert column_splits(False, SPEC, plain, 132) == 0


def test_auto_runs_few_row_deep_shapes_as_grouped_64x128_splits_where_they_fill_half_the_sms():
    """launches.column_split_count: 182x1264x6456 (3 tile rows of 64, 101 iterations a tile) runs 3 splits
    of 33 iterations on 90 CTAs in clusters of three, in place of auto's sm80 64x64x32 pick; 140x1264x4784
    would run 2 splits on 60 CTAs, under half the SMs, and keeps auto's pick; so do launches without
    multicast and the H100 preset."""
    from streamk.gpu.decide.launches import COLUMN_MIN_FILL, column_split_count
    from streamk.target import preset

    s = _auto_on_h200(GemmShape(182, 1264, 6456))
    assert (s.decomposition, s.tile, s.grid, s.fixup) == ("fixed-split", SM90_M64_TILE, 90, "owner-waits")
    assert column_rows(s) == 3 and cluster_shape(True, False, SPEC, s) == (3, 1)
    assert column_split_count(GemmShape(140, 1264, 4784), 132) == 0 and 60 < COLUMN_MIN_FILL * 132
    assert _auto_on_h200(GemmShape(140, 1264, 4784)).tile != SM90_M64_TILE
    assert column_rows(_auto_on_h200(GemmShape(182, 1264, 6456), multicast=False)) == 0
    from streamk.gpu.decide.schedule import schedule_for

    assert column_rows(schedule_for("auto", GemmShape(182, 1264, 6456), "float16", preset("h100"))) == 0


def test_schedule_target_says_where_a_tile_columns_clusters_share_b(capsys):
    """`streamk schedule auto --target h200` names the clusters of three of 182x1264x6456's column launch."""
    from streamk.cli import main

    assert main(["schedule", "auto", "--shape", "182x1264x6456", "--target", "h200"]) == 0
    out = capsys.readouterr().out
    assert "clusters of 3 CTAs on one tile column's 3 tile rows share each stage's B" in out
