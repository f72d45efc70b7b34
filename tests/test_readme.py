"""What the README and docs/gpu.md say that tests/test_docs.py cannot run: the deadlock example
in its prose, and the kernel listing (its compile is tests/test_gpu_compile.py's)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from streamk.cli import main

README = Path(__file__).resolve().parents[1] / "README.md"


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
