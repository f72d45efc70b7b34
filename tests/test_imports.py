"""The package's layers: every module imports; the library (core, sched, sim, gpu) never imports
what sits above it (the bench harness, the CLI, the plots), not even inside a function; and no
two streamk.gpu modules import each other, directly or round a loop (module-level imports)."""

import ast
import importlib
import pkgutil
from pathlib import Path

import pytest

import streamk

ROOT = Path(streamk.__file__).parent
ABOVE = ("streamk.bench", "streamk.cli", "streamk.plot")
OPTIONAL = {"torch"}  # streamk.gpu.runtime.torch_op registers an op with torch.library: only where torch is


def _modules() -> dict[str, Path]:
    out = {"streamk": ROOT / "__init__.py"}
    for info in pkgutil.walk_packages([str(ROOT)], "streamk."):
        rel = Path(*info.name.split(".")[1:])
        out[info.name] = ROOT / rel / "__init__.py" if info.ispkg else ROOT / rel.with_suffix(".py")
    return out


MODULES = _modules()


def _library(name: str) -> bool:
    """Core (streamk's own modules), the schedulers, the simulator and the GPU backend."""
    parts = name.split(".")
    if name == "streamk.__main__":
        return False
    own = name == "streamk" or (len(parts) == 2 and MODULES[name].name != "__init__.py")
    return own or parts[1:2] in (["sched"], ["sim"], ["gpu"])


def _imports(name: str, *, top_level: bool) -> set[str]:
    """The streamk modules ``name`` imports (``top_level``: at import time only, not in functions
    or ``if TYPE_CHECKING`` blocks), a ``from P import M`` of a module M counted as P.M."""
    path = MODULES[name]
    package = name if path.name == "__init__.py" else name.rsplit(".", 1)[0]
    tree = ast.parse(path.read_text())
    nodes = []

    def visit(body):
        for node in body:
            if isinstance(node, (ast.Import, ast.ImportFrom)):
                nodes.append(node)
            elif not top_level:
                nodes.extend(n for n in ast.walk(node) if isinstance(n, (ast.Import, ast.ImportFrom)))
            elif isinstance(node, (ast.If, ast.Try)) and not (isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test)):
                visit(node.body)
                visit(getattr(node, "orelse", []))
                for handler in getattr(node, "handlers", []):
                    visit(handler.body)

    visit(tree.body)
    out = set()
    for node in nodes:
        if isinstance(node, ast.Import):
            out |= {a.name for a in node.names if a.name.startswith("streamk")}
            continue
        if node.level:
            base = package.split(".")
            base = base[:len(base) - node.level + 1]
            target = ".".join(base + ([node.module] if node.module else []))
        else:
            target = node.module or ""
        if not target.startswith("streamk"):
            continue
        subs = {f"{target}.{a.name}" for a in node.names if f"{target}.{a.name}" in MODULES}
        out |= subs if subs and len(subs) == len(node.names) else subs | {target}
    return out


@pytest.mark.parametrize("name", sorted(set(MODULES) - {"streamk.__main__"}))  # that one runs the CLI
def test_every_module_imports(name):
    try:
        importlib.import_module(name)
    except ModuleNotFoundError as exc:
        if exc.name not in OPTIONAL:
            raise
        pytest.skip(f"{name} needs {exc.name}, which is not installed")


def test_the_library_never_imports_the_bench_harness_the_cli_or_the_plots():
    bad = [(name, imported) for name in MODULES if _library(name)
           for imported in _imports(name, top_level=False) if imported.startswith(ABOVE)]
    assert not bad, f"library modules importing from above (module, import): {bad}"
    assert {"streamk.target", "streamk.gpu.runtime.plan", "streamk.sched.auto", "streamk.sim.events"} <= {
        n for n in MODULES if _library(n)}


def test_no_import_cycle_among_the_gpu_modules():
    gpu = [n for n in MODULES if n.startswith("streamk.gpu")]
    graph = {n: {m for m in _imports(n, top_level=True) if m.startswith("streamk.gpu") and m != n} for n in gpu}
    cycles = []

    def walk(node, path):
        for nxt in graph.get(node, ()):
            if nxt in path:
                cycles.append(path[path.index(nxt):] + [nxt])
            elif nxt not in done:
                walk(nxt, path + [nxt])
        done.add(node)

    done: set[str] = set()
    for start in gpu:
        if start not in done:
            walk(start, [start])
    assert not cycles, "import cycles: " + "; ".join(" -> ".join(c) for c in cycles[:5])
    assert "streamk.gpu.catalogue.variants" in graph["streamk.gpu.catalogue"]  # the graph is not empty
