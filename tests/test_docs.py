"""The docs run as written: every CPU command and Python snippet of README.md and docs/*.md runs,
and the output a doc shows is the output it prints. A doc can then only drift if this fails.

How a doc is read (the conventions a doc's author follows):

* A fenced block with lines ``$ COMMAND`` is a terminal session, run by bash in a scratch folder
  (one per doc, shared by its blocks in order) with this interpreter's ``streamk`` and ``python``
  first on PATH. Each command's shown output is the lines after it up to the next ``$`` line;
  stdout and stderr are compared together, as a terminal shows them. A command ending in ``\\``
  continues on the next line, and one whose next lines start with ``> `` continues on those.
* A ``python`` block runs as a script in that folder; the ``output`` block right after it, if
  any, is what it prints.
* Shown output may be abridged with ``...``: a line that is only ``...`` stands for any number of
  lines, and ``...`` inside a line for any text. A command shown without output is only run.
* ``<!-- docs-test: skip REASON -->`` on the line before a block skips it, visibly, with that
  reason (GPU commands and snippets: they were measured on a GPU). ``<!-- docs-test: file NAME
  -->`` before a python block also saves it as NAME in the scratch folder, for a later command.
"""

from __future__ import annotations

import difflib
import os
import re
import shutil
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
FENCE = re.compile(r"^(`{3,})(\S*)\s*$")
MARKER = re.compile(r"^<!--\s*docs-test:\s*(skip|file)\s+(.*?)\s*-->\s*$")
TIMEOUT_S = 120  # one command; the slowest (a sweep of the paper's 32,824 shapes) takes ~10 s


@dataclass
class Block:
    doc: Path
    line: int  # of the opening fence, 1-based
    lang: str
    lines: list[str]
    marker: tuple[str, str] | None = None
    output: list[str] | None = None  # python: the ``output`` block after it

    @property
    def where(self) -> str:
        return f"{self.doc.relative_to(ROOT)}:{self.line}"


@dataclass
class Command:
    text: str
    shown: list[str] = field(default_factory=list)


def blocks(doc: Path) -> list[Block]:
    """The fenced blocks of ``doc``; an unclosed fence or a closing fence with text after it is a
    failure (it swallows the rest of the page into one code block)."""
    lines = doc.read_text().splitlines()
    found: list[Block] = []
    i = 0
    while i < len(lines):
        match = FENCE.match(lines[i])
        if not match:
            assert not lines[i].lstrip().startswith("```") or lines[i].startswith("    "), \
                f"{doc.name}:{i + 1}: a fence must stand alone on its line: {lines[i]!r}"
            i += 1
            continue
        ticks, lang = match.groups()
        end = next((j for j in range(i + 1, len(lines)) if lines[j].startswith(ticks)), None)
        assert end is not None, f"{doc.name}:{i + 1}: the block opened here is never closed"
        assert lines[end].rstrip() == ticks, \
            f"{doc.name}:{end + 1}: a closing fence must stand alone on its line: {lines[end]!r}"
        before = next((lines[j] for j in range(i - 1, -1, -1) if lines[j].strip()), "")
        marker = MARKER.match(before)
        found.append(Block(doc, i + 1, lang, lines[i + 1:end], marker.groups() if marker else None))
        i = end + 1
    for prev, block in zip(found, found[1:]):
        if prev.lang == "python" and block.lang == "output":
            prev.output = block.lines
    return found


def commands(block: Block) -> list[Command]:
    """The ``$`` commands of a session block, each with the output shown under it."""
    out: list[Command] = []
    lines = iter(block.lines)
    for line in lines:
        if line.startswith("$ "):
            text = line[2:]
            while text.endswith("\\"):
                text = text[:-1] + " " + next(lines).strip()
            out.append(Command(text))
        elif out and line.startswith("> ") and not out[-1].shown:
            out[-1].text += "\n" + line[2:]
        elif out:
            out[-1].shown.append(line)
    return out


def matches(shown: list[str], printed: list[str]) -> bool:
    """Whether ``printed`` is ``shown`` with each ``...`` line standing for any lines and each
    ``...`` in a line for any text."""
    pattern = "".join("(?:.*\n)*?" if line.strip() == "..." else
                      ".*".join(map(re.escape, line.rstrip().split("..."))) + r"[ \t]*\n" for line in shown)
    return re.fullmatch(pattern, "".join(line.rstrip() + "\n" for line in printed)) is not None


def scratch_folder(doc: Path, tmp: Path) -> Path:
    """A folder to run ``doc``'s commands in: empty, but with a copy of benchmarks/ where the doc
    runs its scripts (they write beside their data) and a docs/img/ for the images they draw."""
    text = doc.read_text()
    if "benchmarks/" in text:
        shutil.copytree(ROOT / "benchmarks", tmp / "benchmarks")
    (tmp / "docs" / "img").mkdir(parents=True)
    return tmp


def difference(shown: list[str], printed: list[str]) -> str:
    """What differs, as a diff from the doc to the program, at most 40 lines."""
    diff = list(difflib.unified_diff(shown, [line.rstrip() for line in printed], "the doc shows", "it prints",
                                     n=1, lineterm=""))
    return "\n".join(diff[:40] + ([f"... {len(diff) - 40} more lines"] if len(diff) > 40 else []))


def run(argv: list[str], cwd: Path) -> tuple[int, list[str]]:
    env = dict(os.environ, PATH=f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}",
               PYTHONPATH=str(ROOT), COLUMNS="80")
    env.pop("STREAMK_PLUGINS", None)
    done = subprocess.run(argv, cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                          timeout=TIMEOUT_S, check=False)
    return done.returncode, done.stdout.splitlines()


def check(block: Block, cwd: Path) -> list[str]:
    """Run one block; the differences between what it shows and what runs, one text each."""
    problems = []
    if block.lang == "python":
        if block.marker and block.marker[0] == "file":
            (cwd / block.marker[1]).write_text("\n".join(block.lines) + "\n")
        status, printed = run([sys.executable, "-c", "\n".join(block.lines)], cwd)
        if status != 0:
            return [f"{block.where}: the snippet failed:\n" + "\n".join(printed[-15:])]
        if block.output is not None and not matches(block.output, printed):
            problems.append(f"{block.where}: the snippet's output differs:\n" + difference(block.output, printed))
        return problems
    for cmd in commands(block):
        status, printed = run(["bash", "-c", cmd.text], cwd)
        error_shown = any("error:" in line for line in cmd.shown)
        if status != 0 and not error_shown:
            problems.append(f"{block.where}: `{cmd.text}` exited {status}:\n" + "\n".join(printed[-15:]))
        elif cmd.shown and not matches(cmd.shown, printed):
            problems.append(f"{block.where}: `{cmd.text}` differs:\n" + difference(cmd.shown, printed))
    return problems


def runnable(block: Block) -> bool:
    return block.lang == "python" or any(line.startswith("$ ") for line in block.lines)


@pytest.mark.parametrize("doc", DOCS, ids=lambda p: p.name)
def test_every_fence_of_a_doc_is_closed_and_alone_on_its_line(doc):
    blocks(doc)


@pytest.mark.slow(15)
@pytest.mark.parametrize("doc", DOCS, ids=lambda p: p.name)
def test_a_docs_commands_and_snippets_print_what_it_shows(doc, tmp_path):
    cwd = scratch_folder(doc, tmp_path)
    problems = []
    for block in blocks(doc):
        if runnable(block) and not (block.marker and block.marker[0] == "skip"):
            problems += check(block, cwd)
    assert not problems, "\n\n".join(problems)


def _blocks_or_none(doc: Path) -> list[Block]:
    try:
        return blocks(doc)
    except AssertionError:  # a broken fence: the fence test above names it
        return []


SKIPPED = [b for doc in DOCS for b in _blocks_or_none(doc) if runnable(b) and b.marker and b.marker[0] == "skip"]


@pytest.mark.parametrize("block", SKIPPED, ids=lambda b: b.where)
def test_a_block_the_docs_test_does_not_run_says_why(block):
    pytest.skip(f"{block.where} not run: {block.marker[1]}")  # listed in the run's summary (-ra)


def test_the_conventions_hold_on_a_small_doc(tmp_path):
    doc = tmp_path / "doc.md"
    doc.write_text("<!-- docs-test: skip needs a GPU -->\n```\n$ streamk gemm --shape 8x8x8\nok\n```\n\n"
                   "```\n$ echo one; echo two; \\\n  echo three\none\n...\nthree\n$ echo 'a b c'\na ... c\n```\n")
    found = blocks(doc)
    assert [b.marker for b in found] == [("skip", "needs a GPU"), None]
    cmds = commands(found[1])
    assert [c.text for c in cmds] == ["echo one; echo two;  echo three", "echo 'a b c'"]
    assert check(found[1], tmp_path) == []
    assert not matches(["one", "three"], ["one", "two", "three"])  # no ... : every line shown
    (tmp_path / "bad.md").write_text("```\ncode\n``` text after the fence\n")
    with pytest.raises(AssertionError, match="never closed|alone on its line"):
        blocks(tmp_path / "bad.md")


def test_the_simulator_doc_shows_the_sweeps_python_entry_points_in_a_snippet_it_runs():
    snippets = [b for b in blocks(ROOT / "docs" / "simulator.md") if b.lang == "python" and b.output is not None]
    code = ["\n".join(b.lines) for b in snippets]
    assert any("corpus(" in c and "sweep(" in c and ".write_csv(" in c and ".summary()" in c for c in code)
