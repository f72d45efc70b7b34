"""Every verb and API entry with bad inputs: one line on stderr, exit 2, no traceback, nothing
truncated or trusted. The CLI walk runs in-process (fast); two cases run in a real subprocess."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import streamk as sk
from streamk.cli import main
from streamk.errors import InputError, LimitError, ScheduleError
from streamk.sched import registry

P = ["--shape", "384x384x128", "--tile", "128x128x4", "--sms", "4"]
CSV_HEAD = "m,n,k,decomposition,grid,makespan,utilization,deadlock\n"


@pytest.fixture(scope="module")
def files(tmp_path_factory) -> dict[str, str]:
    d = tmp_path_factory.mktemp("inputs")
    made = {"empty": "", "header": CSV_HEAD, "other": "a,b\n1,2\n", "nonnum": CSV_HEAD + "x,1,1,dp,1,1,1,false\n",
            "badfloat": CSV_HEAD + "1,1,1,dp,1,fast,1,false\n", "binary": "\x89PNG\r\n\x1a\n\x00\xff\xfe"}
    paths = {}
    for name, text in made.items():
        path = d / f"{name}.csv"
        path.write_bytes(text.encode("latin-1"))
        paths[name] = str(path)
    paths["dir"] = str(d)
    paths["missing_dir"] = str(d / "no" / "such")
    paths["png"] = str(d / "x.png")
    return paths


def walk_table(f: dict[str, str]) -> list[tuple[list[str], str]]:
    """(argv, a fragment the one-line error must contain)."""
    sweep = ["sweep", "--count", "3", "--sms", "4"]
    plot_s = ["plot", "schedule", "stream-k", *P]
    land = ["plot", "landscape", "--out", f["png"], "--csv"]
    bench = ["plot", "bench", "--out", f["png"], "--csv"]
    return [
        # schedule / simulate / execute: problem and decomposition arguments
        (["schedule", "stream-k", "--shape", "0x384x128", "--tile", "128x128x4", "--sms", "4"], "sides must be >= 1"),
        (["schedule", "stream-k", "--shape", "384x384", "--sms", "4"], "must look like 384x384x128"),
        (["schedule", "stream-k", "--shape", "3000000000x1x1", "--sms", "4"], "must be <= 2147483647"),
        (["schedule", "stream-k", *P[:4], "--sms", "0"], "must be >= 1"),
        (["schedule", "stream-k", *P, "--grid", "3.5"], "must be an integer"),
        (["schedule", "stream-k", *P, "--grid", "-1"], "must be >= 1"),
        (["schedule", "stream-k", *P, "--grid", "1000"], "--grid must be between 1 and the 288"),
        (["schedule", "stream-k", *P, "--ctas-per-sm", "x"], "must be an integer"),
        (["schedule", "fixed-split", *P, "--splits", "40"], "--splits must be between 1"),
        (["schedule", "data-parallel", *P, "--splits", "2"], "does not take --splits"),
        (["schedule", "no-such", *P], "unknown decomposition 'no-such'"),
        (["schedule", "stream-k", *P, "--fixup", "magic"], "invalid choice: 'magic'"),
        (["schedule", "stream-k", *P, "--tile-order", "diagonal"], "tile order must be"),
        (["schedule", "stream-k", *P, "--walk", "sideways"], "invalid choice: 'sideways'"),
        (["schedule", "auto", *P, "--model-costs", "1,2"], "four numbers"),
        (["schedule", "stream-k", *P, "--model-costs", "32,32,1,8"], "does not take --model-costs"),
        (["schedule", "stream-k", "--shape", "100000x100000x100000", "--tile", "1x1x1", "--sms", "4"],
         "over the limit of 16,777,216 (STREAMK_MAX_UNITS)"),
        (["schedule", "stream-k", *P, "--bogus"], "unrecognized arguments"),
        (["simulate", "stream-k", *P, "--costs", "1,2"], "four numbers"),
        (["simulate", "stream-k", *P, "--costs", "nan,0,1,0"], "finite and >= 0"),
        (["simulate", "stream-k", *P, "--costs", "0,0,0,0"], "must be > 0"),
        (["simulate", "stream-k", *P, "--costs", "0,0,1e307,0"], "at most 1e+100 each"),
        (["schedule", "auto", *P, "--grid", "5"], "auto does not take --grid (it takes --model-costs, --reduce-costs "
                                                  "here, and in Python also sk_backward, persistent_upto"),
        (["simulate", "nope", *P], "unknown decomposition"),
        (["execute", "stream-k", *P, "--seed", "-1"], "must be >= 0"),
        (["execute", "stream-k", *P, "--seed", "1.5"], "must be an integer >= 0"),
        (["execute", "stream-k", *P, "--precision", "fp8"], "invalid choice: 'fp8'"),
        (["execute", "stream-k", *P, "--shuffles", "0"], "must be >= 1"),
        (["execute", "stream-k", "--shape", "100000x100000x100000", "--sms", "4"], "GiB of memory"),
        (["execute", "stream-k", "--shape", "9000x9000x9000", "--sms", "4"], "over the limit of 600 s"),
        # sweep
        ([*sweep, "--seed", "-1"], "must be >= 0"),
        ([*sweep, "--seed", "x"], "must be an integer >= 0"),
        ([*sweep[:2], "0", *sweep[3:]], "must be >= 1"),
        ([*sweep, "--out", f["missing_dir"] + "/x.csv"], "does not exist"),
        ([*sweep, "--out", f["dir"]], "not the folder"),
        ([*sweep, "--out", "/dev/null"], "device or other special file"),
        ([*sweep, "--out", ""], "empty name"),
        ([*sweep, "--out", "/proc/streamk.csv"], "cannot write"),
        ([*sweep, "--decomp", "nope"], "unknown decomposition 'nope'"),
        ([*sweep, "--decomp", ","], "at least one name"),
        ([*sweep[:2], "1000000000", *sweep[3:]], "over the limit of 600 s"),
        ([*sweep, "--fixup", "magic"], "invalid choice"),
        ([*sweep, "--costs", "0,0,1,1e200"], "at most 1e+100 each"),
        # plot schedule / landscape / bench
        ([*plot_s, "--out", f["missing_dir"] + "/x.png"], "does not exist"),
        ([*plot_s, "--out", f["dir"]], "not the folder"),
        ([*plot_s, "--out", ""], "empty name"),
        ([*plot_s, "--out", "/dev/null"], "special file"),
        ([*plot_s, "--out", f["dir"] + "/x.txt"], "must end in .png"),
        ([*plot_s], "--out"),
        ([*plot_s, "--costs", "0,0,1e307,0", "--out", f["png"]], "at most 1e+100 each"),
        ([*land, f["dir"] + "/missing.csv"], "does not exist"),
        ([*land, f["empty"]], "is empty"),
        ([*land, f["header"]], "no rows"),
        ([*land, f["other"]], "lacks column(s)"),
        ([*land, f["nonnum"]], "line 2: column m must be a number (got 'x')"),
        ([*land, f["badfloat"]], "column makespan must be a number"),
        ([*land, f["binary"]], "not a text CSV"),
        ([*land, f["dir"]], "not the folder"),
        ([*land, "/dev/null"], "special file"),
        (["plot", "landscape", "--out", f["png"]], "needs --csv"),
        (["plot", "landscape", "--out", f["png"], "--sms", "4", "--seed", "-2"], "must be >= 0"),
        (["plot", "landscape", "--csv", f["nonnum"], "--metric", "nope", "--out", f["png"]], "invalid choice"),
        ([*bench, f["empty"]], "is empty"),
        ([*bench, f["header"]], "no rows"),
        ([*bench, f["nonnum"]], "column m must be a number"),
        ([*bench, f["other"]], "lacks column(s) m, n, k"),
        (["plot", "nothing"], "invalid choice"),
        # demo, kernels, gemm, bench, the top level
        (["demo", "--out", "/dev/null"], "must be a folder"),
        (["demo", "--out", f["empty"]], "must be a folder"),
        (["demo", "--out", ""], "empty name"),
        (["demo", "--seed", "-3"], "must be >= 0"),
        (["demo", "--count", "0"], "must be >= 1"),
        (["kernels", "--arch", "sm_70"], "invalid choice: 'sm_70'"),
        (["gemm", "nope", "--shape", "10x10x10"], "unknown decomposition 'nope'"),
        (["gemm", "stream-k", "--shape", "10x10x10", "--tile", "99"], "no float16 kernel runs 99 tiles"),
        (["gemm", "data-parallel", "--shape", "10x10x10", "--splits", "2"], "does not take --splits"),
        (["gemm", "stream-k", "--shape", "10x10x10", "--alpha", "nan"], "must be a finite number"),
        (["gemm", "stream-k", "--shape", "10x10x10", "--dtype", "int8"], "invalid choice"),
        (["gemm", "stream-k", "--shape", "10x10x10", "--seed", "-1"], "must be >= 0"),
        (["gemm", "--shape", "10x10x10", "--dtype", "float64", "--out-dtype", "float16"],
         "--out-dtype must be float64 for float64 inputs"),
        (["gemm", "--shape", "10x10x10", "--out-dtype", "float64"], "--out-dtype must be float32 or float16"),
        (["gemm", "stream-k", "--shape", "10x10", ], "must look like"),
        (["bench", "--count", "-1"], "must be an integer >= 0"),
        (["bench", "--decomps", "nope"], "unknown decomposition 'nope'"),
        (["bench", "--decomps", "stream-k!magic"], "!FIXUP must be one of"),
        (["bench", "--seconds", "0"], "must be a number of seconds > 0"),
        (["bench", "--out", "/dev/null"], "must be a folder"),
        (["bench", "--only-tile", "big"], "must be a tile"),
        (["bench", "--dtype", "int8"], "invalid choice"),
        (["bench", "--parity", "--dtype", "bfloat16"], "--parity runs its own corpora, dtypes and variants: drop --dtype"),
        (["bench", "--parity", "--decomps", "auto", "--big"], "drop --decomps, --big"),
        (["frobnicate"], "invalid choice"),
        ([], "required"),
    ]


def test_bad_arguments_of_every_verb_give_one_line_and_exit_2(files, capsys):
    table = walk_table(files)
    assert len(table) >= 60
    verbs = {argv[0] for argv, _ in table if argv}
    assert verbs >= {"schedule", "simulate", "execute", "sweep", "plot", "demo", "kernels", "gemm", "bench"}
    failures = []
    for argv, fragment in table:
        try:
            code = main(argv)
        except SystemExit as exc:
            code = exc.code
        err = capsys.readouterr().err
        lines = err.strip().splitlines()
        if code != 2 or len(lines) != 1 or fragment not in err or "Traceback" in err:
            failures.append(f"{argv}: exit {code}, stderr {err!r}, wanted {fragment!r}")
    assert not failures, "\n".join(failures)


def run_streamk(*argv: str, env: dict | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "streamk", *argv], capture_output=True, text=True,
                          env={**os.environ, **(env or {})})


def test_no_traceback_reaches_a_real_terminal(tmp_path):
    for argv in (["sweep", "--count", "3", "--sms", "4", "--out", str(tmp_path)],
                 ["execute", "stream-k", *P, "--seed", "-1"]):
        proc = run_streamk(*argv)
        assert proc.returncode == 2 and len(proc.stderr.strip().splitlines()) == 1, proc.stderr
        assert "Traceback" not in proc.stderr and proc.stdout == ""


def test_version_prints_the_version(capsys):
    with pytest.raises(SystemExit) as info:
        main(["--version"])
    assert info.value.code == 0 and capsys.readouterr().out.strip() == f"streamk {sk.__version__}"


# ---- plugins ------------------------------------------------------------------------------

WRONG_SHAPE = '''
import streamk as sk
from streamk.sched.ranges import schedule_from_ranges, tile_ranges

@sk.register("test-wrong-shape")
def wrong_shape(shape, tile, machine):
    small = sk.GemmShape(shape.m // 2 or 1, shape.n, shape.k)  # a bug: plans for half the rows
    p = sk.Problem(small, tile)
    return schedule_from_ranges("test-wrong-shape", small, tile, machine, *tile_ranges(0, p.tiles, p.iters_per_tile))
'''


@pytest.mark.parametrize("source, fragment", [
    (None, "no such file"),
    ("def broken(:\n", "SyntaxError (line 1)"),
    ("raise RuntimeError('boom')\n", "RuntimeError: boom"),
])
def test_a_plugin_that_cannot_be_imported_is_one_line(tmp_path, source, fragment):
    plugin = tmp_path / "plugin.py"
    if source is not None:
        plugin.write_text(source)
    proc = run_streamk("schedule", "stream-k", *P, env={"STREAMK_PLUGINS": str(plugin)})
    assert proc.returncode == 2 and fragment in proc.stderr, proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1 and "Traceback" not in proc.stderr


@pytest.fixture
def wrong_shape_plugin(tmp_path, monkeypatch):
    plugin = tmp_path / "wrong_shape.py"
    plugin.write_text(WRONG_SHAPE)
    monkeypatch.setenv("STREAMK_PLUGINS", str(plugin))
    yield
    registry._REGISTRY.pop("test-wrong-shape", None)


def test_a_schedule_for_another_shape_is_refused_by_every_consumer(wrong_shape_plugin, capsys, tmp_path):
    consumers = [["schedule", "test-wrong-shape", *P], ["simulate", "test-wrong-shape", *P],
                 ["execute", "test-wrong-shape", *P],
                 ["sweep", "--count", "4", "--sms", "4", "--decomp", "test-wrong-shape", "--json"],
                 ["plot", "schedule", "test-wrong-shape", *P, "--out", str(tmp_path / "x.png")]]
    for argv in consumers:
        with pytest.raises(SystemExit) as info:
            main(argv)
        err = capsys.readouterr().err
        assert info.value.code == 2 and "returned a Schedule for shape" in err, (argv, err)
    from streamk.gpu.decide.schedule import schedule_for  # the GPU builds named schedules through make_schedule
    from streamk.target import preset

    with pytest.raises(ScheduleError, match="returned a Schedule for shape 192x384x128"):
        schedule_for("test-wrong-shape", sk.GemmShape(384, 384, 128), "float16", preset("h100"),
                     machine=sk.Machine(4))


def test_a_schedule_for_another_tile_or_machine_is_refused():
    shape, tile, machine = sk.GemmShape(384, 384, 128), sk.TileShape(128, 128, 4), sk.Machine(4)

    def other_tile(shape, tile, machine):
        return sk.make_schedule("data-parallel", shape, sk.TileShape(128, 128, 8), machine)

    def other_machine(shape, tile, machine):
        return sk.make_schedule("data-parallel", shape, tile, sk.Machine(machine.sms + 1))

    def no_machine(shape, tile, machine):
        s = sk.make_schedule("data-parallel", shape, tile, machine)
        return sk.Schedule("custom", shape, tile, s.units, s.cta_offsets)

    try:
        sk.register("test-other-tile")(other_tile)
        sk.register("test-other-machine")(other_machine)
        sk.register("test-no-machine")(no_machine)
        with pytest.raises(ScheduleError, match="for tile 128x128x8, but 128x128x4 was asked"):
            sk.make_schedule("test-other-tile", shape, tile, machine)
        with pytest.raises(ScheduleError, match="Machine\\(sms=5, ctas_per_sm=1\\), but Machine\\(sms=4"):
            sk.make_schedule("test-other-machine", shape, tile, machine)
        assert sk.make_schedule("test-no-machine", shape, tile, machine).machine == machine  # filled in
    finally:
        for name in ("test-other-tile", "test-other-machine", "test-no-machine"):
            registry._REGISTRY.pop(name, None)


# ---- the Python API -------------------------------------------------------------------------

def test_from_ctas_refuses_non_integers_instead_of_truncating():
    shape, tile = sk.GemmShape(128, 128, 128), sk.TileShape(128, 128, 32)
    good = sk.Schedule.from_ctas("x", shape, tile, [[(0, 0, 2)], [(0, 2, 4)]])
    assert good.units.tolist() == [[0, 0, 2], [0, 2, 4]]
    for bad, fragment in [([[(0, 0, 2.9)], [(0, 2.9, 4)]], "2.9"), ([[(0, 0, "2")], [(0, 2, 4)]], "'2'"),
                          ([[(0, 0, True)], [(0, 1, 4)]], "True"), ([[(0, 0)], [(0, 2, 4)]], "(tile, k_begin, k_end)")]:
        with pytest.raises(ScheduleError, match="CTA 0 unit 0") as info:
            sk.Schedule.from_ctas("x", shape, tile, bad)
        assert fragment in str(info.value)
    with pytest.raises(ScheduleError, match=r"units must be integers \(got 2.9\)"):
        sk.Schedule("x", shape, tile, np.array([[0, 0, 2.9], [0, 2.9, 4]]), [0, 1, 2])


@pytest.mark.parametrize("options, fragment", [
    ({"grid": 3.5}, "stream-k's --grid must be an integer (got 3.5)"),
    ({"grid": True}, "must be an integer (got True)"),
    ({"grid": "4"}, "must be an integer (got '4')"),
])
def test_scheduler_options_refuse_non_integers(options, fragment):
    with pytest.raises(ScheduleError, match=fragment.replace("(", r"\(").replace(")", r"\)")):
        sk.make_schedule("stream-k", sk.GemmShape(384, 384, 128), sk.TileShape(128, 128, 4), sk.Machine(4), **options)
    assert sk.make_schedule("stream-k", sk.GemmShape(384, 384, 128), sk.TileShape(128, 128, 4), sk.Machine(4),
                            grid=np.int64(4)).grid == 4  # a NumPy integer is an integer


def test_make_schedule_refuses_values_of_the_wrong_type():
    with pytest.raises(ScheduleError, match="shape must be a streamk.GemmShape"):
        sk.make_schedule("stream-k", (384, 384, 128), sk.TileShape(128, 128, 4), sk.Machine(4))
    with pytest.raises(ScheduleError, match="GemmShape.m must be an int"):
        sk.GemmShape(2.5, 3, 4)


def test_execute_refuses_a_and_b_of_different_dtypes():
    s = sk.make_schedule("stream-k", sk.GemmShape(64, 64, 64), sk.TileShape(32, 32, 16), sk.Machine(2))
    a, b = np.ones((64, 64), np.float16), np.ones((64, 64), np.float32)
    with pytest.raises(ScheduleError, match="same dtype \\(got A float16, B float32\\)"):
        sk.execute(s, a, b)
    assert float(sk.execute(s, a, b.astype(np.float16))[0, 0]) == 64.0


def test_reregistering_the_same_function_replaces_it_and_another_needs_replace():
    namespace: dict = {}
    source = "def mine(shape, tile, machine):\n    return streamk.make_schedule('data-parallel', shape, tile, machine)\n"
    try:
        for _ in range(2):  # a notebook cell run twice: same qualified name, a new function object
            exec(compile(source, "<cell>", "exec"), {"streamk": sk, "__name__": "__main__"}, namespace)
            sk.register("test-notebook")(namespace["mine"])
        assert registry.get("test-notebook") is namespace["mine"]

        def other(shape, tile, machine):
            return sk.make_schedule("stream-k", shape, tile, machine)

        with pytest.raises(ScheduleError, match="already registered .*replace=True"):
            sk.register("test-notebook")(other)
        sk.register("test-notebook", replace=True)(other)
        assert registry.get("test-notebook") is other
    finally:
        registry._REGISTRY.pop("test-notebook", None)


def test_a_failing_user_scheduler_is_one_error_with_its_cause_chained():
    def broken(shape, tile, machine):
        return 1 / 0

    try:
        sk.register("test-broken")(broken)
        with pytest.raises(ScheduleError, match="'test-broken' failed on 8x8x8 .*ZeroDivisionError") as info:
            sk.make_schedule("test-broken", sk.GemmShape(8, 8, 8), sk.TileShape(8, 8, 8), sk.Machine(1))
        assert isinstance(info.value.__cause__, ZeroDivisionError)
    finally:
        registry._REGISTRY.pop("test-broken", None)


def test_csv_readers_raise_input_errors(files):
    from streamk.plot import load_bench_csv, load_sweep_csv

    for loader in (load_sweep_csv, load_bench_csv):
        for name in ("empty", "header", "other", "nonnum"):
            with pytest.raises(InputError, match=Path(files[name]).name):
                loader(files[name])


def test_limits_can_be_raised_by_the_user(monkeypatch):
    shape, tile, machine = sk.GemmShape(4096, 4096, 32), sk.TileShape(16, 16, 32), sk.Machine(4)  # 65,536 tiles
    monkeypatch.setenv("STREAMK_MAX_UNITS", "1000")
    with pytest.raises(LimitError, match="65,536 work units .*over the limit of 1,000 \\(STREAMK_MAX_UNITS\\)"):
        sk.make_schedule("data-parallel", shape, tile, machine)
    monkeypatch.setenv("STREAMK_MAX_UNITS", "100000")
    assert sk.make_schedule("data-parallel", shape, tile, machine).grid == 65_536
    for bad in ("lots", "inf", "nan"):
        monkeypatch.setenv("STREAMK_MAX_UNITS", bad)
        with pytest.raises(LimitError, match=f"STREAMK_MAX_UNITS must be a finite number > 0 \\(got '{bad}'\\)"):
            sk.make_schedule("data-parallel", shape, tile, machine)


def test_sweep_json_is_json_and_its_csv_names_the_setup(tmp_path, capsys):
    out = tmp_path / "s.csv"
    assert main(["sweep", "--count", "3", "--sms", "4", "--decomp", "stream-k", "--out", str(out), "--json"]) == 0
    summary = json.loads(capsys.readouterr().out)
    assert summary["shapes"] == 3
    header, first = out.read_text().splitlines()[:2]
    assert header.endswith("sms,ctas_per_sm,tile,costs") and first.endswith(',4,1,128x128x32,"0,0,1,0"')


# ---- which command an error names; limits of simulate and plot ---------------------------------

@pytest.mark.parametrize("argv, head", [
    (["schedule", "stream-k", *P, "--foo"], "streamk schedule: error: unrecognized arguments: --foo"),
    (["plot", "schedule", "stream-k", *P, "--out", "x.png", "--foo", "3"],
     "streamk plot schedule: error: unrecognized arguments: --foo 3"),
    (["sweep", "--count", "3", "--sms", "4", "--bar"], "streamk sweep: error: unrecognized arguments: --bar"),
])
def test_an_unknown_flag_is_named_by_its_subcommand(argv, head, capsys, monkeypatch, tmp_path):
    monkeypatch.chdir(tmp_path)
    with pytest.raises(SystemExit) as info:
        main(argv)
    verb = head.split(":")[0]
    assert info.value.code == 2 and capsys.readouterr().err == f"{head} (see {verb} --help)\n"


def test_an_infinite_limit_is_one_line_from_the_cli(monkeypatch, capsys):
    monkeypatch.setenv("STREAMK_MAX_UNITS", "inf")
    with pytest.raises(SystemExit) as info:
        main(["schedule", "stream-k", *P])
    err = capsys.readouterr().err
    assert info.value.code == 2 and err.startswith("streamk schedule: error: STREAMK_MAX_UNITS must be a finite number")


@pytest.mark.parametrize("argv, fragment", [
    (["simulate", "stream-k", "--shape", "4096x4096x4096", "--tile", "16x16x16", "--sms", "1000", "--grid", "100000"],
     "simulate of stream-k on 4096x4096x4096 (163,034 work units, grid 100,000) would take about 5 s, over the "
     "limit of 1 s (STREAMK_MAX_SECONDS)"),
    (["plot", "schedule", "stream-k", "--shape", "4096x4096x4096", "--tile", "64x64x32", "--sms", "108",
      "--out", "x.png"],
     "plot schedule of stream-k on 4096x4096x4096 (4,203 work units, grid 108) would take about 4 s"),
])
def test_simulate_and_plot_schedule_refuse_work_over_the_time_limit(argv, fragment, monkeypatch, capsys, tmp_path):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("STREAMK_MAX_SECONDS", "1")
    with pytest.raises(SystemExit) as info:
        main(argv)
    err = capsys.readouterr().err
    assert info.value.code == 2 and fragment in err and len(err.splitlines()) == 1, err
    monkeypatch.setenv("STREAMK_MAX_SECONDS", "600")
    from streamk.cli.simulate_cmd import check_simulate_size

    check_simulate_size(sk.make_schedule("stream-k", sk.GemmShape(4096, 4096, 4096), sk.TileShape(16, 16, 16),
                                         sk.Machine(1000), grid=100_000))  # within the default limit


def test_simulate_and_plan_fixup_refuse_what_is_not_a_schedule_or_costs():
    from streamk.sim import simulate

    s = sk.make_schedule("stream-k", sk.GemmShape(384, 384, 128), sk.TileShape(128, 128, 4), sk.Machine(4))
    with pytest.raises(ScheduleError, match=r"costs must be a streamk.Costs \(got tuple \(0, 0, 1, 0\)\)"):
        simulate(s, (0, 0, 1, 0))
    for call in (lambda: simulate("x"), lambda: sk.plan_fixup("x")):
        with pytest.raises(ScheduleError, match="schedule must be a streamk.Schedule \\(got str 'x'\\)"):
            call()
    for option, bad in (("unit_cost", -5), ("unit_cost", float("nan")), ("atomic_cost", float("inf"))):
        with pytest.raises(ScheduleError, match=f"{option} must be a finite number >= 0, at most 1e\\+100"):
            simulate(s, **{option: bad})
    assert simulate(s, unit_cost=2).makespan == 72 + 2 * 2  # CTA 0 restarts on two more tiles


def test_from_ctas_refuses_numbers_too_large_for_a_unit():
    with pytest.raises(ScheduleError, match="CTA 1 unit 0 holds a number too large for a tile or MAC iteration"):
        sk.Schedule.from_ctas("x", sk.GemmShape(128, 128, 128), sk.TileShape(128, 128, 32),
                              [[(0, 0, 2)], [(0, 2, 2**70)]])
