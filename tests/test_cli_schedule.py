"""`streamk schedule`: the JSON object of the CLI contract, the readable table, and one-line errors (exit 2)."""

import json
import os
import subprocess
import sys

import pytest

from streamk.cli import main


def run_cli(capsys, *argv):
    code = main(list(argv))
    out = capsys.readouterr()
    return code, out.out, out.err


def test_schedule_json_is_the_design_contract(capsys):
    code, out, _ = run_cli(capsys, "schedule", "stream-k", "--shape", "384x384x128", "--tile", "128x128x4",
                           "--sms", "4", "--json")
    obj = json.loads(out)
    assert code == 0
    assert {k: obj[k] for k in ("decomposition", "shape", "tile", "tiles_m", "tiles_n", "iters_per_tile", "grid")} == {
        "decomposition": "stream-k", "shape": [384, 384, 128], "tile": [128, 128, 4], "tiles_m": 3, "tiles_n": 3,
        "iters_per_tile": 32, "grid": 4}
    assert obj["ctas"][0] == [{"tile": 0, "k_begin": 0, "k_end": 32}, {"tile": 1, "k_begin": 0, "k_end": 32},
                              {"tile": 2, "k_begin": 0, "k_end": 8}]
    assert [sum(u["k_end"] - u["k_begin"] for u in cta) for cta in obj["ctas"]] == [72, 72, 72, 72]


def test_schedule_table_shows_each_cta_and_its_fixup(capsys):
    code, out, _ = run_cli(capsys, "schedule", "fixed-split", "--shape", "384x384x128", "--tile", "128x128x64",
                           "--sms", "4", "--splits", "2")
    assert code == 0
    assert "grid 18 CTAs" in out
    assert "0[0:1] +fixup" in out and "0[1:2] >slot" in out


@pytest.mark.parametrize("argv, message", [
    (["--shape", "0x384x128"], "shape sides must be >= 1"),
    (["--shape", "384x384"], "shape must look like 384x384x128"),
    (["--shape", "384x384x128", "--grid", "-1"], "must be >= 1"),
    (["--shape", "384x384x128", "--grid", "1000"], "--grid must be between 1 and the 288 MAC iterations"),
    (["--shape", "384x384x128", "--fixup", "magic"], "invalid choice: 'magic'"),
    (["--shape", "384x384x128", "--ctas-per-sm", "x"], "must be an integer"),
])
def test_bad_arguments_give_one_line_and_exit_2(capsys, argv, message):
    with pytest.raises(SystemExit) as info:
        main(["schedule", "stream-k", "--tile", "128x128x4", "--sms", "4", *argv])
    err = capsys.readouterr().err
    assert info.value.code == 2
    assert message in err
    assert len(err.strip().splitlines()) == 1, err


def test_unknown_decomposition_and_splits_too_large_exit_2(capsys):
    for argv, message in [(["no-such"], "unknown decomposition 'no-such'"),
                          (["fixed-split", "--splits", "40"], "--splits must be between 1 and the 32")]:
        with pytest.raises(SystemExit) as info:
            main(["schedule", *argv, "--shape", "384x384x128", "--tile", "128x128x4", "--sms", "4"])
        err = capsys.readouterr().err
        assert info.value.code == 2 and message in err and len(err.strip().splitlines()) == 1


def test_python_dash_m_streamk_works_the_same():
    proc = subprocess.run([sys.executable, "-m", "streamk", "schedule", "data-parallel", "--shape", "256x256x64",
                           "--tile", "128x128x32", "--sms", "2", "--json"], capture_output=True, text=True, check=True)
    assert json.loads(proc.stdout)["grid"] == 4


def test_execute_checks_the_cpu_result_and_shows_atomic_is_not_deterministic(capsys):
    code, out, _ = run_cli(capsys, "execute", "stream-k", "--shape", "384x384x128", "--tile", "128x128x4",
                           "--sms", "4", "--precision", "fp64", "--json")
    obj = json.loads(out)
    assert code == 0 and obj["split_tiles"] == 3
    assert obj["relative_error"] < 1e-14 and obj["bitwise_identical_over_shuffles"] is True
    code, out, _ = run_cli(capsys, "execute", "fixed-split", "--splits", "3", "--shape", "300x300x999",
                           "--tile", "64x64x16", "--sms", "3", "--precision", "fp32", "--fixup", "atomic",
                           "--shuffles", "5", "--json")
    obj = json.loads(out)
    assert obj["relative_error"] < 1e-6 and obj["bitwise_identical_over_shuffles"] is False


def test_walk_backward_reverses_units_and_is_refused_when_unknown(capsys):
    code, out, _ = run_cli(capsys, "schedule", "stream-k", "--shape", "384x384x128", "--tile", "128x128x4",
                           "--sms", "4", "--walk", "backward", "--json")
    assert json.loads(out)["ctas"][0] == [{"tile": 2, "k_begin": 0, "k_end": 8}, {"tile": 1, "k_begin": 0, "k_end": 32},
                                          {"tile": 0, "k_begin": 0, "k_end": 32}]
    with pytest.raises(SystemExit):
        main(["schedule", "stream-k", "--shape", "8x8x8", "--sms", "1", "--walk", "sideways"])
    assert "invalid choice: 'sideways'" in capsys.readouterr().err


PLUGIN = '''
import streamk as sk
from streamk.sched.ranges import schedule_from_ranges, tile_ranges

@sk.register("test-plugin-dp")
def plugin_dp(shape, tile, machine):
    p = sk.Problem(shape, tile)
    return schedule_from_ranges("test-plugin-dp", shape, tile, machine, *tile_ranges(0, p.tiles, p.iters_per_tile))
'''


def test_a_plugin_scheduler_is_a_decomposition_of_every_verb(tmp_path):
    plugin = tmp_path / "my_scheduler.py"
    plugin.write_text(PLUGIN)
    env = {**os.environ, "STREAMK_PLUGINS": str(plugin)}
    common = ["--shape", "384x384x128", "--tile", "128x128x128", "--sms", "4", "--json"]
    for verb, key, value in [("schedule", "grid", 9), ("simulate", "utilization", 0.75)]:
        proc = subprocess.run([sys.executable, "-m", "streamk", verb, "test-plugin-dp", *common],
                              capture_output=True, text=True, env=env, check=True)
        assert json.loads(proc.stdout)[key] == value
    bad = subprocess.run([sys.executable, "-m", "streamk", "schedule", "stream-k", *common],
                         capture_output=True, text=True, env={**env, "STREAMK_PLUGINS": "no_such_module"})
    assert bad.returncode == 2 and "could not be imported" in bad.stderr


def test_auto_takes_model_and_separate_reduce_constants(capsys):
    base = ["schedule", "auto", "--shape", "185x134x1362", "--tile", "128x128x32", "--sms", "132",
            "--ctas-per-sm", "2", "--model-costs", "32,16,1,8", "--json"]
    code, out, _ = run_cli(capsys, *base)
    owner = json.loads(out)
    code2, out2, _ = run_cli(capsys, *base, "--reduce-costs", "32,24,1,0.5")
    reduce = json.loads(out2)
    assert code == code2 == 0
    assert owner["fixup"] == "owner-waits" and reduce["fixup"] == "separate-reduce"
    assert reduce["grid"] > owner["grid"]  # 4 tiles of 43 iterations: split many ways when summed on many SMs
    with pytest.raises(SystemExit) as info:
        main(["schedule", "stream-k", "--shape", "384x384x128", "--tile", "128x128x4", "--sms", "4",
              "--reduce-costs", "1,2,3,4"])
    assert info.value.code == 2 and "stream-k does not take --reduce-costs" in capsys.readouterr().err


@pytest.mark.parametrize("verb", ["schedule", "simulate", "execute"])
def test_fixed_split_default_splits_clamp_to_the_iterations_per_tile(verb, capsys):
    # one iteration per tile: the default of 2 splits would be refused; it is clamped to 1, as sweep does
    code, out, err = run_cli(capsys, verb, "fixed-split", "--shape", "100x100x10", "--tile", "1000x1000x1000",
                             "--sms", "4", "--json")
    assert code == 0 and json.loads(out)["grid"] == 1, err
    code, out, _ = run_cli(capsys, verb, "fixed-split", "--shape", "384x384x128", "--tile", "128x128x64",
                           "--sms", "4", "--json")
    assert code == 0 and json.loads(out)["grid"] == 18  # 9 tiles of 2 iterations: still 2 splits each


def test_every_gemm_flag_has_help(capsys):
    with pytest.raises(SystemExit):
        main(["gemm", "--help"])
    help_text = " ".join(capsys.readouterr().out.split())
    assert "--shape MxNxK GEMM problem size: A is MxK, B is KxN, C is MxN" in help_text
