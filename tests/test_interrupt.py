"""Ctrl-C stops every verb within about a second, with one line on stderr and exit status 130,
and leaves no partial file: files are written to a temporary name, then renamed."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from streamk.atomic import replacing

STOP_S = 1.5  # from SIGINT to exit: "about a second", with room for a loaded 2-core CI machine
# A turnstile sweep runs on the event simulator: about a minute of work, far longer than the test waits
SWEEP = ["sweep", "--sms", "108", "--costs", "32,32,1,8", "--fixup", "turnstile", "--count", "1500",
         "--out", "sweep.csv"]


def interrupt(argv: list[str], cwd: Path, after_s: float, workers: int) -> tuple[subprocess.CompletedProcess, float]:
    """Run ``streamk argv`` in ``cwd``, send SIGINT after ``after_s``; the result and the seconds
    it took to exit from the signal."""
    env = dict(os.environ, STREAMK_SWEEP_WORKERS=str(workers))
    proc = subprocess.Popen([sys.executable, "-m", "streamk", *argv], cwd=cwd, env=env, text=True,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    time.sleep(after_s)
    assert proc.poll() is None, f"finished before the signal: {proc.communicate()}"
    sent = time.monotonic()
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=60)
    return subprocess.CompletedProcess(argv, proc.returncode, out, err), time.monotonic() - sent


def partial_files(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.rglob("*") if p.is_file() and ".part" in p.name)


@pytest.mark.parametrize("workers", [2, 1])
def test_ctrl_c_stops_a_sweep_at_once_with_one_line_and_no_partial_file(tmp_path, workers):
    done, took = interrupt(SWEEP, tmp_path, 2.0, workers)
    assert done.returncode == 130, done.stderr
    assert took < STOP_S, f"exited {took:.1f} s after SIGINT with {workers} workers"
    assert done.stderr.strip() == "streamk: interrupted"
    assert not (tmp_path / "sweep.csv").exists() and partial_files(tmp_path) == []


def test_ctrl_c_during_the_demo_leaves_only_whole_pngs(tmp_path):
    done, took = interrupt(["demo", "--out", "demo", "--no-gpu"], tmp_path, 3.0, 1)
    assert done.returncode == 130 and took < STOP_S, done.stderr
    assert "Traceback" not in done.stderr and done.stderr.strip().splitlines()[-1] == "streamk: interrupted"
    assert partial_files(tmp_path) == []
    for png in (tmp_path / "demo").glob("*.png"):  # a PNG ends with its IEND chunk
        assert png.read_bytes()[-8:-4] == b"IEND", f"{png.name} is truncated"


def test_a_file_written_through_replacing_is_whole_or_untouched(tmp_path):
    path = tmp_path / "rows.csv"
    path.write_text("old\n")
    with pytest.raises(KeyboardInterrupt):
        with replacing(path) as tmp:
            tmp.write_text("half a ne")
            raise KeyboardInterrupt
    assert path.read_text() == "old\n" and sorted(p.name for p in tmp_path.iterdir()) == ["rows.csv"]
    with replacing(path) as tmp:
        tmp.write_text("new\n")
    assert path.read_text() == "new\n" and sorted(p.name for p in tmp_path.iterdir()) == ["rows.csv"]
    assert path.stat().st_mode & 0o777 == 0o666 & ~_umask()


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask
