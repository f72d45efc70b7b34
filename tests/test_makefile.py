"""The Makefile rebuilds a venv that another interpreter made, instead of reusing it."""

from __future__ import annotations

import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

MAKEFILE = Path(__file__).resolve().parents[1] / "Makefile"


def planned(folder: Path) -> str:
    """What `make demo` would run in ``folder`` (dry run), with this interpreter as PYTHON."""
    done = subprocess.run(["make", "-n", "-C", str(folder), "demo", f"PYTHON={sys.executable}"],
                          capture_output=True, text=True, check=True)
    return done.stdout


@pytest.mark.skipif(shutil.which("make") is None, reason="make is not installed")
def test_a_venv_built_by_another_interpreter_is_rebuilt(tmp_path):
    shutil.copy(MAKEFILE, tmp_path / "Makefile")
    (tmp_path / "pyproject.toml").write_text("")
    time.sleep(0.01)
    venv = tmp_path / ".venv"
    venv.mkdir()
    (venv / ".installed").write_text("")  # up to date with pyproject.toml, as after a good build
    (venv / ".python").write_text("/usr/bin/python3.10 3 10 12\n")  # ... but by another interpreter
    assert "-m venv --clear .venv" in planned(tmp_path)
    this = subprocess.run([sys.executable, "-c", "import sys; print(sys.executable, *sys.version_info[:3])"],
                          capture_output=True, text=True, check=True).stdout
    (venv / ".python").write_text(this)
    assert "-m venv" not in planned(tmp_path) and "streamk demo" in planned(tmp_path)
    (venv / ".python").unlink()  # a build that failed half-way records no interpreter
    assert "-m venv --clear .venv" in planned(tmp_path)
