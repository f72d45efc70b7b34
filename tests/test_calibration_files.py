"""Calibration files (issue 43): the versioned format checked field by field, a user's file loaded by
--calibration or STREAMK_CALIBRATION (a folder or one file), and auto planning from it. CPU only."""

from __future__ import annotations

import dataclasses
import json
import os
import subprocess
import sys

import pytest

from streamk.calibrate import files
from streamk.calibrate.model import Term
from streamk.cli import main
from streamk.errors import InputError
from streamk.gpu.decide.schedule import schedule_for
from streamk.shapes import GemmShape, TileShape
from streamk.target import preset, target_from_file

TILE = TileShape(128, 128, 64)
# Few deep tiles (32 of 128 MAC iterations on 132 SMs): auto splits them at aligned k offsets, priced
# by the calibration's b and d (TargetTile.split_costs): the dearer a partial, the fewer the splits.
SHAPE = GemmShape(512, 1024, 8192)
ARGV = ["schedule", "auto", "--shape", "512x1024x8192", "--tile", "128x128x64", "--json"]


def shipped(dtype: str = "float16", tile: TileShape = TILE):
    return preset("h200").kernel(dtype, tile).calibration


def with_terms(cal, **us: float):
    """``cal`` with these terms' microseconds (each term's error kept)."""
    return dataclasses.replace(cal, terms=tuple(Term(t.name, us.get(t.name, t.us), t.se) for t in cal.terms))


def write(path, *cals, family: str = "h200", arch: str = "sm_90a"):
    return files.write_file(path, cals, family, arch)


def grid_of(argv, capsys) -> int:
    assert main(argv) == 0
    return json.loads(capsys.readouterr().out)["grid"]


def test_a_written_file_round_trips_exactly_and_drives_auto_through_the_cli(tmp_path, capsys):
    cal, dear = shipped(), with_terms(shipped(), b=500.0)
    path = write(tmp_path / "mine.json", cal, shipped("bfloat16"))
    obj = json.loads(path.read_text())
    assert obj["format"] == files.FORMAT and obj["family"] == "h200" and len(obj["kernels"]) == 2
    assert files.read_kernels(path) == (shipped("bfloat16"), cal)  # sorted by dtype and tile, every term exact
    assert target_from_file(path).kernel("float16", TILE).calibration == cal
    as_shipped = grid_of(ARGV + ["--target", "h200"], capsys)
    assert grid_of(ARGV + ["--calibration", str(path)], capsys) == as_shipped == 64
    write(path, dear)  # replaces the float16 entry, keeps the bfloat16 one
    assert files.read_kernels(path) == (shipped("bfloat16"), dear)
    assert grid_of(ARGV + ["--calibration", str(path), "--target", "h200"], capsys) == 32  # no split pays
    cheap = write(tmp_path / "cheap.json", with_terms(cal, b=0.0, d=0.0))
    assert grid_of(ARGV + ["--calibration", str(cheap)], capsys) == 128  # every tile split four ways


def test_the_python_path_and_auto_constants_follow_the_file(tmp_path):
    cal = shipped()
    for b, grid in ((cal.us("b"), 64), (500.0, 32), (0.0, 128)):
        target = target_from_file(write(tmp_path / f"b{b}.json", with_terms(cal, b=b, d=0.0 if b == 0 else cal.us("d"))))
        assert schedule_for("auto", SHAPE, "float16", target, tile=TILE).grid == grid
        split = target.kernel("float16", TILE).split_costs()
        assert split.b == pytest.approx((b + 1.5) / cal.us("c1"))  # the partial 1.5 us dearer (split_extra_us)
        assert target.to_json_dict()["tiles"][[t.tile for t in target.tiles].index(TILE)]["calibrated"]
    assert target.kernel("bfloat16", TILE).calibration is None  # the file's kernels are the family's calibration


def test_simulate_predicts_from_the_file_and_a_dearer_term_predicts_longer(tmp_path, capsys):
    argv = ["simulate", "stream-k", "--shape", "3000x5000x700", "--tile", "128x128x64", "--json"]
    us = []
    for c1 in (0.3, 0.6):
        path = write(tmp_path / f"c{c1}.json", with_terms(shipped(), c1=c1))
        assert main(argv + ["--calibration", str(path)]) == 0
        out = json.loads(capsys.readouterr().out)
        assert out["calibration"]["terms_us"]["c1"]["us"] == c1
        us.append(out["predicted_us"])
    assert us[1] > 1.15 * us[0]  # (the L2 floor, l2_us_per_mb, holds part of the iterations at its time)


def test_the_environment_variable_takes_one_file_or_a_folder(tmp_path):
    dear = with_terms(shipped(), b=500.0)
    path = write(tmp_path / "h200.json", dear)
    argv = [sys.executable, "-m", "streamk", *ARGV, "--target", "h200"]
    for source in (path, tmp_path):  # a fresh process: presets read their file at first use
        done = subprocess.run(argv, capture_output=True, text=True, env={**os.environ, files.ENV: str(source)})
        assert done.returncode == 0, done.stderr
        assert json.loads(done.stdout)["grid"] == 32


def test_a_gpu_with_no_preset_is_defined_by_its_file(tmp_path, capsys, monkeypatch):
    cal = dataclasses.replace(shipped(), device="NVIDIA H20", sms=78)
    path = write(tmp_path / "h20.json", cal, family="h20")
    target = target_from_file(path)
    assert (target.name, target.arch, target.sms) == ("h20", "sm_90a", 78)
    assert target.kernel("float16", TILE).calibration == cal
    assert target.kernel("float16", TileShape(128, 256, 64)).calibration is None  # h100's kernels, uncalibrated
    assert main(["simulate", "auto", "--shape", "4096x4096x4096", "--tile", "128x128x64", "--calibration", str(path), "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["sms"] == 78 and out["predicted_us"] > 0
    monkeypatch.setenv(files.ENV, str(path))
    assert preset("h20") == target  # --target h20 then names it
    sm86 = write(tmp_path / "a10.json", dataclasses.replace(shipped(tile=TileShape(128, 128, 32)), sms=72),
                 family="a10", arch="sm_86")
    a10 = target_from_file(sm86)  # the residency measured there (2), not the A100's (1)
    assert a10.sms == 72 and a10.kernel("float16", TileShape(128, 128, 32)).ctas_per_sm == 2
    assert a10.tiles_for("float16") == preset("a100").tiles_for("float16")  # the sm_80 kernels


def test_no_calibration_falls_back_saying_so_in_one_stderr_line(capsys):
    assert main(["simulate", "stream-k", "--shape", "3000x5000x700", "--target", "a100", "--json"]) == 0
    out, err = capsys.readouterr()
    assert json.loads(out)["predicted_us"] is None
    assert len(err.splitlines()) == 1 and "a100 has no calibration of the float16 128x128x32 kernel" in err
    assert main(["simulate", "stream-k", "--shape", "3000x5000x700", "--target", "a100"]) == 0
    out, err = capsys.readouterr()
    assert "no calibration" not in out and len(err.splitlines()) == 1


BAD = [
    ({"family": "h200", "arch": "sm_90a", "kernels": []}, "format must be the format version"),
    ({"format": 9, "family": "h200", "arch": "sm_90a", "kernels": []}, "format must be a version this streamk reads: 1"),
    ({"format": 1, "family": "H 200", "arch": "sm_90a", "kernels": []}, "family must be the GPU family's name"),
    ({"format": 1, "family": "h200", "arch": "sm_70", "kernels": []}, "arch must be the GPU's architecture, sm_80"),
    ({"format": 1, "family": "h200", "arch": "sm_90a", "kernels": {}}, "kernels must be a list"),
]


@pytest.mark.parametrize("obj, says", BAD)
def test_a_bad_file_is_one_line_naming_the_file_and_the_field(tmp_path, obj, says, capsys):
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(obj))
    with pytest.raises(InputError, match=f"calibration file '{path}': {says}"):
        files.read(path)
    with pytest.raises(SystemExit) as exit_:
        main(["simulate", "stream-k", "--shape", "384x384x128", "--calibration", str(path)])
    err = capsys.readouterr().err
    assert exit_.value.code == 2 and len(err.splitlines()) == 1 and says in err


@pytest.mark.parametrize("field, value, says", [
    ("dtype", "float8", "kernels[0].dtype must be one of float16, bfloat16, float64 (got 'float8')"),
    ("tile", [128, 128], "kernels[0].tile must be [BM, BN, BK], three integers >= 1"),
    ("ctas_per_sm", 0, "kernels[0].ctas_per_sm must be an integer >= 1 (resident CTAs per SM) (got 0)"),
    ("terms_us", {"c9": {"us": 1, "se": 0}}, "kernels[0].terms_us must be keyed by the terms launch, a, c1"),
    ("terms_us", {"c1": {"us": -1, "se": 0}}, "kernels[0].terms_us.c1.us must be a finite number >= 0"),
])
def test_a_bad_kernel_entry_names_its_index_and_field(tmp_path, field, value, says):
    entry = dict(shipped().to_json_dict(), **{field: value})
    path = tmp_path / "bad.json"
    path.write_text(json.dumps({"format": 1, "family": "h200", "arch": "sm_90a", "kernels": [entry]}))
    with pytest.raises(InputError, match="^calibration file .*bad.json': ") as info:
        files.read(path)
    assert says in str(info.value) and "\n" not in str(info.value)


def test_the_shipped_files_are_format_1_and_read_unchanged():
    for family in ("h100", "h200"):
        obj = files.read(files.DATA / f"{family}.json")
        assert obj["format"] == 1 and obj["family"] == family
        assert files.document(files.read_kernels(files.DATA / f"{family}.json"), family, obj["arch"]) == obj


def test_calibration_and_target_must_agree(tmp_path, capsys):
    path = write(tmp_path / "mine.json", shipped())
    with pytest.raises(SystemExit):
        main(ARGV + ["--calibration", str(path), "--target", "h100"])
    assert "--calibration calibrates h200, not --target h100" in capsys.readouterr().err


def test_calibrate_all_lists_every_kernel_and_refuses_without_a_gpu_in_one_line(capsys):
    from streamk.cli.calibrate_cmd import kernels_to_fit
    from streamk.gpu import available

    h200 = kernels_to_fit(preset("h200"))
    assert len(h200) == len(preset("h200").tiles)
    assert {("float64", TileShape(64, 64, 16)), ("float64", TileShape(128, 128, 16))} <= set(h200)
    assert ("float16", TILE) in h200 and ("float16", TILE) not in kernels_to_fit(preset("a100"))  # no sm90 there
    with pytest.raises(SystemExit):
        main(["calibrate", "--all", "--tile", "128x128x64"])
    assert "--all fits every kernel of this GPU; drop --dtype and --tile" in capsys.readouterr().err
    if available()[0]:
        pytest.skip("a GPU is present: the no-GPU message cannot be seen here")
    with pytest.raises(SystemExit) as exit_:
        main(["calibrate", "--all", "--out", "x.json"])
    err = capsys.readouterr().err
    assert exit_.value.code == 2 and len(err.splitlines()) == 1 and "needs a CUDA GPU" in err


def test_calibrate_all_writes_one_file_that_loads_against_a_stand_in_gpu(tmp_path, capsys, monkeypatch):
    # the device run but for the timing (the calibrated simulator under made-up terms, as in test_calibrate)
    import types

    import streamk.calibrate.device as device
    import streamk.gpu.runtime.device as gpu_device
    from test_calibrate import L2, NOISE, SMS, TRUE, simulated_device

    paper = TileShape(128, 128, 32)
    two = dataclasses.replace(preset("h100"), tiles=tuple(t for t in preset("h100").tiles if t.tile == paper))
    dev = types.SimpleNamespace(name="NVIDIA H100 80GB HBM3", arch="sm_90a", sms=SMS, l2_bytes=L2,
                                target=two.with_sms(SMS, "NVIDIA H100 80GB HBM3"))
    monkeypatch.setattr(device, "require_gpu", lambda: None)
    monkeypatch.setattr(gpu_device, "current", lambda: dev)
    monkeypatch.setattr(device, "time_schedules", simulated_device(TRUE, NOISE, seed=3))
    # NVRTC up front where units are missing: recorded here, not run (test_gpu_compile builds every unit;
    # running it here doubled make test's cold compile on two cores)
    import streamk.cli.calibrate_cmd as calibrate_cmd
    import streamk.cli.kernels_cmd as kernels_cmd

    compiled = []
    monkeypatch.setattr(calibrate_cmd, "missing_units", lambda arch: 3)
    monkeypatch.setattr(kernels_cmd, "compile_all", compiled.append)
    out = tmp_path / "mine.json"
    write(out, shipped(), family="h100")  # a kernel fitted earlier is kept (a file of another family is refused)
    assert main(["calibrate", "--all", "--quick", "--out", str(out), "--json"]) == 0
    printed, err = capsys.readouterr()
    assert compiled == ["sm_90a"] and "compiled 3 kernel units" in err
    assert "calibrating 2 kernels" in err and err.count("wrote") == 2
    assert json.loads(printed) == json.loads(out.read_text())
    cals = files.read_kernels(out)
    assert [(c.dtype, c.tile) for c in cals] == [("bfloat16", paper), ("float16", paper), ("float16", TILE)]
    assert all(abs(t.us - TRUE[t.name]) < 4 * t.se for c in cals[:2] for t in c.terms)
    assert main(["simulate", "stream-k", "--shape", "3000x5000x700", "--calibration", str(out), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["calibration"]["probes"] == cals[1].probes


def test_calibrate_refuses_to_replace_measured_kernels_without_force(tmp_path):
    from streamk.cli.calibrate_cmd import refuse_replacing

    path = write(tmp_path / "h200.json", files.read_kernels(files.DATA / "h200.json")[0])
    held = files.read_kernels(path)[0]
    kernel = (held.dtype, held.tile)
    with pytest.raises(InputError, match=r"already holds the calibration of .*pass --force to replace it"):
        refuse_replacing(path, (kernel,), force=False)
    refuse_replacing(path, (kernel,), force=True)  # asked for
    refuse_replacing(path, (("float64", TileShape(1, 1, 1)),), force=False)  # another kernel: kept beside
    refuse_replacing(tmp_path / "new.json", (kernel,), force=False)  # no file yet
