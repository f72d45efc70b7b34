"""auto on the sm90 large tiles takes the calibrated model's pick where it predicts a gain of more
than MODEL_MARGIN (fixed-split: MODEL_SPLIT_MARGIN; streamk/gpu/decide/by_model.py), and on the sm80
fallback tiles data-parallel on 64x128x64 where it predicts that faster by MODEL_MARGIN, on row-major
decode-like shapes data-parallel on a decode oracle's tile by DECODE_MARGIN; elsewhere auto's rules stand.
Shapes from the H200 oracles (benchmarks/LOG.md v47, v61, v88, v95)."""

from __future__ import annotations

import pytest

from streamk.calibrate.candidates import predicted
from streamk.gpu.decide.by_model import (DECODE_MARGIN, DECODE_REDUCE_MARGIN, FALLBACK_TILES, MODEL_MARGIN,
                                         MODEL_MAX_WAVES, MODEL_SPLIT_MARGIN, is_persistent, model_pick, model_tiles)
from streamk.gpu.catalogue import DOT_T_TILE, SM90_M64_TILE
from streamk.gpu.decide.operands import decode_like
from streamk.gpu.decide.launches import QUAD_ORDER
from streamk.gpu.decide.schedule import clusters_order, schedule_for
from streamk.gpu.decide.tiles import choose_tile, packed_bytes
from streamk.sched import make_schedule
from streamk.shapes import GemmShape
from streamk.target import preset

H200 = preset("h200")


@pytest.mark.parametrize("mnk, decomposition, tile", [
    ((3458, 224, 5936), "fixed-split", "128x128x64"),  # auto's DP on 56 tiles measured 1.26x fixed-split's time
    ((1448, 480, 4256), "fixed-split", "128x128x64"),  # predicted 16% faster; auto's DP measured 1.16x
])
def test_model_overrules_auto_where_it_predicts_a_gain(mnk, decomposition, tile):
    shape = GemmShape(*mnk)
    auto = schedule_for("auto", shape, "float16", H200, tile=choose_tile(shape, "float16", H200))
    s = model_pick(shape, "float16", H200, auto)
    assert (s.decomposition, str(s.tile)) == (decomposition, tile), f"{mnk}: {s.decomposition} on {s.tile}"
    final = schedule_for("auto", shape, "float16", H200)  # the pick, or auto's 64x128x64 launch priced faster still
    assert final == s or (str(final.tile) == "64x128x64" and predicted(final, "float16", H200) < predicted(s, "float16", H200))


@pytest.mark.parametrize("mnk", [(1576, 488, 2520), (392, 784, 4176)])
def test_auto_runs_its_64x128_launch_where_the_model_prices_it_faster(mnk):
    # auto's 128x128x64 launches priced as launched, against its own 64x128x64 launch (in 2x2 clusters where
    # launches.auto_quads takes them): held out, the shapes this moves ran 1.065x (FP16; LOG.md v163)
    from streamk.gpu.decide.by_model import narrow_pick

    shape = GemmShape(*mnk)
    s = schedule_for("auto", shape, "float16", H200)
    assert str(s.tile) == "64x128x64", f"{mnk}: {s.tile}"
    assert s == schedule_for("auto", shape, "float16", H200, tile=SM90_M64_TILE)
    wide = schedule_for("auto", shape, "float16", H200, tile=choose_tile(shape, "float16", H200))
    assert narrow_pick("float16", H200, wide, s) and not narrow_pick("float16", preset("h100"), wide, s)


@pytest.mark.parametrize("mnk", [(2790, 936, 7760), (7613, 1072, 2080), (796, 2320, 4376), (1089, 2088, 5392)])
def test_the_rules_run_the_models_former_128x192_picks(mnk):
    # v47's model picks (auto's 128x256x64 DP 1.16x / 1.23x / 1.08x; 0.93x in one run); decide.tiles.narrower_wide
    # takes them: at most 1400 columns padded less (LOG.md v56), one wave of 128x192 tiles where 128x256's
    # leave SMs idle (LOG.md v62)
    shape = GemmShape(*mnk)
    s = schedule_for("auto", shape, "float16", H200)
    assert choose_tile(shape, "float16", H200) == s.tile and str(s.tile) == "128x192x64", f"{mnk}: {s.tile}"
    assert s.grid == s.problem.tiles and not is_persistent(s), f"{mnk}: grid {s.grid} for {s.problem.tiles} tiles"


@pytest.mark.parametrize("mnk", [(3458, 224, 5936), (2790, 936, 7760), (1996, 2232, 1176), (700, 900, 3000)])
def test_the_pick_is_predicted_faster_by_the_margin_or_is_auto(mnk):
    shape = GemmShape(*mnk)
    auto = schedule_for("auto", shape, "float16", H200, tile=choose_tile(shape, "float16", H200))
    pick = model_pick(shape, "float16", H200, auto)
    margins = {"data-parallel": MODEL_MARGIN, "fixed-split": MODEL_SPLIT_MARGIN}
    auto_us = predicted(auto, "float16", H200)
    if pick is not auto:
        assert predicted(pick, "float16", H200) * (1 + margins[pick.decomposition]) < auto_us, mnk
    for t in model_tiles():
        for name, margin in margins.items():
            cand = make_schedule(name, shape, t, H200.machine("float16", t))
            us = predicted(cand, "float16", H200)
            if us * (1 + margin) < auto_us:  # a candidate past its margin: the pick is it or as fast
                assert pick is not auto and us >= predicted(pick, "float16", H200) - 1e-9, \
                    f"{mnk}: {name} on {t} is predicted faster than the pick"


@pytest.mark.parametrize("mnk", [(729, 1168, 2344), (2666, 296, 2576)])
def test_fixed_split_predicted_less_than_its_margin_faster_leaves_auto(mnk):
    # fixed-split on 128x128x64 predicted 6-12% faster than auto's launch, measured 1.15-1.25x slower
    # (H200 seeds 4267, 4265; LOG.md v61)
    shape = GemmShape(*mnk)
    auto = schedule_for("auto", shape, "float16", H200, tile=choose_tile(shape, "float16", H200))
    split = make_schedule("fixed-split", shape, auto.tile, H200.machine("float16", auto.tile))
    gain = predicted(auto, "float16", H200) / predicted(split, "float16", H200)
    assert 1 + MODEL_MARGIN < gain < 1 + MODEL_SPLIT_MARGIN, f"{mnk}: fixed-split predicted {gain:.3f}x faster"
    assert model_pick(shape, "float16", H200, auto) is auto
    # (both shapes then run one wave of 64x128x64 tiles: launches.one_wave_m64, after the model)
    s = schedule_for("auto", shape, "float16", H200)
    assert s.decomposition == "auto" and s.tile in (auto.tile, SM90_M64_TILE), f"{mnk}: {s.decomposition} on {s.tile}"


@pytest.mark.parametrize("mnk", [(500, 688, 5488), (375, 872, 3904)])
def test_auto_stream_k_under_separate_reduce_is_never_overruled(mnk, monkeypatch):
    # the model priced these launches slower than fixed-split (past MODEL_SPLIT_MARGIN with c_scatter,
    # LOG.md v66; 1.08-1.11x since v78's unit; about alike since v105), which measured 1.16x and 1.25x
    # slower (seeds 4267, 4258; LOG.md v61, v72): the guard keeps them whatever the model says
    import streamk.calibrate.candidates as candidates

    shape = GemmShape(*mnk)
    auto = schedule_for("auto", shape, "float16", H200, tile=choose_tile(shape, "float16", H200))
    assert auto.fixup == "separate-reduce" and auto.grid == H200.sms
    real = candidates.predicted
    # every candidate priced at a tenth of auto's launch
    monkeypatch.setattr(candidates, "predicted", lambda s, dtype, target, *args, **kwargs:
                        real(auto, dtype, target, *args, **kwargs) * (1 if s is auto else 0.1))
    assert model_pick(shape, "float16", H200, auto) is auto
    monkeypatch.undo()
    s = schedule_for("auto", shape, "float16", H200)
    assert s.decomposition == "auto" and s.fixup == "separate-reduce", f"{mnk}: {s.decomposition}, {s.fixup}"


def test_auto_stands_where_the_model_is_blind():
    persistent = schedule_for("auto", GemmShape(1769, 3848, 232), "float16", H200)  # 434 tiles on 132 CTAs
    assert is_persistent(persistent) and persistent.decomposition == "auto"
    # the sm80 64x64x32 fallback, where data-parallel on 64x128x64 is predicted slower
    small = schedule_for("auto", GemmShape(1011, 296, 2248), "float16", H200)
    assert str(small.tile) == "64x64x32" and small.decomposition == "auto"
    big = schedule_for("auto", GemmShape(8192, 8192, 8192), "float16", H200)
    assert big.problem.tiles > MODEL_MAX_WAVES * H200.sms and big.decomposition == "auto"


@pytest.mark.parametrize("mnk", [(972, 416, 1872), (195, 1792, 1568)])
@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_sm80_fallback_moves_to_data_parallel_64x128_where_predicted_faster(mnk, dtype):
    # auto's whole 64x64x32 tiles measured 1.161x and 1.043x that launch's time (fidelity seed 4333; LOG.md v88)
    shape = GemmShape(*mnk)
    auto = schedule_for("auto", shape, dtype, H200, tile=choose_tile(shape, dtype, H200))
    assert auto.tile in FALLBACK_TILES and auto.fixup != "separate-reduce"
    s = schedule_for("auto", shape, dtype, H200)
    assert (s.decomposition, s.tile) == ("data-parallel", SM90_M64_TILE), f"{mnk}: {s.decomposition} on {s.tile}"
    assert predicted(s, dtype, H200) * (1 + MODEL_MARGIN) < predicted(auto, dtype, H200)


@pytest.mark.parametrize("mnk, why", [
    ((231, 1392, 1008), "margin"),  # predicted 2% faster (seed 4333: 1.013x auto's time)
    ((156, 424, 176), "margin"),  # auto's 32x32x32 tiles: 64x128x64 predicted 1.8x slower
    ((217, 752, 2528), "separate-reduce"),  # predicted 11% faster (25% before v105), measured 1.12x slower (seed 4333)
])
def test_sm80_fallback_stays_below_the_margin_and_under_separate_reduce(mnk, why):
    shape = GemmShape(*mnk)
    auto = schedule_for("auto", shape, "float16", H200, tile=choose_tile(shape, "float16", H200))
    assert auto.tile in FALLBACK_TILES
    dp = make_schedule("data-parallel", shape, SM90_M64_TILE, H200.machine("float16", SM90_M64_TILE))
    gain = predicted(auto, "float16", H200) / predicted(dp, "float16", H200)
    if why == "margin":
        assert auto.fixup != "separate-reduce" and gain < 1 + MODEL_MARGIN, f"{mnk}: predicted {gain:.3f}x faster"
    else:  # the model priced auto's separate-reduce Stream-K 1.19-1.21x its time (median; 1.05x since v105): the guard keeps it
        assert auto.fixup == "separate-reduce" and gain > 1 + MODEL_MARGIN, f"{mnk}: {auto.fixup}, {gain:.3f}x"
    assert model_pick(shape, "float16", H200, auto) is auto
    s = schedule_for("auto", shape, "float16", H200)
    assert s.decomposition == "auto" and s.tile == auto.tile, f"{mnk}: {s.decomposition} on {s.tile}"


@pytest.mark.parametrize("mnk", [(735, 330, 1859), (8192, 64, 2048), (64, 8192, 2048)])
def test_sm80_fallback_stays_where_the_oracles_measured_nothing(mnk):
    # rows the 64x128x64 kernel packs (n 330), a decode-like side: data-parallel on 64x128x64 is predicted
    # faster past the margin, but no oracle shape was like them (by_model.FALLBACK_CANDIDATES)
    shape = GemmShape(*mnk)
    auto = schedule_for("auto", shape, "float16", H200, tile=choose_tile(shape, "float16", H200))
    dp = make_schedule("data-parallel", shape, SM90_M64_TILE, H200.machine("float16", SM90_M64_TILE))
    assert auto.tile in FALLBACK_TILES and auto.fixup != "separate-reduce"
    assert predicted(dp, "float16", H200) * (1 + MODEL_MARGIN) < predicted(auto, "float16", H200), mnk
    assert packed_bytes(shape, "float16", SM90_M64_TILE) or decode_like(shape.m, shape.n)
    assert model_pick(shape, "float16", H200, auto) is auto
    assert schedule_for("auto", shape, "float16", H200).tile == auto.tile


def test_a_caller_given_policy_or_tile_keeps_auto():
    shape = GemmShape(3458, 224, 5936)
    assert schedule_for("auto", shape, "float16", H200, fixup="owner-waits").decomposition == "auto"
    assert schedule_for("auto", shape, "float16", H200, tile=model_tiles()[0]).decomposition == "auto"


@pytest.mark.parametrize("mnk, tile", [
    ((13393, 16, 408), "64x64x32"),  # decode seed 4362: auto's 64x128x64 measured 1.888x the best; DP 64x64x32 the best
    ((15261, 16, 264), "64x64x32"),  # 4363: 2.005x -> the best
    ((8979, 16, 1056), "128x128x64"),  # 4363: 1.465x -> the best
])
def test_decode_row_major_takes_the_models_data_parallel_pick(mnk, tile):
    # by_model.DECODE_CANDIDATES: row-major A and B on the h200, predicted faster by DECODE_MARGIN (LOG.md v95)
    shape = GemmShape(*mnk)
    s = schedule_for("auto", shape, "float16", H200)
    assert (s.decomposition, str(s.tile)) == ("data-parallel", tile), f"{mnk}: {s.decomposition} on {s.tile}"
    auto = schedule_for("auto", shape, "float16", H200, tile=choose_tile(shape, "float16", H200))
    assert predicted(s, "float16", H200) * (1 + DECODE_MARGIN) < predicted(auto, "float16", H200)
    # not on torch's Linear layout (the rules of Target.row_major_decode stand aside there), nor off the h200
    assert schedule_for("auto", shape, "float16", H200, row_major=False).decomposition == "auto"
    assert schedule_for("auto", shape, "float16", preset("h100")).decomposition == "auto"
    assert model_pick(shape, "float16", H200, auto) is auto  # row_major not said: the oracles' layout not known


@pytest.mark.parametrize("mnk", [
    (2799, 8, 576),  # 64x64x32 -> DP 32x32x32 moved at a margin of 0.25 and ran 1.12x slower (seed 4362)
    (14567, 8, 1136),  # the dot tile under separate-reduce, below DECODE_REDUCE_MARGIN (DP 64x64x32 ran 1.205x its time)
])
def test_decode_row_major_keeps_auto_under_the_margin_or_separate_reduce(mnk):
    shape = GemmShape(*mnk)
    auto = schedule_for("auto", shape, "float16", H200, tile=choose_tile(shape, "float16", H200))
    s = schedule_for("auto", shape, "float16", H200)
    assert s.decomposition == "auto" and s.tile == auto.tile, f"{mnk}: {s.decomposition} on {s.tile}"


@pytest.mark.parametrize("mnk", [(3709, 8, 1360), (6864, 8, 576), (4, 8256, 1072)])
def test_decode_separate_reduce_launches_take_a_pick_past_their_own_margin(mnk):
    """auto's separate-reduce launches on decode-like row-major shapes (its dot and small tiles') give way
    to a data-parallel pick predicted DECODE_REDUCE_MARGIN faster (LOG.md v110: held out 1.21x on 12 fresh
    shapes; 3709x8x1360 on seed 4362: data-parallel 32x32x32 10.8 us against auto's 11.4)."""
    shape = GemmShape(*mnk)
    auto = schedule_for("auto", shape, "float16", H200, tile=choose_tile(shape, "float16", H200))
    assert auto.fixup == "separate-reduce" and decode_like(shape.m, shape.n)
    s = schedule_for("auto", shape, "float16", H200)
    assert s.decomposition == "data-parallel" and s.tile != auto.tile, f"{mnk}: {s.decomposition} on {s.tile}"
    assert predicted(s, "float16", H200) * (1 + DECODE_REDUCE_MARGIN) < predicted(auto, "float16", H200)
    assert model_pick(shape, "float16", H200, auto) is auto  # row_major not said: the oracles' layout not known


@pytest.mark.parametrize("mnk", [(2, 13592, 1848), (6, 13528, 2048), (3, 2688, 2440)])
def test_the_transposed_dot_tiles_separate_reduce_launches_take_a_pick_at_the_decode_margin(mnk):
    """Over auto's transposed dot tile (at most 8 rows) the model's pick needs DECODE_MARGIN only, not
    DECODE_REDUCE_MARGIN (LOG.md v117, v119: on their decode seeds data-parallel ran 3x2688x2440 in 8.8 us
    against the dot tile's 13.4): these picks are predicted faster by DECODE_MARGIN but not by
    DECODE_REDUCE_MARGIN."""
    shape = GemmShape(*mnk)
    auto = schedule_for("auto", shape, "float16", H200, tile=choose_tile(shape, "float16", H200))
    assert auto.fixup == "separate-reduce" and auto.tile == DOT_T_TILE
    s = schedule_for("auto", shape, "float16", H200, row_major=True)
    assert s.decomposition == "data-parallel" and s.tile != DOT_T_TILE, f"{mnk}: {s.decomposition} on {s.tile}"
    pick_us, auto_us = predicted(s, "float16", H200), predicted(auto, "float16", H200)
    assert pick_us * (1 + DECODE_MARGIN) < auto_us <= pick_us * (1 + DECODE_REDUCE_MARGIN)
    assert schedule_for("auto", shape, "float16", H200, row_major=False).tile == DOT_T_TILE  # not on x @ W.t()


@pytest.mark.parametrize("mnk", [(2609, 2360, 792), (6974, 1016, 760), (1763, 4328, 952), (3228, 3576, 376)])
def test_the_wide_persistent_launch_replaces_auto_where_predicted_faster(mnk):
    """Past launches.persistent_quads' wave and fill guards, and from 6 MAC iterations a tile, whole
    128x256x64 tiles on 132 persistent CTAs in QUAD_ORDER replace auto's launch where the model predicts
    them MODEL_MARGIN faster (by_model.wide_persistent_pick; 40 of 41 fresh shapes faster, LOG.md v126)."""
    from streamk.gpu.decide.launches import QUAD_ORDER, persistent_quads
    from streamk.gpu.catalogue import SM90_WIDE_TILE, spec_for_tile

    shape = GemmShape(*mnk)
    s = schedule_for("auto", shape, "float16", H200)
    assert s.tile == SM90_WIDE_TILE and s.grid == H200.sms and s.tile_order == QUAD_ORDER
    assert not persistent_quads(shape, spec_for_tile("float16", SM90_WIDE_TILE), H200.sms)  # the model's pick
    rules = schedule_for("auto", shape, "float16", H200, tile=choose_tile(shape, "float16", H200))
    assert predicted(s, "float16", H200) * (1 + MODEL_MARGIN) < predicted(rules, "float16", H200)


@pytest.mark.parametrize("mnk", [
    (2105, 2528, 776),  # 170 wide tiles in 1.3 waves: auto's 340 128x128 tiles end the shorter tail (0.91x, v74)
    (3072, 3072, 640),  # predicted 14% slower, ran 0.90x (v74)
    (4559, 5624, 240),  # 4 MAC iterations: predicted 1.11x faster, ran 0.935x (under WIDE_PERSISTENT_MIN_ITERS)
])
def test_the_wide_persistent_launch_stays_out_where_predicted_slower_or_too_short(mnk):
    """Where the model prices the wide persistent launch slower, or its tiles run fewer than
    WIDE_PERSISTENT_MIN_ITERS MAC iterations, auto keeps its 128x128x64 launch (LOG.md v74, v126)."""
    s = schedule_for("auto", GemmShape(*mnk), "float16", H200)
    assert (s.tile.bm, s.tile.bn) == (128, 128)


@pytest.mark.parametrize("mnk", [(7363, 168, 3016), (4678, 360, 5608)])
def test_auto_is_priced_in_the_clusters_it_launches_in(mnk):
    # one deep wave of 128x128x64 in 2x2 clusters (launches.auto_quads): priced unclustered, the model put a
    # 128x192x64 launch in its place that ran 1.26x / 1.38x slower (H200, LOG.md v160)
    shape = GemmShape(*mnk)
    tile = choose_tile(shape, "float16", H200)
    machine = H200.machine("float16", tile)
    ordered = schedule_for("auto", shape, "float16", H200, tile=tile)  # a tile given: no model, the clusters' order
    assert ordered.tile_order == QUAD_ORDER, f"{mnk}: auto_quads no longer takes it"
    auto = ordered.with_tile_order(H200.kernel("float16", tile).order_for(ordered.problem, machine.slots))
    launched = clusters_order(auto, "float16", H200, machine.sms, True, None, None)
    assert launched.tile_order == QUAD_ORDER
    assert predicted(launched, "float16", H200) < predicted(auto, "float16", H200)
    assert model_pick(shape, "float16", H200, auto) is not auto  # priced as if unclustered: overruled
    assert model_pick(shape, "float16", H200, auto, launched=launched) is auto
    s = schedule_for("auto", shape, "float16", H200)
    assert (s.decomposition, s.tile, s.tile_order) == ("auto", auto.tile, QUAD_ORDER), f"{mnk}: {s}"
