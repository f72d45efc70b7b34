"""Calibration on CPU: the fit recovers known terms, with honest errors, from the calibrated
simulator standing in for the GPU (the one interface, a timer of Schedules); the design pins every
term; files round-trip into the Target; ``simulate --target --json`` reports ``predicted_us``.

The stand-in device is the model itself, so these tests prove the fitting, not the model: how
well the model predicts the GPU is what ``streamk fidelity`` measures on a device.
"""

import dataclasses
import json
import math

import numpy as np
import pytest

from streamk.calibrate import files
from streamk.calibrate.design import probes
from streamk.calibrate.fit import FitError, calibrate_with, fit
from streamk.calibrate.model import PACK_TERMS, TERM_DOC, Calibration, Term, term_names
from streamk.calibrate.predict import predict_from, predict_us
from streamk.cli import main
from streamk.dispatch import dispatch_verdict
from streamk.errors import InputError, SettingError
from streamk.fixup import plan_fixup
from streamk.sched import make_schedule
from streamk.shapes import GemmShape, Machine, TileShape
from streamk.gpu.catalogue import DOT_T_TILE, DOT_TILE
from streamk.target import PRESETS, preset, with_calibration

TILE = TileShape(128, 128, 32)
SMS = 32  # the design's times do not depend on the SM count (every probe is whole waves); 32 is fast
# Terms of the order an H100 shows (c1 from 132 tiles of k = 4096 in 63 us, docs/auto-model.md; a
# 64 KB partial at ~1.3 us), chosen for the test, not measured.
# dram_us_per_mb: a quarter of an H100's DRAM bandwidth for a quarter of its SMs (~0.35 us/MB there).
TRUE = {"launch": 4.0, "a": 1.5, "c1": 0.47, "c_shared": 0.92, "a_shared": 0.6, "b": 1.2, "d": 1.3, "pass_launch": 3.0,
        "d_reduce": 0.15, "unit": 2.0, "dram_us_per_mb": 1.5, "atomic": 9.0, "handoff": 0.9, "c_free": 0.06, "c_tpc": 0.0, "c_l2": 0.08,
        "l2_us_per_mb": 0.05, "c_shifted": 0.35, "c_row32": 0.1, "c_scatter": 0.0, "pack": 1.0, "pack_us_per_mb": 0.7}
# a_shared: the dp-waves' intercept (shared residency) above the one-CTA probes' launch + a (LOG.md v54);
# handoff: a link below b + d, which the turnstile-chain probes price (LOG.md v52);
# c_shifted: priced on the dot tiles only (the 128x128 kernel packs unaligned rows), so not fitted here;
# c_row32: probed only on kernels that read TMA boxes in place (design.probes row32=True;
# tests/test_calibrate_row32.py), so not fitted here either;
# pack and pack_us_per_mb: fitted where the design is told what the kernel packs (the dp-packed probes).
# l2_us_per_mb: an L2 that keeps up with every probe here (32 CTAs' boxes of 16 KB: 0.03 us an
# iteration against c1's 0.47), so a fit leaves that max() out
L2 = 12e6  # bytes: the L2 of that 32-SM device
NOISE = 0.01  # relative, Gaussian: CUDA-event medians of short launches wander about this much


def packs(dtype: str, tile: TileShape):
    """The MB of contiguous A and B the GPU packs for a shape on ``tile`` (its own rule)."""
    from streamk.gpu.decide.tiles import packed_bytes

    return lambda shape: packed_bytes(shape, dtype, tile) / 1e6


def simulated_device(truth: dict, noise: float, seed: int, ctas_per_sm: int = 2):
    """A timer that answers with the calibrated simulator under ``truth``, times (1 + noise N(0,1)),
    the pack pass first wherever the GPU would pack the schedule's contiguous operands."""
    rng = np.random.default_rng(seed)

    def timer(schedules, dtype, pacing=None):  # pacing: as device.time_schedules takes it (no pauses here)
        exact = np.array([predict_from(s, truth, SMS, ctas_per_sm, l2_bytes=L2, packed_mb=packs(dtype, s.tile)(s.shape))
                          for s in schedules])
        return exact * (1 + noise * rng.standard_normal(len(exact)))
    return timer


@pytest.mark.slow(2)
def test_fit_recovers_known_terms_within_their_reported_errors():
    design, result = calibrate_with(simulated_device(TRUE, NOISE, seed=1), "float16", TILE, SMS, 2, L2,
                                    packed_mb=packs("float16", TILE))
    z = (result.values - [TRUE[n] for n in result.names]) / result.errors
    report = {n: (TRUE[n], round(v, 4), round(e, 4)) for n, v, e in zip(result.names, result.values, result.errors)}
    assert len(design) == 48 and result.names == tuple(n for n in term_names(2) if n not in ("l2_us_per_mb", "c_shifted", "c_row32", "c_tpc", "c_scatter"))
    assert [p.family for p in design].count("dp-packed") == 3
    assert np.all(np.abs(z) < 3), report
    assert 0.5 * NOISE < result.rms_rel_residual < 1.5 * NOISE, result.rms_rel_residual
    rel_se = dict(zip(result.names, result.errors / result.values))
    assert rel_se["c1"] < 0.01 and rel_se["c_shared"] < 0.01 and rel_se["d"] < 0.05, report  # informative


def test_a_probe_timed_during_a_slow_spell_is_timed_again():
    # the GPU's first answer for one probe is twice its time (a clock ramp); the fit re-times it
    honest = simulated_device(TRUE, 0.0, 0)
    calls = []

    def spell_once(schedules, dtype):
        times = honest(schedules, dtype)
        if not calls:
            times[7] *= 2.0
        calls.append(len(schedules))
        return times
    _, result = calibrate_with(spell_once, "float16", TILE, SMS, 2, L2, quick=True)
    assert calls[1:] == [1], calls  # only the outlier went back to the device
    assert result.rms_rel_residual < 1e-6
    assert np.allclose(result.values, [TRUE[n] for n in result.names], rtol=1e-6, atol=1e-6)


@pytest.mark.slow(4)
def test_reported_errors_cover_the_truth_as_often_as_they_should():
    # over seeds, about 95% of the fitted terms lie within two standard errors of the truth
    z = []
    for seed in range(4):
        _, result = calibrate_with(simulated_device(TRUE, NOISE, seed), "float16", TILE, SMS, 2, L2, quick=True)
        z.extend((result.values - [TRUE[n] for n in result.names]) / result.errors)
    z = np.abs(np.array(z))
    assert np.mean(z < 2) >= 0.8 and np.all(z < 4.5), np.round(z, 2)


def test_fit_is_exact_without_noise_on_a_kernel_of_one_cta_per_sm():
    truth = {k: v for k, v in TRUE.items() if k != "c_shared"}
    _, result = calibrate_with(simulated_device(truth, 0.0, 0, 1), "float16", TILE, SMS, 1, L2, quick=True)
    # told nothing of what the kernel packs, the design has no dp-packed probe and the fit no pack terms
    assert result.names == tuple(n for n in term_names(1) if n not in ("l2_us_per_mb", "c_shifted", "c_row32", "c_tpc", "c_scatter", *PACK_TERMS)) and "c_shared" not in result.names
    assert np.allclose(result.values, [truth[n] for n in result.names], rtol=1e-6, atol=1e-6)


def test_a_design_that_cannot_separate_terms_is_refused_by_name():
    # one wave of whole tiles and owners that never wait: launch and a always come together, and
    # nothing shares an SM, stores a partial, runs a reduce pass or adds a tile atomically
    some = [p.schedule for p in probes(TILE, SMS, 2, L2, 2)
            if p.family in ("dp-one-per-sm", "split-long-owner", "multi-unit")]
    memory = {"l2_bytes": L2, "element_bytes": 2}
    with pytest.raises(FitError, match="cannot tell these terms apart: launch, a, c_shared, b, pass_launch, d_reduce, "
                                       "atomic;"):
        fit(some, [predict_from(s, TRUE, SMS, 2, **memory) for s in some], SMS, 2, **memory)
    with pytest.raises(FitError, match="one finite time > 0 per schedule"):
        fit(some, [1.0], SMS, 2, **memory)


def test_every_probe_runs_its_family_at_the_residency_it_calibrates_and_finishes():
    for p in probes(TILE, 132, 2, 50e6, 2):
        s = p.schedule
        waves = p.family in ("dp-waves", "dram-scattered")
        assert (s.grid > 132) == waves, (p.family, p.label, s.grid)
        slots = 132 * (2 if waves else 1)
        assert dispatch_verdict(plan_fixup(s), slots).finishes, (p.family, p.label)
        assert s.shape.n % 8 == 0 and s.shape.k % 8 == 0  # no operand is packed on the GPU


def test_a_grid_of_alike_cta_groups_is_simulated_as_one_group_that_ends_when_the_whole_grid_does():
    """predict_from simulates one group of a one-wave grid of alike CTA groups (predict.alike_part),
    which a fit does hundreds of times a probe: every simulated probe family must have such a
    group, and under every policy and cost its simulation must end when the whole grid's does, to
    the bit (a simulator where CTAs that share no tile still slow each other would break this)."""
    from streamk.calibrate.batch import simulated
    from streamk.calibrate.predict import alike_part
    from streamk.costs import Costs
    from streamk.schedule import FIXUP_POLICIES, Schedule
    from streamk.sim import simulate

    def check(s: Schedule, part: Schedule) -> None:
        assert part.grid < s.grid and part.machine == s.machine, s
        for policy in FIXUP_POLICIES:
            for extra in ((0.0, 0.0, 0.0), (TRUE["unit"], TRUE["atomic"], TRUE["handoff"])):
                whole = simulate(s, costs, policy, *extra, a_writes_c=True)
                one = simulate(part, costs, policy, *extra, a_writes_c=True)
                assert (one.makespan, one.deadlock) == (whole.makespan, whole.deadlock), (s, policy, extra)

    costs = Costs(TRUE["a"], TRUE["b"], TRUE["c1"], TRUE["d"])
    for tile, ctas_per_sm in ((TILE, 2), (DOT_TILE, 4)):
        design = probes(tile, SMS, ctas_per_sm, L2, 2)
        grouped = set()
        for p in design:
            part = alike_part(p.schedule, p.schedule.machine)
            if part is not None:
                grouped.add(p.family)
                check(p.schedule, part)
        assert {p.family for p in design if simulated(p.schedule)} <= grouped, grouped
    # Stream-K's 72 tiles on 32 CTAs realign every 4 CTAs: 8 alike groups of 4 CTAs and 9 tiles
    realigned = make_schedule("stream-k", GemmShape(1024, 1152, 4096), TILE, Machine(SMS, 1))
    part = alike_part(realigned, Machine(SMS, 1))
    assert part is not None and part.grid == 4 and part.problem.tiles == 9
    check(realigned, part)
    # none where the groups meet: one chain of CTAs (77 tiles), a second wave, or groups split unlike
    chain = make_schedule("stream-k", GemmShape(896, 1408, 4096), TILE, Machine(SMS, 1))
    assert alike_part(chain, Machine(SMS, 1)) is None
    assert alike_part(realigned, Machine(SMS // 2, 1)) is None
    uneven = Schedule.from_ctas("uneven", GemmShape(2 * TILE.bm, TILE.bn, 4 * TILE.bk), TILE,
                                [[(0, 0, 2)], [(0, 2, 4)], [(1, 0, 1)], [(1, 1, 4)]], machine=Machine(SMS, 1))
    assert alike_part(uneven, Machine(SMS, 1)) is None


def test_prediction_prices_each_term_where_the_gpu_spends_it():
    by = {(p.family, p.label): p.schedule for p in probes(TILE, SMS, 2, L2, 2)}
    t = TRUE

    def c1(name) -> float:  # a grid of fewer CTAs than SMs runs its iterations faster by c_free
        return t["c1"] - (1 - min(by[name].grid, SMS) / SMS) * t["c_free"]

    assert predict_from(by["dp-one-per-sm", "k=8"], t, SMS, 2) == pytest.approx(t["launch"] + t["a"] + 8 * t["c1"])
    assert by["dp-partial", "sms/4"].grid == SMS // 4
    assert predict_from(by["dp-partial", "sms/4"], t, SMS, 2) == pytest.approx(
        t["launch"] + t["a"] + 128 * (t["c1"] - 0.75 * t["c_free"]))
    assert predict_from(by["dp-waves", "waves=2 k=32"], t, SMS, 2) == pytest.approx(
        t["launch"] + 2 * (t["a"] + t["a_shared"] + 32 * t["c_shared"]))
    assert predict_from(by["split-even", "k=64 p=4"], t, SMS, 2) == pytest.approx(
        t["launch"] + t["a"] + 16 * c1(("split-even", "k=64 p=4")) + t["b"] + 3 * t["d"])
    assert predict_from(by["split-long-owner", "peers=2"], t, SMS, 2) == pytest.approx(
        t["launch"] + t["a"] + 96 * c1(("split-long-owner", "peers=2")) + 2 * t["d"])
    assert predict_from(by["separate-reduce", "p=4"], t, SMS, 2) == pytest.approx(
        t["launch"] + t["a"] + 32 * c1(("separate-reduce", "p=4")) + t["b"] + t["pass_launch"] + 4 * t["d_reduce"])
    assert predict_from(by["multi-unit", "u=4 k=8"], t, SMS, 2) == pytest.approx(
        t["launch"] + t["a"] + 32 * t["c1"] + 3 * t["unit"])
    assert predict_from(by["atomic", "p=4"], t, SMS, 2) == pytest.approx(
        t["launch"] + t["pass_launch"] + t["a"] + 32 * c1(("atomic", "p=4")) + t["atomic"])
    assert predict_from(by["turnstile-chain", "p=8"], t, SMS, 2) == pytest.approx(  # the head's store, 6 links, the tail's read
        t["launch"] + t["a"] + 16 * c1(("turnstile-chain", "p=8")) + t["b"] + 6 * t["handoff"] + t["d"])
    # the Latin square: 64 CTAs per wave on distinct rows and columns read every slice from DRAM
    side = SMS * 2
    (scattered,) = [s for (family, _), s in by.items() if family == "dram-scattered"]
    k = scattered.problem.iters_per_tile  # the least that makes A and B twice the L2
    assert 2 * L2 <= 2 * side * TILE.bm * k * TILE.bk * 2 < 2 * L2 + 2 * side * TILE.bm * TILE.bk * 2
    step_us = side * (TILE.bm + TILE.bn) * TILE.bk * 2 / 1e6 * t["dram_us_per_mb"]
    share = (scattered.shape.m + scattered.shape.n) * scattered.shape.k * 2 / L2  # A and B over the L2
    assert step_us > t["c_shared"] + share * t["c_l2"] and scattered.grid == side * side
    assert predict_from(scattered, t, SMS, 2, l2_bytes=L2) == pytest.approx(
        t["launch"] + side * (t["a"] + t["a_shared"] + k * step_us))
    assert predict_from(scattered, t, SMS, 2) == pytest.approx(
        t["launch"] + side * (t["a"] + t["a_shared"] + k * t["c_shared"]))


@pytest.fixture(autouse=True)
def fresh_presets(monkeypatch):
    """Each test reads the presets' calibration files anew (and drops what it read): a test that
    points STREAMK_CALIBRATION at its own folder must not leave its presets to the next."""
    monkeypatch.setattr(PRESETS, "_ready", {})


def _calibration() -> Calibration:
    return Calibration("float16", TILE, 2, tuple(Term(n, TRUE[n], 0.01) for n in term_names(2)), "test GPU", 132,
                       27, 0.01)


def test_calibration_files_round_trip_into_the_target(tmp_path, monkeypatch):
    cal = _calibration()
    path = files.write(cal, "h100", "sm_90a", tmp_path)
    files.write(cal, "h100", "sm_90a", tmp_path)  # the same kernel again replaces its entry
    assert len(json.loads(path.read_text())["kernels"]) == 1
    monkeypatch.setenv(files.ENV, str(tmp_path))
    assert files.load("h100") == (cal,) and files.load("a100") == ()
    target = with_calibration(preset("h100"), files.load("h100"))
    assert target.kernel("float16", TILE).calibration == cal
    assert target.kernel("bfloat16", TILE).calibration == preset("h100").kernel("bfloat16", TILE).calibration
    assert target.kernel("float16", TILE).model_costs == preset("h100").kernel("float16", TILE).model_costs
    path.write_text(json.dumps({"format": 1, "family": "h100", "arch": "sm_90a",
                                "kernels": [{"dtype": "float16", "tile": [128, 128, 32]}]}))
    with pytest.raises(SettingError, match=r"STREAMK_CALIBRATION=.* h100.json is not one .*kernels\[0\].ctas_per_sm must"):
        files.load("h100")  # the variable named, not a traceback from deep in the target's import


def test_simulate_reports_predicted_us_where_the_target_is_calibrated(capsys, monkeypatch):
    argv = ["simulate", "stream-k", "--shape", "3000x5000x700", "--target", "h100", "--json"]
    shipped = preset("h100")  # the package ships an h100 calibration: take it away for the first run
    bare = dataclasses.replace(shipped, tiles=tuple(dataclasses.replace(t, calibration=None) for t in shipped.tiles))
    monkeypatch.setitem(PRESETS, "h100", bare)
    assert main(argv) == 0
    plain = json.loads(capsys.readouterr().out)
    assert plain["predicted_us"] is None and plain["calibration_note"].startswith("no prediction: h100 has no calibration")
    monkeypatch.setitem(PRESETS, "h100", with_calibration(preset("h100"), (_calibration(),)))
    assert main(argv) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["makespan"] == plain["makespan"]  # the unit-free model is untouched
    from streamk.gpu.decide.schedule import schedule_for
    from streamk.shapes import GemmShape

    s = schedule_for("stream-k", GemmShape(3000, 5000, 700), "float16", PRESETS["h100"])
    assert out["predicted_us"] == pytest.approx(predict_us(s, _calibration(), 132))
    assert math.isfinite(out["predicted_us"]) and out["calibration"]["device"] == "test GPU"


def test_calibrate_checks_its_arguments_and_says_in_one_line_that_it_needs_a_gpu(capsys):
    from streamk.gpu import available

    with pytest.raises(SystemExit) as info:
        main(["calibrate", "--dtype", "float64", "--tile", "128x128x32"])
    assert info.value.code == 2 and "no float64 kernel" in capsys.readouterr().err
    if available()[0]:
        pytest.skip("a GPU is present: the no-GPU message cannot be seen here")
    with pytest.raises(SystemExit) as info:
        main(["calibrate"])
    err = capsys.readouterr().err
    assert info.value.code == 2 and len(err.strip().splitlines()) == 1 and "needs a CUDA GPU" in err


def test_calibrate_cli_end_to_end_against_a_stand_in_gpu(tmp_path, capsys, monkeypatch):
    # everything the device run does but the timing: the device is described, the timer simulated
    import types

    import streamk.calibrate.device as device
    import streamk.cli.calibrate_cmd as calibrate_cmd
    import streamk.gpu.runtime.device as gpu_device

    dev = types.SimpleNamespace(name="NVIDIA H100 80GB HBM3", arch="sm_90a", sms=SMS, l2_bytes=L2,
                                target=preset("h100").with_sms(SMS, "NVIDIA H100 80GB HBM3"))
    monkeypatch.setattr(device, "require_gpu", lambda: None)
    monkeypatch.setattr(gpu_device, "current", lambda: dev)
    monkeypatch.setattr(device, "time_schedules", simulated_device(TRUE, NOISE, seed=2))
    monkeypatch.setattr(calibrate_cmd, "missing_units", lambda arch: 0)  # NVRTC up front: test_gpu_compile's
    assert main(["calibrate", "--quick", "--out", str(tmp_path), "--json"]) == 0
    out, err = capsys.readouterr()
    entry = json.loads(out)
    assert "rms relative residual" in err and "wrote" in err and entry["device"] == dev.name
    assert "about " in err and "for 1 kernel (pacing now" in err  # the estimate, before the run
    monkeypatch.setenv(files.ENV, str(tmp_path))
    (cal,) = files.load("h100")  # the family's file, which the h100 preset loads
    # the quick design's 21 probes, two turnstile-chain and two dp-packed ones (the 128x128x32 kernel packs
    # 2-byte-aligned rows)
    assert (cal.dtype, cal.tile, cal.ctas_per_sm, cal.probes, cal.l2_bytes) == ("float16", TILE, 2, 25, L2)
    assert all(abs(t.us - TRUE[t.name]) < 4 * t.se for t in cal.terms), cal.terms
    assert {"pack", "pack_us_per_mb"} <= {t.name for t in cal.terms}


def test_the_atomic_term_prices_atomic_adds_only_and_older_entries_still_load():
    from streamk.gpu.decide.schedule import schedule_for
    from streamk.shapes import GemmShape

    h100 = PRESETS["h100"]
    shape = GemmShape(3000, 5000, 700)
    dp = schedule_for("data-parallel", shape, "float16", h100)
    sk = schedule_for("stream-k", shape, "float16", h100, fixup="atomic")
    without = {n: v for n, v in TRUE.items() if n != "atomic"}
    assert predict_from(dp, TRUE, 132, 2) == predict_from(dp, without, 132, 2)  # nothing added atomically
    assert predict_from(sk, TRUE, 132, 2) > predict_from(sk, without, 132, 2) + TRUE["atomic"] - 1e-9
    owner = schedule_for("stream-k", shape, "float16", h100, fixup="owner-waits")
    assert predict_from(owner, TRUE, 132, 2) == predict_from(owner, without, 132, 2)
    # an entry fitted before the term (every shipped one until refitted) predicts as if it were 0
    older = Calibration("float16", TILE, 2, tuple(Term(n, v, 0.0) for n, v in without.items()))
    assert older.us("atomic") == 0.0
    with pytest.raises(InputError, match="needs the terms"):
        Calibration("float16", TILE, 2, tuple(Term(n, v, 0.0) for n, v in TRUE.items() if n != "c1"))


def test_the_l2_term_charges_each_iteration_by_the_operands_share_of_the_l2_and_older_entries_still_load():
    by = {(p.family, p.label): p.schedule for p in probes(TILE, SMS, 2, L2, 2)}
    square, wide = by["dp-one-per-sm", "k=128"], by["dp-wide", "rows=2"]
    without = {n: v for n, v in TRUE.items() if n != "c_l2"}
    for s in (square, wide):
        share = (s.shape.m + s.shape.n) * s.shape.k * 2 / L2
        assert predict_from(s, TRUE, SMS, 2, l2_bytes=L2) == pytest.approx(
            TRUE["launch"] + TRUE["a"] + 128 * (TRUE["c1"] + share * TRUE["c_l2"]))
        assert predict_from(s, TRUE, SMS, 2) == predict_from(s, without, SMS, 2)  # no L2 given: no L2 term
    # the same iterations on one wave: the grid whose A and B fill more of the L2 is slower, by the term
    assert square.grid == wide.grid and square.problem.total_iters == wide.problem.total_iters
    gap = predict_from(wide, TRUE, SMS, 2, l2_bytes=L2) - predict_from(square, TRUE, SMS, 2, l2_bytes=L2)
    assert gap == pytest.approx(128 * TRUE["c_l2"] * 2 * TILE.bk * 128 * (
        wide.shape.m + wide.shape.n - square.shape.m - square.shape.n) / L2) and gap > 0
    # an entry fitted before the term predicts as before (c_l2 read as 0), and auto's constants ignore it
    shipped = preset("h100").kernel("bfloat16", TileShape(128, 128, 64)).calibration
    older = Calibration.from_json_dict({**shipped.to_json_dict(), "terms_us": {
        n: v for n, v in shipped.to_json_dict()["terms_us"].items() if n not in ("c_l2", "l2_us_per_mb")}})
    newer = dataclasses.replace(older, terms=tuple(sorted(older.terms + (Term("c_l2", 0.2, 0.01),),
                                                          key=lambda t: list(TERM_DOC).index(t.name))))
    assert older.us("c_l2") == 0.0 and newer.model_costs() == older.model_costs()
    values = {t.name: t.us for t in older.terms}
    for s in (square, wide):
        assert predict_us(s, older, SMS) == predict_from(s, {**values, "c_l2": 0.0}, SMS, 1, l2_bytes=older.l2_bytes)
        assert predict_us(s, newer, SMS) > predict_us(s, older, SMS)


def test_a_dram_stretch_no_probe_binds_is_held_at_zero_not_refused():
    """On a device whose DRAM keeps up with even the scattered probe (an H200 here, LOG.md v26), the
    stretch's max() never binds at the optimum: the fit leaves that term out instead of refusing."""
    from streamk.calibrate.fit import table

    fast_dram = dict(TRUE, dram_us_per_mb=0.0)
    design, result = calibrate_with(simulated_device(fast_dram, NOISE, seed=3), "float16", TILE, SMS, 2, L2, quick=True)
    assert "dram_us_per_mb" in result.held and "dram_us_per_mb" not in result.names
    assert result.rms_rel_residual < 0.05
    assert "held (no probe's time moved them" in table(result, [f"{p.family} {p.label}" for p in design])
    cal = result.calibration("float16", TILE, 2, "test", SMS, int(L2))
    assert "dram_us_per_mb" not in {t.name for t in cal.terms}



def test_the_timeline_a_prediction_comes_from_is_the_one_drawn():
    """calibrated_timeline (what the figures draw) is the simulation predict_us prices: its makespan
    plus the launch is the prediction, for every sm90 kernel's shipped calibration and decomposition."""
    from streamk.calibrate.predict import calibrated_timeline
    from streamk.gpu.decide.schedule import schedule_for
    from streamk.shapes import GemmShape

    h100 = preset("h100")
    shape = GemmShape(3456, 2816, 4096)
    for tile in (TileShape(128, 128, 64), TileShape(128, 256, 64)):
        cal = h100.kernel("float16", tile).calibration
        for name, options in (("stream-k", {"grid": 132}), ("two-tile-sk-dp", {}), ("fixed-split", {"splits": 2})):
            s = schedule_for(name, shape, "float16", h100, tile=tile, **options)
            timeline, c = calibrated_timeline(s, cal, h100.sms)
            assert c > cal.us("c1") * 0.5 and not timeline.deadlock
            assert math.isclose(cal.us("launch") + timeline.makespan, predict_us(s, cal, h100.sms), rel_tol=1e-9)


def test_the_l2_floor_slows_the_iterations_of_grids_whose_box_reads_outrun_the_l2():
    deep = TileShape(128, 128, 64)
    box_mb = (deep.bm + deep.bn) * deep.bk * 2 / 1e6
    values = {**TRUE, "l2_us_per_mb": 2 * TRUE["c1"] / (SMS * box_mb)}  # binds from half the SMs busy
    without = {**values, "l2_us_per_mb": 0.0}
    for tiles, binds in ((8, False), (SMS, True)):
        s = make_schedule("data-parallel", GemmShape(128 * tiles, 128, 4096), deep, Machine(SMS, 1))
        c = TRUE["c1"] - TRUE["c_free"] * (1 - tiles / SMS)
        floor = tiles * box_mb * values["l2_us_per_mb"]
        assert (floor > c) == binds
        assert predict_from(s, values, SMS, 1) == pytest.approx(TRUE["launch"] + TRUE["a"] + 64 * max(c, floor))
        assert (predict_from(s, values, SMS, 1) > predict_from(s, without, SMS, 1)) == binds


# float16 64x8x128 on an H100 (132 SMs, 4 CTAs a SM, 50 MB L2): the design's 41 probe times in us,
# measured (benchmarks/data/calibrate_probes_h100_dot_v33.json, LOG.md v33)
DOT_PROBES_H100 = [4.02, 5.47, 7.46, 11.44, 19.52, 49.5, 98.82, 192.06, 149.14, 155.02, 145.5, 145.09, 154.14, 31.47,
                   113.71, 423.52, 98.56, 218.26, 842.56, 50.03, 24.27, 16.88, 88.61, 48.4, 25.23, 122.35, 117.31,
                   116.48, 92.22, 46.05, 21.69, 13.77, 20.4, 43.95, 80.98, 86.72, 148.16, 92.08, 49.89, 21.55,
                   33549.02]


@pytest.mark.slow(9)
def test_the_fit_of_measured_dot_probes_holds_c_shared_and_does_not_end_in_the_c_free_corner():
    """The dot tile streams A: at four CTAs a SM every shared probe runs at DRAM's pace, so no
    probe's time moves c_shared, which the fit leaves out (pricing as c1) instead of refusing the
    design (a design without shared probes still refuses it: the test above). From the first
    guess the descent drove c_free to ~8 us, so that a lone CTA's iteration priced below zero and
    a few busy SMs ran at DRAM speed (rms 22%); the second start, from the optimum without c_free,
    ends where a lone CTA is latency-bound (rms ~9%), and fit keeps it. Priced since LOG.md v54,
    a_shared (11 +- 5 us) takes the shallow waves' fixed cost and c_shared is then fitted (rms 8.7%);
    without it (held) the fit holds c_shared as before."""
    from streamk.gpu.catalogue import DOT_TILE

    design = [p for p in probes(DOT_TILE, 132, 4, 52428800, 2)
              if p.family not in ("dp-shifted", "turnstile-chain")]  # measured before them
    assert all(p.schedule.shape.n == DOT_TILE.bn for p in design[:8])
    for held in ((), ("a_shared",)):
        result = fit([p.schedule for p in design], DOT_PROBES_H100, 132, 4, l2_bytes=52428800, element_bytes=2,
                     held=held)
        values = dict(zip(result.names, result.values))
        assert ("c_shared" in result.held) == bool(held) and ("a_shared" in result.names) != bool(held), result.held
        assert result.rms_rel_residual < 0.12, result.rms_rel_residual
        assert values["c_free"] < 0.5 and 1.0 < values["c1"] < 1.3, values


@pytest.mark.slow(2)
def test_the_shifted_term_prices_unaligned_streamed_rows_on_the_dot_tiles_only_and_is_fitted_there():
    """The dot tiles read their large operand in place at any alignment, and rows that are not
    16-byte aligned take the funnel-shifted fragment path (LOG.md v35): A's rows of k on 64x8x128,
    B's rows of n on 8x128x64. Every other kernel packs such rows, so c_shifted never prices them."""
    from streamk.gpu.catalogue import DOT_T_TILE, DOT_TILE
    from streamk.target import streams_unaligned

    assert streams_unaligned(GemmShape(4096, 1, 4095), DOT_TILE, 2)
    assert not streams_unaligned(GemmShape(4095, 3, 4096), DOT_TILE, 2)  # m and n never shift A's rows
    assert streams_unaligned(GemmShape(1, 4095, 4096), DOT_T_TILE, 2)
    assert not streams_unaligned(GemmShape(3, 4096, 4095), DOT_T_TILE, 2)
    assert not streams_unaligned(GemmShape(4095, 4095, 4095), TILE, 2)
    assert not streams_unaligned(GemmShape(64, 8, 4094), DOT_TILE, 8)  # FP64 rows of 4094 are 16-byte aligned

    def dp(shape, tile):
        return make_schedule("data-parallel", shape, tile, Machine(SMS, 4))

    values = {**TRUE, "c_shared": TRUE["c1"], "c_row32": 0.0}  # c_row32: TMA kernels only (n = 8: 16-byte rows)
    for tile, aligned, shifted in ((DOT_TILE, GemmShape(640, 8, 4096), GemmShape(640, 8, 4095)),
                                   (DOT_T_TILE, GemmShape(8, 1280, 4096), GemmShape(8, 1279, 4096))):
        gap = predict_from(dp(shifted, tile), values, SMS, 4) - predict_from(dp(aligned, tile), values, SMS, 4)
        iters = -(-4096 // tile.bk)
        assert gap == pytest.approx(iters * TRUE["c_shifted"]), tile
    packed = GemmShape(640, 640, 4095)
    assert predict_from(dp(packed, TILE), TRUE, SMS, 4) == predict_from(dp(packed, TILE), {**TRUE, "c_shifted": 0}, SMS, 4)

    # the dot design has shifted probes, and the fit recovers c_shifted from them
    design = probes(DOT_TILE, SMS, 4, L2, 2)
    shifted_probes = [p for p in design if p.family == "dp-shifted"]
    assert len(shifted_probes) == 4 and all(streams_unaligned(p.schedule.shape, DOT_TILE, 2) for p in shifted_probes)
    assert not any(streams_unaligned(p.schedule.shape, DOT_TILE, 2) for p in design if p.family != "dp-shifted")
    _, result = calibrate_with(simulated_device(values, 0.0, 0, 4), "float16", DOT_TILE, SMS, 4, L2)
    fitted = dict(zip(result.names, result.values))
    assert fitted["c_shifted"] == pytest.approx(TRUE["c_shifted"], rel=1e-4), fitted


def test_the_pack_pass_is_priced_where_the_gpu_packs_and_probed_only_on_kernels_that_pack(capsys, monkeypatch):
    """The simulator adds `pack` and `pack_us_per_mb` for the MB the GPU's rule packs for contiguous
    operands (decide.tiles.packed_bytes); the dp-packed probes are dp-one-per-sm with A's rows 2-byte
    aligned, on the kernels that pack them (not the dot tiles or FP64, which read them in place)."""
    from streamk.gpu.decide.schedule import schedule_for
    from streamk.gpu.decide.tiles import packed_bytes

    cal = _calibration()
    shape = GemmShape(3000, 5000, 701)  # odd k: A's rows are 2-byte aligned, so A is packed
    s = schedule_for("stream-k", shape, "float16", preset("h100"))
    mb = packed_bytes(shape, "float16", s.tile) / 1e6
    assert mb == pytest.approx(3000 * 701 * 2 / 1e6) and packed_bytes(GemmShape(3000, 5000, 704), "float16", s.tile) == 0
    assert predict_us(s, cal, 132, packed_mb=mb) == pytest.approx(
        predict_us(s, cal, 132) + TRUE["pack"] + mb * TRUE["pack_us_per_mb"])
    monkeypatch.setitem(PRESETS, "h100", with_calibration(preset("h100"), (cal,)))
    assert main(["simulate", "stream-k", "--shape", "3000x5000x701", "--target", "h100", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["packed_mb"] == pytest.approx(mb)
    assert out["predicted_us"] == pytest.approx(predict_us(s, cal, 132, packed_mb=mb))
    # a launch that reads its operands in place (another layout, a transposed problem) says so
    from streamk.calibrate.candidates import predicted
    h100 = with_calibration(preset("h100"), (cal,))
    assert predicted(s, "float16", h100) == pytest.approx(predict_us(s, cal, 132, packed_mb=mb))
    assert predicted(s, "float16", h100, 0) == pytest.approx(predict_us(s, cal, 132))

    for tile in (TILE, TileShape(128, 128, 64), TileShape(128, 256, 64)):
        design = probes(tile, 132, 1, 50e6, 2, packed_mb=packs("float16", tile))
        plain = {p.label: p.schedule for p in design if p.family == "dp-one-per-sm"}
        packed = [p for p in design if p.family == "dp-packed"]
        assert len(packed) == 3 and max(p.packed_mb for p in packed) > 10 * min(p.packed_mb for p in packed)
        for p in packed:  # the dp-one-per-sm probe of its k, A one element short: only A is packed
            twin = plain[p.label].shape
            assert p.schedule.shape == GemmShape(twin.m, twin.n, twin.k - 1) and p.schedule.grid == 132
            assert p.packed_mb == pytest.approx(twin.m * (twin.k - 1) * 2 / 1e6)
    for dtype, tile, ctas in (("float16", DOT_TILE, 4), ("float16", DOT_T_TILE, 4), ("float64", TileShape(64, 64, 16), 2)):
        assert not any(p.family == "dp-packed" for p in probes(tile, 132, ctas, 50e6, 2, packed_mb=packs(dtype, tile)))
