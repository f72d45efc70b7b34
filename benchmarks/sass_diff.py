"""Compare the SASS of every kernel entry point between a git commit and the working tree.

No GPU needed: both trees compile their kernels with NVRTC (``streamk kernels``, each into a fresh
cache directory), ``cuobjdump -sass`` disassembles every cubin, and each entry present in both is
compared: instruction count, and the instruction sequence with registers, predicates, addresses,
branch targets normalized (``--loose``: parameter and memory-operand offsets too), so a renumbered
register or a moved block is no difference, a changed instruction, operand or order is. Identical sequences mean identical device code.

    PYTHONPATH=. .venv/bin/python benchmarks/sass_diff.py --base 6fdc452 [--arch sm_90a] [--show N]

``--base`` is any commit (its ``streamk/`` is exported with ``git archive``); ``CUOBJDUMP`` names
the disassembler (default: on PATH, else /opt/cudatools/nvidia/cu13/bin/cuobjdump).
"""

from __future__ import annotations

import argparse
import difflib
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
_FUNCTION = re.compile(r"^\s*Function : (\w+)")
_INSTR = re.compile(r"/\*[0-9a-f]{4,}\*/\s+(.*?)\s*;")
_NORMALIZE = [  # what register allocation and code placement move without changing the code
    (re.compile(r"\bU?R\d+\b"), "R"),                                    # registers, uniform ones
    (re.compile(r"\bU?P\d\b"), "P"),                                     # predicates
    (re.compile(r"\b(BRA|BSSY|CALL\.REL|CALL\.REL\.NOINC|JMP|BREAK|BPT)(.*?)0x[0-9a-f]+"), r"\1\2#"),
]
_LOOSE = [  # --loose: also parameter offsets and memory-operand offsets (a moved field or buffer)
    (re.compile(r"c\[0x[0-9a-f]+\]\[0x[0-9a-f]+\]"), "c[]"),
    (re.compile(r"(\[[^\]]*?)[+-]0x[0-9a-f]+\]"), r"\1+#]"),
]


def cuobjdump() -> str:
    return os.environ.get("CUOBJDUMP") or shutil.which("cuobjdump") or "/opt/cudatools/nvidia/cu13/bin/cuobjdump"


def compile_tree(tree: Path, arch: str, cache: Path) -> list[dict]:
    env = {**os.environ, "PYTHONPATH": str(tree), "STREAMK_CACHE_DIR": str(cache), "STREAMK_NO_CACHE": "1"}
    env.pop("STREAMK_TRACE", None)
    out = subprocess.run([sys.executable, "-m", "streamk", "kernels", "--arch", arch, "--json"], cwd=tree,
                         env=env, capture_output=True, text=True, check=False)
    if out.returncode != 0:
        raise SystemExit(f"streamk kernels failed in {tree}:\n{out.stderr}")
    return json.loads(out.stdout)


def sass(cache: Path) -> dict[str, list[str]]:
    """Entry point -> its SASS instructions, from every cubin in ``cache``."""
    functions: dict[str, list[str]] = {}
    for cubin in sorted(cache.glob("*.cubin")):
        text = subprocess.run([cuobjdump(), "-sass", str(cubin)], capture_output=True, text=True, check=True).stdout
        name = None
        for line in text.splitlines():
            if (m := _FUNCTION.match(line)):
                name = m.group(1)
                functions[name] = []
            elif name and (m := _INSTR.search(line)):
                functions[name].append(m.group(1))
    return functions


def normalized(instr: str, loose: bool = False) -> str:
    for pattern, repl in _NORMALIZE + (_LOOSE if loose else []):
        instr = pattern.sub(repl, instr)
    return " ".join(instr.split())


def opcodes(seq: list[str]) -> dict[str, int]:
    counts: dict[str, int] = {}
    for ins in seq:
        op = ins.split()[0] if not ins.startswith("@") else ins.split()[1]
        counts[op] = counts.get(op, 0) + 1
    return counts


def compare(before: dict[str, list[str]], after: dict[str, list[str]], show: int, loose: bool = False) -> int:
    differing = 0
    for name in sorted(set(before) | set(after)):
        if name not in after or name not in before:
            print(f"{name:<40} {'only before' if name in before else 'only after'}")
            continue
        a = [normalized(i, loose) for i in before[name] if i != "NOP"]
        b = [normalized(i, loose) for i in after[name] if i != "NOP"]
        if a == b:
            print(f"{name:<40} identical ({len(a)} instructions)")
            continue
        differing += 1
        ops_a, ops_b = opcodes(a), opcodes(b)
        delta = {op: ops_b.get(op, 0) - ops_a.get(op, 0) for op in sorted(set(ops_a) | set(ops_b))}
        delta = {op: d for op, d in delta.items() if d}
        changed = sum(1 for tag, *_ in difflib.SequenceMatcher(None, a, b, autojunk=False).get_opcodes()
                      if tag != "equal")
        print(f"{name:<40} DIFFERS: {len(a)} -> {len(b)} instructions, {changed} changed runs, opcodes {delta}")
        if show:
            diff = difflib.unified_diff(a, b, "before", "after", n=1, lineterm="")
            for line in list(diff)[:show]:
                print("    " + line)
    return differing


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--base", required=True, help="commit to compare the working tree against")
    ap.add_argument("--arch", default="sm_90a", choices=["sm_80", "sm_90a"])
    ap.add_argument("--save", help="directory keeping the base's SASS (reused when there: compiling takes minutes)")
    ap.add_argument("--loose", action="store_true", help="also ignore parameter and memory-operand offsets")
    ap.add_argument("--show", type=int, default=0, help="print up to N lines of each differing entry's diff")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="sass_diff.") as tmp:
        base = Path(tmp) / "base"
        base.mkdir()
        archive = subprocess.run(["git", "archive", args.base, "streamk"], cwd=ROOT, capture_output=True, check=True)
        subprocess.run(["tar", "-x", "-C", str(base)], input=archive.stdout, check=True)
        dumps = {}
        saved = Path(args.save) / f"{args.base}-{args.arch}.json" if args.save else None
        if saved and saved.exists():
            dumps["before"] = json.loads(saved.read_text())
        for label, tree in (("before", base), ("after", ROOT)):
            if label not in dumps:
                cache = Path(tmp) / f"cache-{label}"
                compile_tree(tree, args.arch, cache)
                dumps[label] = sass(cache)
        if saved:
            saved.parent.mkdir(parents=True, exist_ok=True)
            saved.write_text(json.dumps(dumps["before"]))
        differing = compare(dumps["before"], dumps["after"], args.show, args.loose)
    print(f"{differing} entries differ", file=sys.stderr)
    return 1 if differing else 0


if __name__ == "__main__":
    sys.exit(main())
