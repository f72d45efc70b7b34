"""``streamk calibrate``'s pacing (issue 43): the pause and replay rules, the fit on worker
processes finding what it finds alone, and the wall-time estimate against the recorded H200 runs
and the 10-minute goal of ``calibrate --all``."""

import re
import statistics
from pathlib import Path

import numpy as np
import pytest

from streamk.calibrate import pacing
from streamk.calibrate.design import probes
from streamk.calibrate.fit import fit
from streamk.calibrate.predict import predict_us
from streamk.cli.calibrate_cmd import kernels_to_fit, progress
from streamk.parallel import worker_pool
from streamk.shapes import TileShape
from streamk.target import preset

DATA = Path(__file__).resolve().parents[1] / "benchmarks" / "data"
H200_L2 = 60 * 2**20
GOAL_S = 600  # issue 43: calibrate --all on an H200 in under 10 minutes


def test_the_pause_lasts_as_long_as_the_previous_probe_was_busy_up_to_half_a_second():
    assert pacing.pause_s(None) == pacing.PROBE_PAUSE_S  # the first probe, after the float64 checks
    assert pacing.pause_s(0.0) == 0.0
    assert pacing.pause_s(0.03) == pytest.approx(0.03)
    assert pacing.pause_s(0.3) == pytest.approx(0.3)
    assert pacing.pause_s(5.0) == pacing.PROBE_PAUSE_S
    assert pacing.pause_s(0.03, pacing.BEFORE) == pacing.PROBE_PAUSE_S  # the old rule: always 0.5 s
    with pytest.raises(ValueError, match="previous_busy_s"):
        pacing.pause_s(-1.0)


def test_only_probes_of_long_replays_run_fewer_of_them():
    assert pacing.reps_for(50e-6) == pacing.REPS  # a short probe: 50 replays, as before
    assert pacing.reps_for(2e-3) == pacing.REPS  # 50 x 2 ms = 0.1 s: still 50
    assert pacing.reps_for(4e-3) == 25  # the sm90 DRAM probe: about 0.1 s of replays
    assert pacing.reps_for(20e-3) == pacing.MIN_REPS  # the dot tiles' DRAM probe: 10, not 50
    assert pacing.reps_for(1.0) == pacing.MIN_REPS
    assert pacing.reps_for(20e-3, pacing.BEFORE) == pacing.REPS
    with pytest.raises(ValueError, match="replay_s"):
        pacing.reps_for(0.0)


def test_a_short_probe_keeps_the_gpu_busy_about_as_long_as_its_clock_warm_up():
    now = pacing.now(16)
    short = pacing.busy_s(20e-6, now)  # 20 ms warm-up, then 4 + 10 x 51 calls of 20 us
    assert short == pytest.approx(0.02 + 20e-6 * (4 + 10 * 51))
    assert pacing.pause_s(short) < 0.05
    dram = pacing.busy_s(20e-3, now)  # the dot tiles' DRAM probe: 15 calls and 10 replays of 20 ms
    assert dram == pytest.approx(0.02 + 20e-3 * 15) and pacing.pause_s(dram) == pytest.approx(dram)
    assert pacing.pause_s(pacing.busy_s(0.1, now)) == pacing.PROBE_PAUSE_S


def test_the_fit_on_worker_processes_finds_exactly_what_it_finds_alone():
    target = preset("h200")
    tile = TileShape(128, 128, 32)
    cal = target.kernel("float16", tile).calibration
    design = probes(tile, target.sms, cal.ctas_per_sm, H200_L2, 2, quick=True)
    rng = np.random.default_rng(3)
    measured = np.array([predict_us(p.schedule, cal, target.sms) for p in design]) * (1 + 0.02 * rng.standard_normal(len(design)))
    kw = dict(l2_bytes=H200_L2, element_bytes=2)
    alone = fit([p.schedule for p in design], measured, target.sms, cal.ctas_per_sm, **kw)
    with worker_pool(2) as pool:
        spread = fit([p.schedule for p in design], measured, target.sms, cal.ctas_per_sm, pool=pool, **kw)
    assert spread.names == alone.names and spread.steps == alone.steps
    assert np.array_equal(spread.values, alone.values) and np.array_equal(spread.errors, alone.errors)


def test_a_pool_of_one_worker_is_none_and_the_fit_runs_in_this_process():
    with worker_pool(1) as pool:
        assert pool is None
    with pytest.raises(ValueError, match="fit_workers"):
        pacing.Pacing("none", True, True, 0, True)


def recorded_h200_runs() -> list[tuple[str, TileShape, int, set[str]]]:
    """(dtype, tile, wall seconds, probe families) of each recorded ``streamk calibrate`` run on an H200."""
    runs = []
    for path in sorted(DATA.glob("calibrate_h200_*.txt")):
        for block in re.split(r"(?=calibrating \w+ \d+x\d+x\d+ on)", path.read_text())[1:]:
            head = re.match(r"calibrating (\w+) (\d+x\d+x\d+)", block)
            wall = re.search(r"\d+ probes timed and fitted in (\d+) s", block)
            if wall:
                families = {line.split()[0] for line in block.splitlines() if re.match(r"^[a-z0-9-]+ .*%$", line.strip())}
                runs.append((head[1], TileShape.parse(head[2]), int(wall[1]), families))
    return runs


def test_the_estimate_lands_near_the_recorded_h200_calibrations():
    runs = recorded_h200_runs()
    assert len(runs) >= 15
    target = preset("h200")
    errors = [pacing.estimate_kernel(target, d, t, pacing.BEFORE, l2_bytes=H200_L2, families=f).total_s / wall - 1
              for d, t, wall, f in runs]
    # 34-89 s recorded; the estimate's misses: the 18-step fit of v41 (-28%), the dot tiles' fits
    # that hold terms and descend again (-21 to -45%, the 89 s run the first of its machine)
    assert abs(statistics.median(errors)) < 0.1, errors
    assert sum(abs(e) <= 0.25 for e in errors) >= 0.8 * len(errors), errors


def test_calibrate_all_on_an_h200_is_estimated_under_ten_minutes_where_it_took_25():
    target = preset("h200")
    kernels = kernels_to_fit(target)
    assert len(kernels) >= 30
    before, _ = pacing.estimate_all(target, kernels, pacing.BEFORE, l2_bytes=H200_L2)
    after, each = pacing.estimate_all(target, kernels, pacing.now(16), l2_bytes=H200_L2)
    print(f"calibrate --all, {len(kernels)} kernels: before {before / 60:.1f} min, now {after / 60:.1f} min")
    assert before > 20 * 60  # v43: ~26 min (0.5 s before every probe, the fit on one core)
    assert after < GOAL_S
    assert all(e.pause_s < 5 for e in each)  # pauses: ~2 s a kernel, not 22
    assert after + 59 * pacing.NVRTC_S / 16 < GOAL_S  # a fresh machine compiles every unit first, 16 at a time


def test_progress_scales_the_remaining_estimate_by_how_the_finished_kernels_ran():
    assert progress(0, 3, 20.0, [10.0, 10.0, 10.0]) == "kernel 1 of 3 done, 20 s elapsed, about 40 s to go"
    assert progress(1, 3, 20.0, []) == "kernel 2 of 3 done, 20 s elapsed, about 10 s to go"
    assert progress(2, 3, 300.0, [10.0, 10.0, 10.0]).endswith("5.0 min elapsed, about 0 s to go")
