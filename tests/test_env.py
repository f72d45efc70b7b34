"""Each STREAMK_* variable that picks a device, a folder or a process count is checked: a value
streamk cannot use is one line naming the variable, the value and what it accepts."""

from __future__ import annotations

import time

import pytest

from streamk import env
from streamk.cli import main
from streamk.errors import SettingError


def refusal(argv: list[str], capsys) -> str:
    with pytest.raises(SystemExit) as exit_:
        main(argv)
    err = capsys.readouterr().err
    assert exit_.value.code == 2 and len(err.strip().splitlines()) == 1, err
    return err


def test_sweep_workers_are_capped_at_the_cpus(monkeypatch, capsys):
    monkeypatch.setenv(env.WORKERS, "100000")
    assert env.sweep_workers() == env.cpus()
    started = time.perf_counter()
    assert main(["sweep", "--sms", "108", "--count", "200", "--json"]) == 0
    assert time.perf_counter() - started < 30  # 100,000 processes would take minutes to start
    for bad in ("0", "-1", "two", ""):
        monkeypatch.setenv(env.WORKERS, bad)
        with pytest.raises(SettingError, match=f"{env.WORKERS}={bad!r} .* an integer >= 1"):
            env.sweep_workers()


@pytest.mark.parametrize("verb", [["gemm", "--shape", "64x64x64"], ["calibrate"], ["demo", "--out", "unused"]])
def test_a_device_that_is_not_an_ordinal_is_one_line(verb, monkeypatch, capsys):
    monkeypatch.setenv(env.DEVICE, "abc")
    assert "STREAMK_DEVICE='abc' cannot be used: it must be a CUDA device ordinal" in refusal(verb, capsys)
    monkeypatch.setenv(env.DEVICE, "1")
    assert env.device_ordinal() == 1


def test_an_unusable_cache_dir_is_one_line(tmp_path, monkeypatch, capsys):
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    monkeypatch.setenv(env.CACHE_DIR, str(blocker / "cache"))
    err = refusal(["kernels", "--arch", "sm_80"], capsys)
    assert f"STREAMK_CACHE_DIR={str(blocker / 'cache')!r} cannot be used: it must be a folder" in err
    monkeypatch.setenv(env.CACHE_DIR, str(tmp_path / "new" / "cache"))
    assert env.cache_dir().is_dir()


def test_a_malformed_calibration_file_is_one_line_and_help_still_works(tmp_path, monkeypatch, capsys):
    (tmp_path / "h100.json").write_text('{"format": 1, "kernels": [{"dtype": "float16"}]}')
    monkeypatch.setenv(env.CALIBRATION, str(tmp_path))
    err = refusal(["schedule", "stream-k", "--shape", "384x384x128", "--sms", "4"], capsys)
    assert f"STREAMK_CALIBRATION={str(tmp_path)!r} cannot be used" in err and "h100.json is not one" in err
    with pytest.raises(SystemExit) as exit_:
        main(["--help"])
    assert exit_.value.code == 0 and "schedule" in capsys.readouterr().out
    monkeypatch.setenv(env.CALIBRATION, str(tmp_path / "missing"))
    assert "it is neither a folder nor a file" in refusal(["simulate", "stream-k", "--shape", "384x384x128", "--sms", "4"], capsys)
