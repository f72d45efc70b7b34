"""The ``streamk`` command line: one module per verb, each with ``add_parser`` and ``run``.

Bad arguments end in ``parser.error`` (one line, exit 2); errors streamk raises on purpose
(StreamkError) become one line on stderr and exit 2 too, never a traceback.
"""

from __future__ import annotations

import argparse
import importlib
import importlib.util
import os
import sys
from pathlib import Path

from ..errors import StreamkError

# Verb modules, in the order `--help` lists them. Each defines
#   add_parser(subparsers) -> argparse.ArgumentParser   and   run(args) -> int
VERBS = ["schedule", "execute", "simulate", "sweep", "plot", "kernels", "gemm", "bench", "demo"]


class _Parser(argparse.ArgumentParser):
    """An ArgumentParser whose errors are one line on stderr (exit 2), with a pointer to --help."""

    def error(self, message: str):  # type: ignore[override]
        self.exit(2, f"{self.prog}: error: {message} (see {self.prog} --help)\n")


def build_parser() -> tuple[argparse.ArgumentParser, dict[str, argparse.ArgumentParser]]:
    parser = _Parser(
        prog="streamk",
        description="Stream-K GEMM work decompositions: build schedules, execute them, simulate "
                    "them on an SM model, plot them, and run them on the GPU.",
        epilog="Example: streamk schedule stream-k --shape 384x384x128 --tile 128x128x4 --sms 4",
    )
    sub = parser.add_subparsers(dest="verb", metavar="VERB", parser_class=_Parser)
    sub.required = True
    parsers = {}
    for verb in VERBS:
        try:
            module = importlib.import_module(f"{__name__}.{verb}_cmd")
        except ModuleNotFoundError as exc:
            if exc.name == f"{__name__}.{verb}_cmd":
                continue  # verb not built yet
            raise
        p = module.add_parser(sub)
        p.set_defaults(_run=module.run)
        parsers[verb] = p
    return parser, parsers


PLUGINS_ENV = "STREAMK_PLUGINS"
"""Comma-separated modules or .py files imported before the CLI runs, so a scheduler a user
registers with ``@streamk.register`` is a DECOMP of every verb (and of ``sweep``'s default set)."""


def load_plugins(spec: str | None = None) -> list[str]:
    spec = os.environ.get(PLUGINS_ENV, "") if spec is None else spec
    loaded = []
    for item in filter(None, (part.strip() for part in spec.split(","))):
        try:
            if item.endswith(".py"):
                name = f"streamk_plugin_{Path(item).stem}"
                module_spec = importlib.util.spec_from_file_location(name, item)
                if module_spec is None or module_spec.loader is None:
                    raise ImportError(f"cannot load {item}")
                module = importlib.util.module_from_spec(module_spec)
                sys.modules[name] = module
                module_spec.loader.exec_module(module)
            else:
                importlib.import_module(item)
        except (ImportError, OSError) as exc:
            print(f"streamk: error: {PLUGINS_ENV} item {item!r} could not be imported: {exc}", file=sys.stderr)
            raise SystemExit(2) from None
        loaded.append(item)
    return loaded


def main(argv: list[str] | None = None) -> int:
    load_plugins()
    parser, parsers = build_parser()
    args = parser.parse_args(argv)
    try:
        return int(args._run(args) or 0)
    except StreamkError as exc:
        parsers[args.verb].error(str(exc))  # one line, exit 2
    except BrokenPipeError:
        return 0
    return 0


if __name__ == "__main__":
    sys.exit(main())
