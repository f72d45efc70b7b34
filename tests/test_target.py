"""The Target: presets, the tiles they offer, and `streamk schedule --target` printing exactly the
Schedule the GPU backend resolves for the same operands (no GPU needed: the backend's own
resolution, ``streamk.gpu.decide``'s asked tile and ``schedule_for``, runs on host descriptions of
the operands)."""

import json
import math

import pytest

from streamk.cli import main
from streamk.errors import ScheduleError
from streamk.gpu.catalogue import tile_specs
from streamk.gpu.decide import asked_tile
from streamk.gpu.decide.operands import Operand
from streamk.gpu.decide.schedule import schedule_for
from streamk.schedule import Schedule
from streamk.shapes import GemmShape, Machine, TileShape
from streamk.sim.corpus import corpus
from streamk.target import PRESETS, for_arch, preset

SAMPLE = [tuple(int(v) for v in shape) for shape in corpus(200, 3)]


def resolve(target, a, b, schedule, fixup, tile, machine, options):
    """The Schedule the GPU backend resolves for ``a`` @ ``b`` as given (no orientation rule)."""
    return schedule_for(schedule, GemmShape(a.shape[0], b.shape[1], a.shape[1]), a.dtype, target,
                        tile=asked_tile(a.dtype, schedule, tile), fixup=fixup, machine=machine, **options)


def _cuda(shape, dtype):
    """A contiguous row-major CUDA tensor's description (what torch.randn(...).cuda() gives)."""
    return Operand(None, "cuda", 1 << 20, shape, (shape[1], 1), dtype)


def _cli(capsys, *argv) -> dict:
    assert main(list(argv)) == 0
    return json.loads(capsys.readouterr().out)


def test_presets_offer_exactly_the_shipped_tiles_with_the_paper_tile_first():
    for target in PRESETS.values():
        for dtype in target.dtypes():
            shipped = tuple(t for t, spec in tile_specs(dtype).items() if target.arch in spec.archs)
            assert target.tiles_for(dtype) == shipped, (target.name, dtype)
    h100, a100 = preset("h100"), preset("a100")
    assert (h100.arch, h100.sms, a100.arch, a100.sms) == ("sm_90a", 132, "sm_80", 108)
    assert h100.machine("float16", TileShape(128, 128, 32)) == Machine(132, 2)
    assert a100.machine("float16", TileShape(128, 128, 32)) == Machine(108, 1)  # 105 KB of 164 KB
    assert h100.machine("bfloat16", TileShape(128, 256, 32)) == Machine(132, 1)
    for tile in (TileShape(128, 128, 64), TileShape(128, 256, 64)):  # the sm90 kernels: one CTA per SM
        assert h100.machine("float16", tile) == Machine(132, 1) and h100.kernel("bfloat16", tile).tile_order == "grouped-8"
        assert tile not in a100.tiles_for("float16")
    assert h100.kernel("float16", TileShape(128, 256, 32)).tile_order is None
    # auto's DP on persistent CTAs: the sm90 128x128x64 kernel only (LOG.md v23)
    assert {t.tile: t.persistent_upto for t in h100.tiles if t.dtype == "float16" and t.persistent_upto} == \
        {TileShape(128, 128, 64): 16}
    assert h100.kernel("float16", TileShape(128, 128, 32)).reduce_costs is not None
    assert a100.kernel("float16", TileShape(128, 128, 32)).model_costs is None  # never measured
    assert preset(" H100 ") is h100
    with pytest.raises(ScheduleError, match="no target named 'b200' \\(there are: a100, h100, h200\\)"):
        preset("b200")
    with pytest.raises(ScheduleError, match="no float16 kernel on 96x96x32 tiles"):
        h100.kernel("float16", TileShape(96, 96, 32))
    with pytest.raises(ScheduleError, match="no float32 kernels"):
        h100.tiles_for("float32")
    live = for_arch("sm_90a", 114, "NVIDIA H100 PCIe")
    assert live.sms == 114 and live.tiles == h100.tiles and for_arch("sm_86", 84, "RTX 3090") is None


@pytest.mark.parametrize("name", list(PRESETS))
def test_schedule_auto_target_prints_what_the_gpu_runs_on_a_200_shape_sample(capsys, name):
    target = preset(name)
    tiles = set()
    for m, n, k in SAMPLE:
        for dtype in ("float16", "float64") if (m, n, k) == SAMPLE[0] else ("float16",):
            a, b = _cuda((m, k), dtype), _cuda((k, n), dtype)
            gpu = resolve(target, a, b, "auto", None, None, None, {})
            printed = _cli(capsys, "schedule", "auto", "--shape", f"{m}x{n}x{k}", "--dtype", dtype,
                           "--target", name, "--json")
            assert Schedule.from_json(printed) == gpu, (name, m, n, k, dtype)
            assert printed["sms"] == target.sms and printed["ctas_per_sm"] == gpu.machine.ctas_per_sm
            tiles.add(gpu.tile)
    assert len(tiles) >= 4  # the sample reaches most of auto's tiles


def test_numpy_operands_get_the_schedule_contiguous_device_tensors_get():
    # NumPy inputs are copied in (and packed); auto still decides as for contiguous tensors, so
    # `streamk gemm` (NumPy) runs what `streamk schedule --target` prints
    target, shape = preset("h100"), GemmShape(4047, 458, 64)
    host = Operand(None, "numpy", 0, (shape.m, shape.k), (shape.k, 1), "float16"), \
        Operand(None, "numpy", 0, (shape.k, shape.n), (shape.n, 1), "float16")
    on_device = _cuda((shape.m, shape.k), "float16"), _cuda((shape.k, shape.n), "float16")
    assert resolve(target, *host, "auto", None, None, None, {}) == resolve(target, *on_device, "auto", None, None,
                                                                            None, {})


def test_other_decompositions_and_options_resolve_alike(capsys):
    target = preset("h100")
    a, b = _cuda((1000, 3000), "bfloat16"), _cuda((3000, 999), "bfloat16")
    for argv, (decomp, fixup, tile, options) in [
            ((), ("stream-k", None, None, {})),
            (("--tile", "64x64x32", "--fixup", "turnstile"), ("stream-k", "turnstile", 64, {})),
            (("--splits", "3",), ("fixed-split", None, None, {"splits": 3})),
            (("--tile", "128x256x32"), ("two-tile-sk-dp", None, "128x256", {}))]:
        gpu = resolve(target, a, b, decomp, fixup, tile, None, options)
        printed = _cli(capsys, "schedule", decomp, "--shape", "1000x999x3000", "--dtype", "bfloat16",
                       "--target", "h100", "--json", *argv)
        assert Schedule.from_json(printed) == gpu, argv


def test_schedule_target_prints_the_sm90_tiles_in_their_order_as_the_gpu_resolves_them(capsys):
    target = preset("h100")
    a, b = _cuda((3000, 2000), "float16"), _cuda((2000, 5000), "float16")
    for tile, argv in (("128x256x64", ()), ("128x128x64", ()), ("128x256x64", ("--tile-order", "row-major"))):
        options = {"tile_order": argv[1]} if argv else {}
        gpu = resolve(target, a, b, "auto", None, tile, None, options)
        printed = _cli(capsys, "schedule", "auto", "--shape", "3000x5000x2000", "--target", "h100", "--tile", tile,
                       "--json", *argv)
        assert Schedule.from_json(printed) == gpu and printed["tile_order"] == (argv[1] if argv else "grouped-8")
    as_json = target.to_json_dict()
    assert as_json["large_rungs"] == "sm90"
    assert {tuple(t["tile"]): t["tile_order"] for t in as_json["tiles"] if t["dtype"] == "float16"}[(128, 256, 64)] == \
        "grouped-8"


def test_simulate_and_sweep_take_a_target(capsys, tmp_path):
    sim = _cli(capsys, "simulate", "auto", "--shape", "3000x5000x700", "--target", "h100", "--json")
    # 960 tiles of the sm90 128x128x64 tile, 11 iterations each: persistent DP on the H100's 132 SMs
    assert sim["tile"] == [128, 128, 64] and sim["grid"] == 132 and not sim["deadlock"]
    out = tmp_path / "sweep.csv"
    summary = _cli(capsys, "sweep", "--count", "20", "--target", "a100", "--decomp", "data-parallel,stream-k",
                   "--out", str(out), "--json")
    assert summary["shapes"] == 20
    header, first = out.read_text().splitlines()[:2]
    assert header.endswith("sms,ctas_per_sm,tile,costs") and first.endswith(',108,1,128x128x32,"32,32,1,8"')


def test_a_target_and_a_machine_together_are_refused(capsys):
    for argv in (["schedule", "auto", "--shape", "384x384x128", "--target", "h100", "--sms", "4"],
                 ["schedule", "auto", "--shape", "384x384x128"],
                 ["schedule", "auto", "--shape", "384x384x128", "--target", "h100", "--tile", "96x96x32"]):
        with pytest.raises(SystemExit) as info:
            main(argv)
        err = capsys.readouterr().err
        assert info.value.code == 2 and len(err.strip().splitlines()) == 1, (argv, err)


def test_a_schedule_on_a_tile_no_kernel_runs_is_refused_naming_the_tiles():
    s = Schedule.from_ctas("x", GemmShape(200, 256, 96), TileShape(96, 96, 32), [[(t, 0, 3)] for t in range(9)])
    a, b = _cuda((200, 96), "float16"), _cuda((96, 256), "float16")
    with pytest.raises(ScheduleError, match="no float16 kernel runs 96x96x32 tiles \\(there are: 128x128x32"):
        resolve(preset("h100"), a, b, s, None, None, None, {})


def test_auto_takes_the_sm90_tiles_on_hopper_where_they_were_measured_to_win():
    from streamk.gpu.decide.tiles import choose_tile

    h100, a100 = preset("h100"), preset("a100")
    assert choose_tile(GemmShape(8192, 8192, 8192), "float16", h100) == TileShape(128, 256, 64)
    assert choose_tile(GemmShape(8192, 8192, 8192), "float16", a100) == TileShape(128, 256, 32)
    # 256 tiles of 128x128 (two waves, the second partial) or 128 of 128x256 (one): the wide tile
    assert choose_tile(GemmShape(2000, 2000, 2048), "bfloat16", h100) == TileShape(128, 256, 64)
    assert choose_tile(GemmShape(2000, 2000, 256), "bfloat16", h100) == TileShape(128, 256, 64)
    assert choose_tile(GemmShape(1000, 2000, 2048), "bfloat16", h100) == TileShape(128, 128, 64)  # 128: a wave
    assert choose_tile(GemmShape(3000, 3000, 512), "bfloat16", h100) == TileShape(128, 128, 64)  # 576: 4.4 waves
    # B's rows 8-byte aligned: the sm80 kernel reads them in place, where TMA would pack 61 MB (1.5x the math)
    assert choose_tile(GemmShape(196, 7172, 4303), "float16", h100) == TileShape(128, 128, 32)
    # the same with k 4304 (B's rows 16-byte aligned: nothing to pack), or with a pack under the math
    assert choose_tile(GemmShape(196, 7176, 4304), "float16", h100) == TileShape(128, 128, 64)
    assert choose_tile(GemmShape(2990, 1580, 612), "float16", h100) == TileShape(128, 128, 64)
    assert choose_tile(GemmShape(7681, 3330, 136), "float16", h100) == TileShape(128, 128, 64)  # shallow too
    # from half a wave of 128x128 tiles the sm90 tile comes before the small sm80 ones
    assert choose_tile(GemmShape(1153, 1090, 610), "float16", h100) == TileShape(128, 128, 64)  # 90 tiles
    assert choose_tile(GemmShape(1153, 1090, 610), "float16", a100).bk == 32  # no sm90 tiles there
    assert choose_tile(GemmShape(590, 459, 526), "float16", h100) == TileShape(64, 64, 32)  # 20 tiles
    # deep, with half a wave or more of 64x64 tiles: the sm90 square tile (100 of 64x64, 100+ iterations)
    h200 = preset("h200")
    assert choose_tile(GemmShape(636, 624, 4816), "float16", h200) == TileShape(128, 128, 64)
    assert choose_tile(GemmShape(636, 624, 3168), "float16", h200) == TileShape(64, 64, 32)  # 99 iterations
    assert choose_tile(GemmShape(1001, 256, 6960), "float16", h200) == TileShape(64, 64, 32)  # 64 of 64x64
    assert choose_tile(GemmShape(636, 624, 4816), "float16", a100) == TileShape(64, 64, 32)  # no sm90 tiles
    assert choose_tile(GemmShape(636, 627, 4816), "float16", h200) == TileShape(64, 64, 32)  # TMA would pack B
    assert choose_tile(GemmShape(8192, 8192, 8192), "float64", h100) == TileShape(128, 128, 16)  # F64_WIDE_TILE
    assert choose_tile(GemmShape(8192, 8192, 8192), "float64", preset("a100")) == TileShape(64, 64, 16)


def test_auto_on_the_sm90_square_tile_runs_shallow_dp_on_persistent_ctas():
    from streamk.gpu.decide.schedule import schedule_for

    h100, tile = preset("h100"), TileShape(128, 128, 64)
    shallow = schedule_for("auto", GemmShape(4096, 4096, 1024), "float16", h100, tile=tile)  # 1024 tiles of 16
    assert shallow.grid == 132 and shallow.tile_order == "grouped-8" and len(shallow.units) == 1024
    assert shallow.ctas[0][1].tile == 132  # CTA 0: tiles 0, 132, 264, ...
    assert schedule_for("auto", GemmShape(4096, 4096, 1088), "float16", h100, tile=tile).grid == 1024  # 17 deep
    assert schedule_for("auto", GemmShape(4096, 4096, 1024), "float16", h100, tile=TileShape(128, 256, 64)).grid != 132


def test_auto_on_the_sm90_tiles_splits_few_tiles_under_the_calibration():
    from streamk.gpu.decide.schedule import schedule_for

    h100, tile = preset("h100"), TileShape(128, 128, 64)
    kernel = h100.kernel("float16", tile)
    costs = kernel.split_costs()
    cal = kernel.calibration
    assert kernel.split_extra_us == 1.5
    assert costs.c == 1 and costs.b == pytest.approx((cal.us("b") + 1.5) / cal.us("c1"))
    assert costs.d == pytest.approx(cal.us("d") / cal.us("c1"))
    few = schedule_for("auto", GemmShape(783, 750, 7141), "float16", h100, tile=tile)  # 42 deep tiles
    # two ways: three (126 CTAs) would price each iteration ~1.9x a CTA's alone (split_busy_share below)
    split = schedule_for("fixed-split", GemmShape(783, 750, 7141), "float16", h100, tile=tile, splits=2)
    assert few.grid == 84 and (few.units == split.units).all()
    shallow = schedule_for("auto", GemmShape(783, 750, 512), "float16", h100, tile=tile)  # 8 iterations a tile
    assert shallow.grid == 42
    # without the L2's share (kernel.split_busy_share, 0.5) the model splits them three ways
    assert kernel.split_busy_share == 0.5
    assert schedule_for("auto", GemmShape(783, 750, 7141), "float16", h100, tile=tile, split_busy_share=1.0).grid == 126
    # the sm80 tiles keep the model's grid
    assert h100.kernel("float16", TileShape(128, 128, 32)).split_costs() is None


def test_auto_on_the_sm90_square_tile_sends_few_deep_tiles_through_the_reduce_pass():
    from streamk.gpu.decide.schedule import schedule_for
    from streamk.sched.auto import SK_REDUCE_MAX_WAVES, SK_REDUCE_MIN_ITERS

    h100, tile = preset("h100"), TileShape(128, 128, 64)
    assert h100.kernel("float16", tile).few_tiles_reduce
    assert not h100.kernel("float16", TileShape(128, 256, 64)).few_tiles_reduce  # not measured there
    few_deep = GemmShape(142, 328, 64 * SK_REDUCE_MIN_ITERS)  # 6 tiles of 32 iterations
    s = schedule_for("auto", few_deep, "float16", h100, tile=tile)
    assert s.fixup == "separate-reduce" and s.grid == h100.sms
    assert s.iters_per_cta.max() - s.iters_per_cta.min() <= 1  # basic Stream-K's even shares
    shallow = GemmShape(142, 328, 64 * (SK_REDUCE_MIN_ITERS - 1))
    assert schedule_for("auto", shallow, "float16", h100, tile=tile).fixup != "separate-reduce"
    tiles = math.ceil(SK_REDUCE_MAX_WAVES * h100.sms)  # 27 tiles: not below 0.2 per SM
    at_bound = GemmShape(128 * tiles, 128, 64 * SK_REDUCE_MIN_ITERS)
    assert schedule_for("auto", at_bound, "float16", h100, tile=tile).fixup != "separate-reduce"
    # a policy the caller names is kept
    assert schedule_for("auto", few_deep, "float16", h100, tile=tile, fixup="turnstile").fixup == "turnstile"


def test_schedule_target_says_where_the_gpu_launches_clusters_that_share_b(capsys):
    def printed(*argv):
        assert main(["schedule", *argv, "--target", "h100"]) == 0
        return capsys.readouterr().out

    grouped = printed("data-parallel", "--shape", "2048x1024x512", "--tile", "128x128x64", "--tile-order", "grouped-8")
    assert "clusters of 2 CTAs: 64 of 64 pairs share each stage's B" in grouped
    # row-major neighbours share A, not B; 128x256x64 does not multicast; Stream-K's split tiles never pair
    assert "clusters" not in printed("data-parallel", "--shape", "2048x1024x512", "--tile", "128x128x64")
    assert "clusters" not in printed("data-parallel", "--shape", "2048x1024x512", "--tile", "128x256x64",
                                     "--tile-order", "grouped-8")
    assert "clusters" not in printed("stream-k", "--shape", "2048x1024x4096", "--tile", "128x128x64")


def test_auto_runs_one_wave_of_the_sm90_square_tile_row_major_where_its_rows_outnumber_a_quarter_of_its_depth():
    from streamk.gpu.decide.schedule import schedule_for

    h100, square, wide = preset("h100"), TileShape(128, 128, 64), TileShape(128, 256, 64)
    order = {shape: schedule_for("auto", GemmShape(*shape), "float16", h100, tile=square).tile_order
             for shape in ((1920, 512, 1024), (783, 750, 7141), (1200, 1200, 512), (4096, 4096, 4096))}
    # 60 tiles in 15 rows of 16 iterations; 42 in 7 rows of 112; 100 in 10 rows of 8; 1,024 tiles
    assert list(order.values()) == ["row-major", "grouped-8", "row-major", "grouped-8"]
    assert schedule_for("auto", GemmShape(1920, 512, 1024), "float16", h100, tile=wide).tile_order == "grouped-8"
    assert schedule_for("auto", GemmShape(1920, 512, 1024), "float16", h100, tile=square,
                        tile_order="grouped-4").tile_order == "grouped-4"  # a caller's order wins


def test_auto_on_the_sm90_square_tile_takes_stream_k_just_past_a_wave_where_its_partial_wave_is_deep():
    from streamk.gpu.decide.schedule import schedule_for

    h100, square = preset("h100"), TileShape(128, 128, 64)
    # 135 tiles: DP's second wave of 3 tiles costs a whole tile's 38 iterations, Stream-K one fixup
    sk = schedule_for("auto", GemmShape(1909, 1144, 2400), "float16", h100, tile=square)
    assert sk.grid == 132 and sk.fixup == "turnstile"
    # 195 tiles: DP's 63-tile wave runs at the L2's light-load rate; Stream-K's would not
    assert schedule_for("auto", GemmShape(1876, 1560, 7344), "float16", h100, tile=square).grid == 195
    # 136 tiles of 6 iterations: less than a fixup to gain
    assert schedule_for("auto", GemmShape(914, 2056, 384), "float16", h100, tile=square).fixup != "turnstile"


def test_auto_on_the_sm90_square_tile_keeps_the_two_tile_hybrid_below_two_waves():
    from streamk.gpu.decide.schedule import schedule_for

    h100, square = preset("h100"), TileShape(128, 128, 64)
    assert h100.kernel("float16", square).hybrid_max_waves == 2.0
    many = GemmShape(2304, 1920, 7408)  # 270 tiles (2.05 waves) of 116 iterations
    assert schedule_for("auto", many, "float16", h100, tile=square).grid == 270  # DP
    assert schedule_for("auto", many, "float16", h100, tile=square, hybrid_max_waves=10.0).grid == 264
    few = schedule_for("auto", GemmShape(2396, 984, 4552), "float16", h100, tile=square)  # 152 tiles
    assert few.grid == 132 and few.fixup == "turnstile"  # below two waves: the hybrid, as before
    assert h100.kernel("float16", TileShape(128, 256, 64)).hybrid_max_waves is None


def test_auto_on_the_wide_sm90_tile_takes_the_hybrid_only_behind_a_partial_wave_of_at_most_60_percent():
    from streamk.gpu.decide.schedule import schedule_for

    h100, wide = preset("h100"), TileShape(128, 256, 64)
    assert h100.kernel("float16", wide).hybrid_max_fill == 0.6
    # 512 tiles of 224 iterations (x @ W.t() at 4096x4096x14336): DP's fourth wave fills 116 SMs
    full = schedule_for("auto", GemmShape(4096, 4096, 14336), "float16", h100, tile=wide)
    assert full.grid == 512 and full.fixup == "owner-waits"  # DP
    forced = schedule_for("auto", GemmShape(4096, 4096, 14336), "float16", h100, tile=wide, hybrid_max_fill=1.0)
    assert forced.grid == 396 and forced.fixup == "turnstile"  # the appendix model's pick
    # 399 tiles: a partial wave of 3 tiles, the hybrid as before; 200 tiles: 68 of 132 (0.52), too
    assert schedule_for("auto", GemmShape(2420, 5328, 3280), "float16", h100, tile=wide).fixup == "turnstile"
    assert schedule_for("auto", GemmShape(978, 6197, 6642), "float16", h100, tile=wide).fixup == "turnstile"


def test_auto_spreads_a_decode_gemm_of_few_deep_rectangles_over_every_slot():
    from streamk.gpu.decide.schedule import schedule_for

    h100 = preset("h100")
    # 42 tall tiles of 37 iterations: DP would stream A through 42 CTAs on 132 SMs
    spread = schedule_for("auto", GemmShape(5313, 17, 1182), "float16", h100)
    assert spread.tile == TileShape(128, 64, 32) and spread.grid == 264 and spread.fixup == "separate-reduce"
    # 80 tiles of 18 iterations: a fixup per tile costs more than the spread gains
    assert schedule_for("auto", GemmShape(10176, 2, 576), "float16", h100, tile=TileShape(128, 64, 32)).grid == 80
    assert schedule_for("auto", GemmShape(5313, 17, 1182), "float16", h100, decode_reduce=False).grid == 42
    # not decode-like (n > 64): the rule is not asked for, so the same tiles keep auto's own grid
    rect, wider = TileShape(128, 64, 32), GemmShape(4000, 120, 1182)
    kept = schedule_for("auto", wider, "float16", h100, tile=rect)
    asked = schedule_for("auto", wider, "float16", h100, tile=rect, decode_reduce=True)
    assert (kept.grid, kept.fixup) == (64, "owner-waits") and (asked.grid, asked.fixup) == (264, "separate-reduce")
    assert h100.kernel("float16", TileShape(128, 64, 32)).decode_reduce
    assert not preset("a100").kernel("float16", TileShape(128, 64, 32)).decode_reduce


def test_auto_splits_a_gemv_on_the_dot_tiles_over_the_resident_slots_on_every_preset():
    """The dot tiles' GEMVs: Stream-K under separate-reduce on every resident slot, at most 32 CTAs a
    tile; DP at two MAC iterations a tile or fewer."""
    from streamk.gpu.decide.schedule import schedule_for

    for name, slots in (("h100", 528), ("h200", 528), ("a100", 216)):
        target = preset(name)
        gemv = schedule_for("auto", GemmShape(1, 4096, 4096), "float16", target)  # 32 tiles of 64 iterations
        assert gemv.tile == TileShape(8, 128, 64) and gemv.grid == min(slots, 32 * 32), name
        assert gemv.fixup == "separate-reduce", name
        few = schedule_for("auto", GemmShape(190, 1, 12419), "bfloat16", target)  # 3 tiles of 98
        assert few.tile == TileShape(64, 8, 128) and (few.grid, few.fixup) == (96, "separate-reduce"), name
        shallow = schedule_for("auto", GemmShape(20000, 3, 256), "float16", target)  # 2 iterations: DP
        assert shallow.tile == TileShape(64, 8, 128) and (shallow.grid, shallow.fixup) == (313, "owner-waits"), name
        # a forced atomic policy keeps the spread (its 2 KB tile adds are cheap); owner-waits the model's grid
        atomic = schedule_for("auto", GemmShape(1, 4096, 4096), "float16", target, fixup="atomic")
        assert (atomic.grid, atomic.fixup) == (gemv.grid, "atomic"), name
        owner = schedule_for("auto", GemmShape(1, 4096, 4096), "float16", target, fixup="owner-waits")
        assert owner.fixup == "owner-waits" and owner.grid < gemv.grid, name


def test_auto_splits_wide_gemms_of_deep_tiles_where_the_l2_prices_a_split_as_cheaper():
    from streamk.gpu.decide.schedule import schedule_for

    h100 = preset("h100")
    assert h100.kernel("float16", TileShape(128, 128, 64)).split_wide_share == 0.6
    # x @ W.t() at 256x4096x14336: 64 tiles of 224 iterations, two tile rows: split 2 ways
    wide = schedule_for("auto", GemmShape(256, 4096, 14336), "float16", h100)
    assert (wide.tile, wide.grid) == (TileShape(128, 128, 64), 128)
    shipped = schedule_for("auto", GemmShape(256, 4096, 14336), "float16", h100, split_wide_share=0.5)
    assert shipped.grid == 64  # the 0.5 share of every other shape: DP
    # as deep but tall (2691 x 376): the 0.5 share, DP
    assert schedule_for("auto", GemmShape(2691, 376, 7768), "float16", h100).grid == 66


def test_h200_row_major_decode_rules_move_shallow_gemvs_and_tall_one_column_gemms_only():
    """LOG.md v91: on the H200, row-major operands, n <= 8 takes the dot tile only past k 1024 (or 4 MB
    of A), and a one-column tall GEMM of 32x32 tiles past 0.6 of a wave takes 64x64; torch's Linear
    (column-major B) and the other presets keep the rules before."""
    from streamk.gpu.decide.orient import orient
    from streamk.gpu.decide.tiles import choose_tile
    from dataclasses import replace
    h200 = preset("h200")
    before = replace(preset("h200"), row_major_decode=False)
    fp16 = "float16"
    # fidelity seed 4362's shapes: old tile, new tile
    assert choose_tile(GemmShape(203, 8, 400), fp16, before) == TileShape(64, 8, 128)
    assert choose_tile(GemmShape(203, 8, 400), fp16, h200) == TileShape(32, 32, 32)
    assert choose_tile(GemmShape(3326, 8, 560), fp16, h200) == TileShape(64, 64, 32)
    assert choose_tile(GemmShape(598, 8, 1360), fp16, h200) == TileShape(64, 8, 128)  # deeper: the dot tile
    assert choose_tile(GemmShape(7745, 8, 880), fp16, h200) == TileShape(64, 8, 128)  # 13.6 MB of A
    assert choose_tile(GemmShape(2700, 24, 288), fp16, before) == TileShape(32, 32, 32)
    assert choose_tile(GemmShape(2700, 24, 288), fp16, h200) == TileShape(64, 64, 32)  # 85 tiles of 32x32
    assert choose_tile(GemmShape(2174, 24, 632), fp16, h200) == TileShape(32, 32, 32)  # 68: under 0.6 of a wave
    assert choose_tile(GemmShape(1274, 64, 672), fp16, h200) == TileShape(32, 32, 32)  # two columns of 32x32
    assert choose_tile(GemmShape(25, 4104, 648), fp16, h200) == TileShape(32, 32, 32)  # wide: unchanged
    assert choose_tile(GemmShape(203, 8, 400), fp16, h200, row_major=False) == TileShape(64, 8, 128)
    assert choose_tile(GemmShape(2700, 24, 288), fp16, h200, row_major=False) == TileShape(32, 32, 32)
    assert choose_tile(GemmShape(203, 8, 400), fp16, preset("h100")) == TileShape(64, 8, 128)
    # x @ W.t() (torch's Linear) of 8 rows: the transposed problem's tile as before
    for m, n, k in ((8, 1200, 400), (24, 2700, 288), (1, 900, 600)):
        x = Operand(None, "cuda", 0, (m, k), (k, 1), fp16)
        wt = Operand(None, "cuda", 0, (k, n), (1, k), fp16)
        assert orient(x, wt, None, h200) == orient(x, wt, None, before)
    # row-major operands: auto's orientation takes the new tile
    a = Operand(None, "cuda", 0, (203, 400), (400, 1), fp16)
    b = Operand(None, "cuda", 0, (400, 8), (8, 1), fp16)
    assert orient(a, b, None, h200).tile == TileShape(32, 32, 32)
    assert choose_tile(GemmShape(908, 2, 768), fp16, h200) == TileShape(64, 8, 128)  # rows the oracles never had
