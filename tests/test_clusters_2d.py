"""Clusters of 2x2 CTAs that share A and B (gpu/clusters.py share words, decide.launches
QUAD_CLUSTER, the quads tile order): which CTAs form a cluster, which boxes each rank loads and
multicasts to whom, and how many arrivals free a stage, checked on a model of the kernel's loads
(clusters.stage_sources); no GPU needed."""

from types import SimpleNamespace

import numpy as np
import pytest

from streamk.fixup import plan_fixup
from streamk.gpu.clusters import CLUSTER, QUAD, SHARE_BITS, release_count, share_words, stage_sources
from streamk.gpu.table import UNIT_FIELDS, build_table
from streamk.sched import make_schedule
from streamk.schedule import ScheduleError, check_tile_order, tile_coordinates
from streamk.shapes import GemmShape, Machine, TileShape

TILE = TileShape(128, 128, 64)
H200 = Machine(132, 1)
TM, TN, KB, KE = (UNIT_FIELDS.index(f) for f in ("tile_m", "tile_n", "k_begin", "k_end"))
# (m, n, k): issue 42's mid-size shapes (2 x 29, 2 x 29, 3 x 14, 12 x 11 tiles of 128x128), then
# every parity of tile rows and columns, one tile row or column, a single tile
SHAPES = [(168, 3712, 2088), (149, 3624, 3160), (263, 1688, 4064), (1536, 1408, 2088), (512, 512, 256),
          (640, 512, 256), (512, 640, 256), (640, 640, 200), (128, 1280, 128), (1280, 128, 128), (100, 100, 64),
          (384, 384, 64)]


def _quads(m: int, n: int, k: int, tile: TileShape = TILE, grid: int | None = None):
    options = {} if grid is None else {"grid": grid}
    s = make_schedule("data-parallel", GemmShape(m, n, k), tile, H200, **options).with_tile_order("quads-8")
    return s, build_table(plan_fixup(s))


@pytest.mark.parametrize("order", ["quads-2", "quads-4", "quads-8"])
def test_the_quads_order_covers_every_tile_once_in_2x2_blocks_then_pairs(order):
    for tiles_m in range(1, 10):
        for tiles_n in range(1, 10):
            t = np.arange(tiles_m * tiles_n)
            tm, tn = tile_coordinates(order, tiles_m, tiles_n, t)
            assert len(set(zip(tm.tolist(), tn.tolist()))) == len(t), (order, tiles_m, tiles_n)
            assert (tm >= 0).all() and (tm < tiles_m).all() and (tn >= 0).all() and (tn < tiles_n).all()
            quads = 4 * (tiles_m // 2) * (tiles_n // 2)
            for q in range(0, quads, 4):  # rank r + 2c on tile (2i + r, 2j + c)
                assert tm[q] % 2 == 0 and tn[q] % 2 == 0, (order, tiles_m, tiles_n, q)
                assert [(tm[q + r] - tm[q], tn[q + r] - tn[q]) for r in range(4)] == [(0, 0), (1, 0), (0, 1), (1, 1)]
            pairs = (tiles_m * tiles_n - quads) // 2 * 2  # the edges' pairs, each on an even index
            for p in range(quads, quads + pairs, 2):
                assert (tm[p] == tm[p + 1] and tn[p + 1] == tn[p] + 1) or (tn[p] == tn[p + 1] and tm[p + 1] == tm[p] + 1)


def test_the_quads_order_is_checked():
    assert check_tile_order("quads-8") == "quads-8"
    for bad in ("quads-3", "quads-0", "quads-", "quads"):
        with pytest.raises(ScheduleError, match="quads-G"):
            check_tile_order(bad)


def _delivered(words: np.ndarray, size: int, b_boxes: int, table, kt: int) -> None:
    """Every CTA with units receives each box of its stage exactly once, from a CTA of its cluster
    running the same data (A: its tile row, B: its tile column, over the same k ranges); empty
    CTAs receive nothing."""
    offsets = np.concatenate([table.cta_offsets, np.full(len(words) - table.grid, table.cta_offsets[-1])])
    sources = stage_sources(words, np.diff(offsets) > 0, size, b_boxes, kt)
    for cta, got in enumerate(sources):
        mine = table.units[offsets[cta]:offsets[cta + 1]]
        if len(mine) == 0:
            assert not got, (cta, got)
            continue
        assert sorted(got) == [("A", 0)] + [("B", box) for box in range(b_boxes)], (cta, kt, got)
        for (operand, box), ranks in got.items():
            assert len(ranks) == 1, (cta, operand, box, ranks)
            theirs = table.units[offsets[cta - cta % size + ranks[0]]:offsets[cta - cta % size + ranks[0] + 1]]
            field = TM if operand == "A" else TN
            assert len(theirs) == len(mine) and (theirs[:, [field, KB, KE]] == mine[:, [field, KB, KE]]).all(), \
                (cta, operand, box, ranks)


def _arrivals(words: np.ndarray, busy: np.ndarray, size: int, b_boxes: int, consumers: int) -> None:
    """Every CTA writing into a CTA's stage counts that CTA's consumers among its stage's releases
    (so it never refills a stage the other still reads), and each empty barrier's count is exactly
    the arrivals it gets: CONSUMERS from this CTA and from each CTA it writes into."""
    writers = [set() for _ in words]
    for kt in range(4):
        for cta, got in enumerate(stage_sources(words, busy, size, b_boxes, kt)):
            writers[cta] |= {cta - cta % size + r for ranks in got.values() for r in ranks}
    for cta, word in enumerate(words.tolist()):
        rank = cta % size
        mask = (word | word >> SHARE_BITS) & 0xFF if word else 1 << rank
        arrive_at = {cta - rank + r for r in range(size) if mask >> r & 1}  # the kernel's release loop
        for writer in writers[cta]:
            assert writer in arrive_at, (cta, writer, bin(word))
        arrivals = sum(consumers for other, w in enumerate(words.tolist()) if other - other % size == cta - rank
                       and cta in {other - other % size + r for r in range(size)
                                   if ((w | w >> SHARE_BITS) & 0xFF if w else 1 << other % size) >> r & 1})
        assert release_count(word, rank, consumers) == arrivals, (cta, bin(word))


def _busy(table, words: np.ndarray) -> np.ndarray:
    """The CTAs of a launch of ``len(words)`` CTAs that run units (the pads do not)."""
    return np.append(np.diff(table.cta_offsets) > 0, np.zeros(len(words) - table.grid, bool))


@pytest.mark.parametrize("m,n,k", SHAPES)
@pytest.mark.parametrize("size", [QUAD, CLUSTER])
def test_every_cta_receives_each_of_its_boxes_exactly_once(m, n, k, size):
    # (64x128x64 on 168x3712x2088: 3 x 29 tiles, so a cluster holds an A group of three)
    for tile, b_boxes in ((TILE, 2), (TileShape(128, 192, 64), 3), (TileShape(128, 256, 64), 4),
                          (TileShape(64, 128, 64), 2)):
        s, table = _quads(m, n, k, tile)
        words = share_words(table, size)
        if words is None:  # a single tile: nothing to share
            assert s.problem.tiles == 1
            continue
        assert len(words) == -(-s.grid // size) * size
        for kt in range(3):
            _delivered(words, size, b_boxes, table, kt)
        _arrivals(words, _busy(table, words), size, b_boxes, consumers=2)


def test_no_words_means_every_cta_loads_its_own_boxes():
    words = np.zeros(8, np.int32)
    for got in stage_sources(words, np.ones(8, bool), QUAD, 2, 0):
        assert got == {("A", 0): [got[("A", 0)][0]], ("B", 0): got[("B", 0)], ("B", 1): got[("B", 1)]}
    assert release_count(0, 3, 2) == 2


def _groups(words: np.ndarray, size: int) -> list[tuple[int, int]]:
    return [((w & 0xFF), (w >> SHARE_BITS) & 0xFF) for w in words.tolist()]


def test_a_2x2_block_shares_a_along_rows_and_b_along_columns():
    # 168x3712x2088: 2 x 29 tiles: 14 blocks, then the odd column's pair (one B), then two pads
    s, table = _quads(168, 3712, 2088)
    words = share_words(table, QUAD)
    assert s.grid == 58 and len(words) == 60
    assert _groups(words, QUAD)[:4] == [(0b0101, 0b0011), (0b1010, 0b0011), (0b0101, 0b1100), (0b1010, 0b1100)]
    assert _groups(words, QUAD)[:56] == _groups(words, QUAD)[:4] * 14
    assert _groups(words, QUAD)[56:] == [(0b0001, 0b0011), (0b0010, 0b0011), (0b0100, 0b0100), (0b1000, 0b1000)]
    # a 2x2 block of 128x128x64 tiles: each CTA reads 16 KB of its 32 KB stage from L2 per iteration
    assert all(release_count(w, r % QUAD, 2) == 6 for r, w in enumerate(words[:56].tolist()))


def test_an_odd_tile_row_runs_as_pairs_that_share_a():
    # 263x1688x4064: 3 x 14 tiles: 7 blocks, then the last row's 7 pairs along n: two pairs a cluster
    # of four, all four CTAs on that row (one A, shared four ways: each loads every fourth stage's),
    # the last pair beside two pads
    s, table = _quads(263, 1688, 4064)
    words = share_words(table, QUAD)
    groups = _groups(words, QUAD)
    assert groups[28:32] == [(0b1111, 1 << r) for r in range(4)]
    assert groups[40:44] == [(0b0011, 0b0001), (0b0011, 0b0010), (0b0100, 0b0100), (0b1000, 0b1000)]
    assert [release_count(int(w), r % QUAD, 2) for r, w in enumerate(words[28:32])] == [8] * 4
    one_row, table = _quads(128, 1280, 128)  # m <= 128: 1x2 clusters along the only tile row
    assert _groups(share_words(table, CLUSTER), CLUSTER) == [(0b11, 0b01), (0b11, 0b10)] * 5


def test_clusters_of_two_on_the_same_table_are_the_blocks_column_pairs():
    s, table = _quads(512, 512, 256)  # 4 x 4 tiles: 4 blocks
    assert _groups(share_words(table, CLUSTER), CLUSTER) == [(0b01, 0b11), (0b10, 0b11)] * 8


def test_persistent_ctas_share_where_their_tiles_stay_in_blocks():
    # 132 tiles on 64 persistent CTAs (a multiple of four): CTA c's tiles c, c + 64, ...; the last
    # wave's 4 tiles land on CTAs 0-3, so the clusters whose CTAs run as many tiles still share
    s, table = _quads(1536, 1408, 2088, grid=64)
    words = share_words(table, QUAD)
    assert s.grid == 64 and (words != 0).all()
    for kt in range(2):
        _delivered(words, QUAD, 2, table, kt)
    _arrivals(words, _busy(table, words), QUAD, 2, 2)


def test_split_tiles_never_share_in_clusters_of_four():
    s = make_schedule("stream-k", GemmShape(1536, 1408, 2088), TILE, H200).with_tile_order("quads-8")
    table = build_table(plan_fixup(s))
    words = share_words(table, QUAD)
    if words is not None:  # only clusters of WRITE units whose twins run the same data
        _arrivals(words, _busy(table, words), QUAD, 2, 2)
        for kt in range(2):
            _delivered(words, QUAD, 2, table, kt)


def _decision(schedule: str, tuning, tile: str = "128x128x64", m: int = 1536, n: int = 1408, k: int = 2088,
              **options):
    from streamk.gpu.decide import decide
    from streamk.gpu.decide.operands import Operand
    from streamk.gpu.request import request
    from streamk.target import preset

    def op(rows, cols):
        return Operand(None, "torch", 0, (rows, cols), (cols, 1), "float16")

    return decide(op(m, k), op(k, n), None, preset("h200"), request(schedule, None, tile, options=options,
                                                                    tuning=tuning))


def test_2x2_clusters_only_where_asked_and_only_on_whole_tiles():
    from streamk.gpu.decide.launches import NO_CLUSTER, PAIR_CLUSTER, QUAD_CLUSTER, QUAD_ORDER
    from streamk.gpu.request import Tuning

    plain = _decision("data-parallel", Tuning())
    assert plain.cluster == PAIR_CLUSTER and plain.schedule.tile_order != QUAD_ORDER
    quads = _decision("data-parallel", Tuning(cluster_2d=True))
    assert quads.cluster == QUAD_CLUSTER and quads.schedule.tile_order == QUAD_ORDER
    assert np.array_equal(quads.schedule.units, plain.schedule.units)  # the same tile indices, read in blocks
    for tile in ("128x256x64", "128x192x64", "64x128x64", "64x256x64"):
        assert _decision("data-parallel", Tuning(cluster_2d=True), tile).cluster == QUAD_CLUSTER
    assert _decision("data-parallel", Tuning(cluster_2d=True), "128x64x64").cluster == PAIR_CLUSTER  # none
    split = _decision("stream-k", Tuning(cluster_2d=True), m=1024)  # 88 tiles on 132 CTAs: split tiles keep pairs
    assert split.cluster == PAIR_CLUSTER and split.schedule.tile_order != QUAD_ORDER
    assert _decision("data-parallel", Tuning(multicast=False)).cluster == NO_CLUSTER
    assert _decision("data-parallel", Tuning(cluster_2d=True), "128x128x32").cluster == NO_CLUSTER  # sm80


def test_auto_runs_short_whole_tiles_in_2x2_clusters():
    """auto reads its schedule in 2x2 blocks where each 128-row tile runs at most QUAD_MAX_ITERATIONS
    (and so launches in clusters of four), not deeper, not on 64-row tiles, not without multicast, not in an order the caller gave;
    `streamk schedule auto --target` prints the order gemm() runs."""
    from streamk.gpu.decide.launches import QUAD_CLUSTER, QUAD_MAX_ITERATIONS, QUAD_ORDER
    from streamk.gpu.decide.schedule import schedule_for
    from streamk.gpu.request import Tuning
    from streamk.target import preset

    short_k = 64 * QUAD_MAX_ITERATIONS
    short = _decision("auto", Tuning(), None, m=4979, n=360, k=short_k)
    assert short.cluster == QUAD_CLUSTER and short.schedule.tile_order == QUAD_ORDER
    cli = schedule_for("auto", GemmShape(4979, 360, short_k), "float16", preset("h200"))
    assert cli.tile_order == QUAD_ORDER and np.array_equal(cli.units, short.schedule.units)
    deep = _decision("auto", Tuning(), None, m=4979, n=384, k=short_k + 64)  # rows of whole sectors: the next test
    assert deep.cluster != QUAD_CLUSTER and deep.schedule.tile_order != QUAD_ORDER
    plain = _decision("auto", Tuning(multicast=False), None, m=4979, n=360, k=short_k)
    assert plain.schedule.tile_order != QUAD_ORDER
    given = _decision("auto", Tuning(), None, m=4979, n=360, k=short_k, tile_order="row-major")
    assert given.schedule.tile_order == "row-major" and given.cluster != QUAD_CLUSTER
    rows64 = _decision("auto", Tuning(), None, m=249, n=2576, k=short_k)  # 64-row tiles keep their pairs
    assert rows64.schedule.tile.bm == 64 and rows64.cluster != QUAD_CLUSTER


@pytest.mark.parametrize("m, n, k, quads", [
    (3824, 408, 7096, True),    # A's and B's rows straddle 32-byte sectors; 120 tiles of 111 iterations
    (5092, 280, 1312, True),    # B's straddle and no pairs share B (row-major): the clusters share it
    (3728, 400, 1064, True),    # A's straddle; B's rows (800 bytes) are no whole 128-byte lines
    (6154, 256, 1256, False),   # A's straddle but B's rows are whole lines: sharing that B cost more
    (511, 2776, 3056, False),   # B's straddle, and pairs of tile rows share B already
    (2791, 512, 4864, False),   # rows of whole sectors: nothing to save
    (406, 2552, 888, False),    # 80 tiles: under QUAD_WAVE_MIN_FILL of the SMs
])
def test_auto_runs_one_deep_wave_in_2x2_clusters_where_shared_rows_straddle(m, n, k, quads):
    """Deeper than QUAD_MAX_ITERATIONS, auto's one wave of whole 128x128x64 tiles on at least
    QUAD_WAVE_MIN_FILL of the SMs runs in 2x2 clusters where an operand the clusters newly share
    straddles L2 sectors (launches.auto_quads, LOG.md v158); the same units either way; not on the
    H100 preset (unmeasured there) nor without multicast."""
    from streamk.gpu.decide.launches import QUAD_CLUSTER, QUAD_WAVE_MIN_FILL, QUAD_MAX_ITERATIONS, QUAD_ORDER
    from streamk.gpu.decide.schedule import schedule_for
    from streamk.gpu.request import Tuning
    from streamk.target import preset

    d = _decision("auto", Tuning(), None, m=m, n=n, k=k)
    s = d.schedule
    assert (s.tile.bm, s.tile.bn) == (128, 128) and s.grid == s.problem.tiles <= 132
    assert s.problem.iters_per_tile > QUAD_MAX_ITERATIONS
    assert (d.cluster == QUAD_CLUSTER) == quads and (s.tile_order == QUAD_ORDER) == quads
    if quads:
        assert s.grid >= QUAD_WAVE_MIN_FILL * 132
        plain = _decision("auto", Tuning(multicast=False), None, m=m, n=n, k=k).schedule
        assert plain.tile_order != QUAD_ORDER and np.array_equal(np.sort(plain.units[:, 0]), np.sort(s.units[:, 0]))
        assert schedule_for("auto", GemmShape(m, n, k), "float16", preset("h100")).tile_order != QUAD_ORDER
    assert schedule_for("auto", GemmShape(m, n, k), "float16", preset("h200")).tile_order == s.tile_order


def test_auto_runs_many_short_wide_tiles_on_persistent_ctas_in_2x2_clusters():
    """From two waves of 128x256 tiles of 9-32 MAC iterations auto runs whole 128x256x64 tiles on one
    persistent CTA an SM in QUAD_ORDER (launches.persistent_quads): every tile once, asking for 2x2
    clusters (bind.py launches pairs where fours do not fit the grid). Not at one wave, nor where the
    last wave is under 3/4 full, not deeper than PERSISTENT_DP_MAX_ITERS (at 33-64 iterations auto's own
    data-parallel launches go persistent too: the next test), not without multicast, not where the caller
    names the tile, not where the calibrated model moves auto to another schedule (2049x4416x1144: DP on
    128x192x64), and not on the H100 preset (unmeasured there). `streamk schedule auto --target`
    prints what gemm() runs."""
    from streamk.gpu.decide.launches import PERSISTENT_DP_MAX_ITERS, QUAD_CLUSTER, QUAD_ORDER
    from streamk.gpu.decide.schedule import schedule_for
    from streamk.gpu.request import Tuning
    from streamk.target import preset

    m, n, k = 4913, 7576, 840  # 39 x 30 = 1170 tiles of 128x256 (8.9 waves), 14 iterations each
    d = _decision("auto", Tuning(), None, m=m, n=n, k=k)
    s = d.schedule
    assert d.cluster == QUAD_CLUSTER and s.tile_order == QUAD_ORDER and s.grid == 132
    assert (s.tile.bm, s.tile.bn) == (128, 256) and s.units.shape[0] == s.problem.tiles
    assert np.array_equal(np.sort(s.units[:, 0]), np.arange(s.problem.tiles))  # each tile once, whole
    assert np.all(s.units[:, 1] == 0) and np.all(s.units[:, 2] == s.problem.iters_per_tile)
    cli = schedule_for("auto", GemmShape(m, n, k), "float16", preset("h200"))
    assert np.array_equal(cli.units, s.units) and np.array_equal(cli.cta_offsets, s.cta_offsets)
    one_wave = _decision("auto", Tuning(), None, m=1536, n=3072, k=k).schedule  # 144 tiles
    thin_last_wave = _decision("auto", Tuning(), None, m=3072, n=3072, k=640).schedule  # 288 tiles: 73% of 3 waves
    deep = _decision("auto", Tuning(), None, m=m, n=n, k=64 * PERSISTENT_DP_MAX_ITERS + 1).schedule
    plain = _decision("auto", Tuning(multicast=False), None, m=m, n=n, k=k)
    named = _decision("auto", Tuning(), "128x256x64", m=m, n=n, k=k)
    model = _decision("auto", Tuning(), None, m=2049, n=4416, k=1144).schedule
    assert (model.tile.bn, model.decomposition) == (192, "data-parallel")
    for other in (one_wave, thin_last_wave, deep, plain.schedule, named.schedule, model):
        assert not (other.tile.bn == 256 and other.grid == 132 and other.tile_order == QUAD_ORDER)
    h100 = schedule_for("auto", GemmShape(m, n, k), "float16", preset("h100"))
    assert h100.tile_order != QUAD_ORDER


def test_auto_runs_its_plain_data_parallel_wide_tiles_on_persistent_ctas():
    """Where auto's own pick is data-parallel on 128x256x64 over more than a wave of CTAs, at most
    PERSISTENT_DP_MAX_ITERS MAC iterations a tile, gemm() runs the same whole tiles on one persistent CTA an SM
    in QUAD_ORDER (launches.persistent_in_place_of_dp; fresh shapes 1.05-1.12x, LOG.md v139); not deeper, not
    without multicast, not where the caller names the schedule."""
    from streamk.gpu.catalogue import spec_for_tile
    from streamk.gpu.decide.launches import PERSISTENT_DP_MAX_ITERS, QUAD_CLUSTER, QUAD_ORDER, persistent_in_place_of_dp
    from streamk.gpu.request import Tuning

    spec = spec_for_tile("float16", "128x256x64")
    for m, n, k in ((4307, 1480, 1072), (3792, 5296, 2824), (4096, 4096, 4096)):  # 17, 45 and 64 iterations
        plain = _decision("auto", Tuning(multicast=False), None, m=m, n=n, k=k).schedule
        assert persistent_in_place_of_dp(plain, spec, 132)  # auto's own: one whole wide tile a CTA
        d = _decision("auto", Tuning(), None, m=m, n=n, k=k)
        s = d.schedule
        assert d.cluster == QUAD_CLUSTER and s.tile_order == QUAD_ORDER and s.grid == 132 and s.tile == plain.tile
        assert np.array_equal(np.sort(s.units[:, 0]), np.arange(s.problem.tiles))  # each tile once, whole
        assert np.all(s.units[:, 1] == 0) and np.all(s.units[:, 2] == s.problem.iters_per_tile)
        named = _decision("data-parallel", Tuning(), "128x256x64", m=m, n=n, k=k).schedule
        assert named.grid == named.problem.tiles  # a named schedule runs as named
    deep = _decision("auto", Tuning(), None, m=1623, n=6872, k=7208).schedule  # 113 iterations
    assert deep.problem.iters_per_tile > PERSISTENT_DP_MAX_ITERS and deep.grid == deep.problem.tiles


class _StandIn:
    """build_plan's view of an H200 without CUDA: one CTA an SM; ``fours``: the CTAs clusters of
    four may hold at once."""

    def __init__(self, fours: int) -> None:
        self.sms, self.arch, self.name, self.fours, self.uploads = 132, "sm_90a", "stand-in", fours, []

    def block_size(self, name):
        return 384

    def smem_bytes(self, name):
        return 201792

    def occupancy(self, name, threads, smem):
        return 1

    def one_per_sm_smem(self, name, threads, smem):
        return smem

    def cluster_residency(self, name, threads, smem, cluster):
        return self.fours if cluster == QUAD else 132

    def function(self, name, smem=0):
        return name

    def upload(self, array):
        self.uploads.append(array.copy())
        return SimpleNamespace(ptr=1 << 32)


@pytest.mark.parametrize("fours,size", [(132, QUAD), (128, CLUSTER)])
def test_bind_launches_fours_unless_they_add_a_wave(fours, size):
    """132 tiles: clusters of four where 132 CTAs of them fit at once, else the blocks' column
    pairs in clusters of two (clusters of four on 128 SMs would run a second wave)."""
    from streamk.gpu.request import Tuning
    from streamk.gpu.runtime.bind import bind

    d = _decision("data-parallel", Tuning(cluster_2d=True))
    dev = _StandIn(fours)
    bound = bind(dev, d, Tuning(cluster_2d=True))
    main = bound.steps[-1]
    assert main.cluster == size and main.grid == 132 and bound.shares != 0
    words = dev.uploads[-1][-132:]
    assert (words != 0).all()
    assert words[:4].tolist() == ([0b0101 | 0b0011 << 8, 0b1010 | 0b0011 << 8, 0b0101 | 0b1100 << 8,
                                   0b1010 | 0b1100 << 8] if size == QUAD else
                                  [0b01 | 0b11 << 8, 0b10 | 0b11 << 8] * 2)


def test_bind_keeps_todays_pairs_without_the_tuning():
    from streamk.gpu.request import Tuning
    from streamk.gpu.runtime.bind import bind

    d = _decision("data-parallel", Tuning(), tile_order="grouped-8")
    bound = bind(_StandIn(128), d, Tuning())
    assert bound.steps[-1].cluster == CLUSTER and d.schedule.tile_order == "grouped-8"


def test_the_bench_variant_asks_for_2x2_clusters():
    from streamk.bench.variants import variant
    from streamk.gpu.request import Tuning

    assert variant("auto+mc2d", lambda: 132)["_tuning"] == Tuning(cluster_2d=True)
    assert variant("data-parallel#128x256x64+mc2d+nopdl", lambda: 132)["_tuning"] == Tuning(pdl=False, cluster_2d=True)
    with pytest.raises(ScheduleError, match="mc2d"):
        variant("auto+nomc+mc2d", lambda: 132)


@pytest.mark.parametrize("m, n, k, tile, quads", [
    (2928, 880, 7192, "128x192", True),   # A's rows straddle, B's (1,760 bytes) are no whole lines
    (6259, 312, 1000, "128x192", True),   # both straddle; pairs share B already, the clusters add A
    (1884, 1344, 3752, "128x192", False),  # A's straddle, B's are whole 128-byte lines and not yet shared
    (497, 4704, 2880, "128x192", False),  # rows of whole sectors
    (3442, 176, 1656, "64x128", True),    # A's straddle (pairs of 64-row tiles always share B)
    (1672, 408, 200, "64x128", True),     # ... at any depth on the 64-row tile
    (224, 3104, 2896, "64x128", False),   # rows of whole sectors
])
def test_one_wave_of_128x192_or_64x128_tiles_runs_in_2x2_clusters_by_the_same_rule(m, n, k, tile, quads):
    """The deep-wave rule of 128x128x64 (launches.auto_quads) on one wave of 128x192x64 tiles deeper than
    QUAD_MAX_ITERATIONS and of 64x128x64 tiles (LOG.md v161): the same units, in QUAD_ORDER or not."""
    from streamk.gpu.decide.launches import QUAD_CLUSTER, QUAD_WAVE_MIN_FILL, QUAD_ORDER
    from streamk.gpu.request import Tuning

    d = _decision("auto", Tuning(), None, m=m, n=n, k=k)
    s = d.schedule
    assert f"{s.tile.bm}x{s.tile.bn}" == tile and QUAD_WAVE_MIN_FILL * 132 <= s.grid == s.problem.tiles <= 132
    assert (d.cluster == QUAD_CLUSTER) == quads and (s.tile_order == QUAD_ORDER) == quads
    plain = _decision("auto", Tuning(multicast=False), None, m=m, n=n, k=k).schedule
    assert np.array_equal(np.sort(plain.units[:, 0]), np.sort(s.units[:, 0]))
