"""The README's CPU commands run as shown (in-process, in a scratch folder), and what it shows of
their output is what they print."""

from __future__ import annotations

import json
import re
import shlex
from pathlib import Path

import pytest

from streamk.cli import main

README = Path(__file__).resolve().parents[1] / "README.md"
GPU_VERBS = {"kernels", "gemm", "bench"}  # need NVRTC compiles of minutes or a GPU: not run here


def readme_commands() -> list[list[str]]:
    """Each `$ streamk ...` line of the README's code blocks, comments stripped."""
    commands = []
    for line in README.read_text().splitlines():
        match = re.match(r"^\$ streamk (.*)$", line.strip())
        if match:
            commands.append(shlex.split(match.group(1), comments=True))
    return commands


def test_the_readme_shows_commands_of_every_cpu_verb():
    verbs = {argv[0] for argv in readme_commands()}
    assert {"schedule", "simulate", "sweep", "plot"} <= verbs


@pytest.mark.parametrize("argv", [a for a in readme_commands() if a[0] not in GPU_VERBS], ids=" ".join)
def test_a_readme_command_runs_as_shown(argv, tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    if "--csv" in argv:  # a plot of the sweep the README runs just before: a small one stands in
        assert main(["sweep", "--count", "50", "--sms", "108", "--out", argv[argv.index("--csv") + 1]]) == 0
        capsys.readouterr()
    assert main(argv) == 0
    out = capsys.readouterr().out
    if "--json" in argv:
        json.loads(out)  # one JSON object, nothing else on stdout
    if "--out" in argv:
        assert (tmp_path / argv[argv.index("--out") + 1]).stat().st_size > 0


def test_the_readme_schedule_listing_is_what_the_command_prints(capsys):
    text = README.read_text()
    block = text[text.index("$ streamk schedule stream-k"):]
    shown = block[:block.index("```")].splitlines()[1:]
    assert main(["schedule", "stream-k", "--shape", "384x384x128", "--tile", "128x128x4", "--sms", "4"]) == 0
    assert capsys.readouterr().out.splitlines() == [line for line in shown if line.strip()]


def test_the_readme_deadlock_example_reports_a_deadlock_as_json(capsys):
    argv = ["simulate", "stream-k", "--shape", "384x384x128", "--tile", "128x128x4", "--sms", "1", "--grid", "2",
            "--json"]
    assert " ".join(argv) in " ".join(README.read_text().split())
    assert main(argv) == 0
    assert json.loads(capsys.readouterr().out)["deadlock"] is True


def test_the_kernel_listing_in_docs_names_exactly_the_shipped_entry_points():
    build = pytest.importorskip("streamk.gpu.build", reason="needs the gpu extra (cuda-bindings)")
    text = (README.parent / "docs" / "gpu.md").read_text()
    block = text[text.index("$ streamk kernels --arch sm_90a"):]
    listed = [line.split()[0] for line in block[:block.index("```")].splitlines()[1:] if line.strip()]
    shipped = [entry for entries in build.UNITS.values() for entry in entries]
    assert sorted(listed) == sorted(shipped)
    assert all(line.rstrip().endswith(" ok") for line in block[:block.index("```")].splitlines()[1:] if line.strip())
