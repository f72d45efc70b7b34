"""`streamk --help` starts in a blink: matplotlib is imported only by the verbs that draw, and the
GPU backend and each verb's module only when that verb runs."""

from __future__ import annotations

import subprocess
import sys

import pytest

PROBE = """
import sys
from streamk.cli import main
try:
    main(sys.argv[1:])
except SystemExit:
    pass
heavy = sorted(m for m in sys.modules if m == "matplotlib" or m.startswith(("streamk.gpu.", "streamk.cli.")))
print("loaded:", *heavy)
"""


def modules_after(*argv: str) -> set[str]:
    done = subprocess.run([sys.executable, "-c", PROBE, *argv], capture_output=True, text=True, check=True)
    return set(done.stdout.strip().splitlines()[-1].split()[1:])


@pytest.mark.parametrize("argv", [["--help"], ["--version"]])
def test_help_imports_no_plotting_no_gpu_backend_and_no_verb(argv):
    assert modules_after(*argv) == set()


def test_a_verb_that_does_not_draw_imports_no_matplotlib():
    loaded = modules_after("simulate", "stream-k", "--shape", "384x384x128", "--sms", "4", "--json")
    assert "streamk.cli.simulate_cmd" in loaded and "matplotlib" not in loaded
