"""`streamk bench --decomps` variants and when two prepared launches count as one (no GPU)."""

from types import SimpleNamespace

import pytest

from streamk import Costs, GemmShape, Machine, ScheduleError, TileShape, make_schedule, plan_fixup
from streamk.gpu.runtime.launch import Step
from streamk.gpu.request import Tuning
from streamk.bench.variants import launch_key, variant


def sms() -> int:
    return 132


def test_a_bare_name_runs_with_default_copies():
    assert variant("auto", sms) == {"schedule": "auto"}


def test_every_part_of_a_variant_reaches_prepare():
    args = variant("stream-k%66@1:32,16,1,8&32,24,1,0.5/grouped-8!separate-reduce#64+pack", sms)
    assert args == {"schedule": "stream-k", "_tuning": Tuning("never"), "fixup": "separate-reduce", "grid": 66, "tile": 64,
                    "machine": Machine(132, 1), "model_costs": Costs(32, 16, 1, 8),
                    "reduce_costs": Costs(32, 24, 1, 0.5), "tile_order": "grouped-8"}
    assert variant("data-parallel+narrow", sms)["_tuning"] == Tuning("always")
    assert variant("auto+pdl", sms) == {"schedule": "auto", "_tuning": Tuning("auto", True)}
    assert variant("auto+pack+nopdl", sms) == {"schedule": "auto", "_tuning": Tuning("never", False)}
    assert variant("two-tile-sk-dp!turnstile#128x256+back", sms) == {
        "schedule": "two-tile-sk-dp", "fixup": "turnstile", "tile": "128x256", "walk": "backward"}
    assert "reduce_costs" not in variant("auto:32,32,1,8", sms)


def test_sm90_rungs_variant_runs_what_a_target_switched_to_them_would():
    from streamk.gpu.decide import asked_tile
    from streamk.gpu.decide.schedule import schedule_for
    from streamk.bench.variants import tile_for
    from streamk.sim.corpus import corpus
    from streamk.target import preset

    args = variant("auto+sm90", sms)
    assert args == {"schedule": "auto", "_large_rungs": "sm90"}
    h100 = preset("h100")
    switched = h100.with_large_rungs("sm90")
    sm90_tiles = 0
    for m, n, k in [(8192, 8192, 8192), *(tuple(int(v) for v in s) for s in corpus(60, 5))]:
        shape = GemmShape(m, n, k)
        kw = tile_for(args, shape, "float16", h100)
        assert set(kw) == {"schedule", "tile"}
        ran = schedule_for("auto", shape, "float16", h100, tile=asked_tile("float16", "auto", kw["tile"]))
        assert ran == schedule_for("auto", shape, "float16", switched), (m, n, k)
        sm90_tiles += ran.tile.bk == 64
        assert tile_for(variant("auto", sms), shape, "float16", h100) == {"schedule": "auto"}
    assert sm90_tiles >= 10, sm90_tiles  # the sample reaches the large rungs
    with pytest.raises(ScheduleError, match="\\+sm90 picks the tile"):
        variant("auto#128x256x64+sm90", sms)


@pytest.mark.parametrize("text, message", [
    ("autoo", "unknown decomposition 'autoo'"),
    ("auto!owner-wait", "!FIXUP must be one of"),
    ("auto+fast", "the suffixes must be one of \\+pack or \\+narrow"),
    ("auto+pdl+nopdl", "one of \\+pdl or \\+nopdl"),
    ("auto+back+back", "and \\+back"),
    ("stream-k%x", "whole numbers"),
    ("auto:1,2,3", "four numbers"),
    ("auto#small", "#TILE must be a tile edge"),
])
def test_a_bad_variant_names_what_is_wrong(text, message):
    with pytest.raises(ScheduleError, match=message):
        variant(text, sms)


def _prepared(schedule, fixup=None, grid_y=1):
    plan = plan_fixup(schedule, fixup)
    steps = [Step("streamk_sm80_f16", None, schedule.grid, 128, 107520)]
    if plan.policy == "separate-reduce" and len(plan.split_tiles):
        steps.append(Step("streamk_reduce_f32", None, len(plan.split_tiles), 128, 0, grid_y=grid_y))
    return SimpleNamespace(launch=SimpleNamespace(steps=steps), schedule=schedule, plan=plan)


def test_launches_of_one_schedule_plan_and_kernels_are_timed_once():
    shape, tile, machine = GemmShape(1000, 700, 3000), TileShape(128, 128, 32), Machine(132, 2)
    dp = make_schedule("data-parallel", shape, tile, machine)
    auto_as_dp = make_schedule("auto", shape, tile, machine, model_costs=Costs(32, 1000, 1, 8))
    assert auto_as_dp.grid == dp.grid  # the model's fixup cost keeps auto data-parallel here
    assert launch_key(_prepared(dp)) == launch_key(_prepared(auto_as_dp))
    sk = make_schedule("stream-k", shape, tile, machine, grid=66)
    assert launch_key(_prepared(sk)) != launch_key(_prepared(dp))
    # same schedule, another policy or another reduce grid: another computation
    assert launch_key(_prepared(sk)) != launch_key(_prepared(sk, "separate-reduce"))
    assert launch_key(_prepared(sk, "separate-reduce")) != launch_key(_prepared(sk, "separate-reduce", 8))


def test_the_bench_summary_compares_the_sm90_rungs_with_auto_on_the_shapes_they_change(capsys):
    from streamk.bench.harness import summarize

    sm90_dp, sm90_auto = "data-parallel/grouped-8#128x128x64", "auto#128x128x64"

    def row(m, auto_ms, sm90_ms, sm90_tile):
        r = {"m": m, "n": 4096, "k": 4096, "intensity": 1000.0, "cublas_raw": 1.0, "cublas_padded": 1.0}
        for d, ms, tile in (("data-parallel", 2.0, "128x128x32"), ("auto", auto_ms, "128x128x32"),
                            ("auto+sm90", sm90_ms, sm90_tile), (sm90_dp, 1.0, "128x128x64"), (sm90_auto, 0.8, "128x128x64")):
            steps = "streamk_sm90_f16" if tile.endswith("64") else "streamk_sm80_f16"
            r.update({d: ms, d + "_relerr": 0.0, d + "_tile": tile, d + "_steps": steps, d + "_same_as": ""})
        return r

    rows = [row(4096, 1.0, 0.8, "128x128x64"), row(4097, 1.0, 0.5, "128x256x64"), row(100, 1.0, 1.0, "128x128x32")]
    summarize(rows, ["data-parallel", "auto", "auto+sm90", sm90_dp, sm90_auto], "float16")
    out = capsys.readouterr().out
    assert "auto: auto+sm90/default time geo 0.632 min 0.500 max 0.800 on 2 changed shapes" in out, out
    assert f"{sm90_auto} vs DP of its own tile (128x128x64): geo 1.250" in out, out  # DP in grouped order counts


def test_the_bench_summary_of_8192_cubed_alone_prints_its_line(capsys):
    """streamk bench --count 0 --big: no corpus rows, so no geomeans, only the 8192^3 line (this
    crashed with an empty mean on the H100)."""
    from streamk.bench.harness import BIG, summarize

    m, n, k = BIG
    r = {"m": m, "n": n, "k": k, "intensity": 2048.0, "cublas_raw": 1.5, "cublas_padded": 1.5}
    for d, ms in (("data-parallel", 2.75), ("auto", 1.5)):
        r.update({d: ms, d + "_relerr": 0.0, d + "_tile": "128x256x64", d + "_steps": "streamk_sm90_f16", d + "_same_as": ""})
    summarize([r], ["data-parallel", "auto"], "bfloat16")
    out = capsys.readouterr().out
    assert "bfloat16: 0 corpus shapes" in out and "data-parallel 400 auto 733 TFLOP/s" in out, out


def test_only_tile_names_a_tile_or_its_prefix():
    import argparse

    from streamk.bench.args import _only_tile, tile_matches

    assert _only_tile("128") == "128x128" and _only_tile("128X256x64") == "128x256x64"
    with pytest.raises(argparse.ArgumentTypeError, match="such as 128, 128x256 or 128x256x64"):
        _only_tile("128x256x64x2")
    sm90_wide, sm80_wide = TileShape(128, 256, 64), TileShape(128, 256, 32)
    assert tile_matches(sm90_wide, _only_tile("128x256")) and tile_matches(sm80_wide, _only_tile("128x256"))
    assert tile_matches(sm90_wide, _only_tile("128x256x64")) and not tile_matches(sm80_wide, _only_tile("128x256x64"))
    assert not tile_matches(TileShape(128, 64, 32), _only_tile("128")) and not tile_matches(sm90_wide, "128x25")


def test_the_bench_summary_counts_a_variant_skipped_on_some_shapes(capsys):
    """A variant that cannot run a shape (e.g. stream-k%264 on fewer MAC iterations) is recorded as
    NaN with its reason; the summary leaves it out of that variant's figures and says how often."""
    import math

    from streamk.bench.harness import summarize

    def row(m, sk_ms):
        r = {"m": m, "n": 512, "k": 512, "intensity": 100.0, "cublas_raw": 1.0, "cublas_padded": 1.0}
        for d, ms in (("data-parallel", 2.0), ("stream-k%264", sk_ms)):
            ok = math.isfinite(ms)
            r.update({d: ms, d + "_relerr": 0.0 if ok else math.nan, d + "_tile": "128x128x32" if ok else "",
                      d + "_steps": "streamk_sm80_f16" if ok else "", d + "_same_as": ""})
        return r

    summarize([row(4096, 1.0), row(64, math.nan)], ["data-parallel", "stream-k%264"], "float16")
    out = capsys.readouterr().out
    assert "stream-k%264     vs data-parallel geo 2.000 mean 2.000 min 2.000" in out, out
    assert "skipped on 1 shapes" in out, out


def test_the_aligned_corpus_is_the_paper_sample_with_n_and_k_rounded_up_to_8():
    from streamk.bench.harness import corpus

    paper, aligned = corpus(50, 777), corpus(50, 777, "aligned")
    assert [m for m, _, _ in aligned] == [m for m, _, _ in paper]
    assert all(n % 8 == 0 and k % 8 == 0 and 0 <= n - pn < 8 and 0 <= k - pk < 8
               for (_, n, k), (_, pn, pk) in zip(aligned, paper))
    assert any(pn % 8 for _, pn, _ in paper)  # the sample does change


def test_the_bench_summary_compares_with_cublas_faster_output_dtype(capsys):
    """cuBLAS writing FP16 (cublas_half) is timed too; "cuBLAS's faster output dtype" takes the
    faster of it and the FP32-out run per shape."""
    from streamk.bench.harness import summarize

    rows = []
    for raw, half in ((1.0, 0.5), (1.0, 2.0)):
        r = {"m": 512, "n": 512, "k": 512, "intensity": 100.0, "cublas_raw": raw, "cublas_padded": raw,
             "cublas_half": half, "auto": 1.0, "auto_relerr": 0.0, "auto_tile": "128x128x64",
             "auto_steps": "streamk_sm90_f16", "auto_same_as": ""}
        rows.append(r)
    summarize(rows, ["auto"], "float16")
    out = capsys.readouterr().out
    assert "vs cuBLAS's faster output dtype geo 0.707 min 0.500" in out, out  # (0.5 * 1.0) ** 0.5
