"""The ``streamk`` command line: one module per verb, each with ``add_parser`` and ``run``.

Bad arguments end in ``parser.error`` (one line, exit 2); errors streamk raises on purpose
(StreamkError) become one line on stderr and exit 2 too, never a traceback.
"""

from __future__ import annotations

import argparse
import importlib
import importlib.util
import os
import signal
import sys
import threading
import time
from pathlib import Path

from .. import __version__, env
from ..errors import StreamkError

# Verbs, in the order `--help` lists them, with their one-line help. Each is a module <verb>_cmd
# defining add_parser(subparsers) -> argparse.ArgumentParser and run(args) -> int, imported only
# when its verb is given (so `streamk --help` starts in a blink).
VERBS = {
    "schedule": "print the per-CTA work units of a decomposition",
    "execute": "compute a GEMM on the CPU exactly as a schedule says, and check it",
    "simulate": "simulate a decomposition on SM slots (makespan, utilization, waits)",
    "sweep": "simulate decompositions over the paper's GEMM shape corpus",
    "plot": "draw a wave schedule or a corpus landscape to a PNG",
    "kernels": "compile every GPU kernel with NVRTC (no GPU needed)",
    "gemm": "run one GEMM on the GPU through a schedule; check and time it",
    "bench": "time GPU kernels vs cuBLAS on the corpus sample (GPU, PyTorch)",
    "calibrate": "fit the simulator's cost terms in us to this GPU (GPU, PyTorch)",
    "fidelity": "calibrated simulator vs GPU time, per shape and decomposition",
    "demo": "simulate and plot the paper's examples and a corpus sample",
}


class _Parser(argparse.ArgumentParser):
    """An ArgumentParser whose errors are one line on stderr (exit 2), with a pointer to --help.
    Parsing records in ``args._parser`` the innermost (sub)command's parser, which then reports
    that command's errors ("streamk plot schedule: error: ...")."""

    def error(self, message: str):  # type: ignore[override]
        self.exit(2, f"{self.prog}: error: {message} (see {self.prog} --help)\n")

    def parse_known_args(self, args=None, namespace=None):  # type: ignore[override]
        namespace, extras = super().parse_known_args(args, namespace)
        if not hasattr(namespace, "_parser"):  # a subcommand's parser, parsed inside this one, set it first
            namespace._parser = self
        return namespace, extras


class _Verbs(argparse._SubParsersAction):
    """Subcommands whose modules are imported when chosen: until then each is a placeholder that
    carries only its help line."""

    def add_parser(self, name, **kwargs):  # type: ignore[override]
        if name not in self._name_parser_map:
            return super().add_parser(name, **kwargs)
        kwargs.setdefault("prog", f"{self._prog_prefix} {name}")  # the module's parser replaces the placeholder
        parser = self._name_parser_map[name] = self._parser_class(**kwargs)
        return parser

    def __call__(self, parser, namespace, values, option_string=None):
        verb = values[0]
        if verb in VERBS and not self._name_parser_map[verb].get_default("_run"):
            from ..calibrate.files import env_source

            env_source()  # every verb plans with the Targets, which read these files: a bad one is one line here
            module = importlib.import_module(f"{__name__}.{verb}_cmd")
            module.add_parser(self).set_defaults(_run=module.run)
        super().__call__(parser, namespace, values, option_string)


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog="streamk",
        description="Stream-K GEMM work decompositions: build schedules, execute them, simulate "
                    "them on an SM model, plot them, and run them on the GPU.",
        epilog="Example: streamk schedule stream-k --shape 384x384x128 --tile 128x128x4 --sms 4",
    )
    parser.add_argument("--version", action="version", version=f"streamk {__version__}")
    sub = parser.add_subparsers(dest="verb", metavar="VERB", parser_class=_Parser, action=_Verbs)
    sub.required = True
    for verb, text in VERBS.items():
        sub.add_parser(verb, help=text)
    return parser


PLUGINS_ENV = "STREAMK_PLUGINS"
"""Comma-separated modules or .py files imported before the CLI runs, so a scheduler a user
registers with ``@streamk.register`` is a DECOMP of every verb (and of ``sweep``'s default set)."""


def load_plugins(spec: str | None = None) -> list[str]:
    """Import each item of ``spec`` (default: $STREAMK_PLUGINS); one that cannot be imported,
    whatever it raises, is one line on stderr and exit 2."""
    spec = os.environ.get(PLUGINS_ENV, "") if spec is None else spec
    loaded = []
    for item in filter(None, (part.strip() for part in spec.split(","))):
        try:
            _import_plugin(item)
        except Exception as exc:  # a plugin is a user's code: any failure is reported, not raised
            where = f" (line {exc.lineno})" if isinstance(exc, SyntaxError) and exc.lineno else ""
            reason = str(exc).splitlines()[0] if str(exc) else ""
            print(f"streamk: error: {PLUGINS_ENV} item {item!r} could not be imported: {type(exc).__name__}"
                  f"{where}: {reason}; fix it or remove it from {PLUGINS_ENV}", file=sys.stderr)
            raise SystemExit(2) from None
        loaded.append(item)
    return loaded


def _import_plugin(item: str) -> None:
    if not item.endswith(".py"):
        importlib.import_module(item)
        return
    if not Path(item).is_file():
        raise FileNotFoundError(f"no such file {item!r}")
    name = f"streamk_plugin_{Path(item).stem}"
    module_spec = importlib.util.spec_from_file_location(name, item)
    if module_spec is None or module_spec.loader is None:
        raise ImportError(f"cannot load {item}")
    module = importlib.util.module_from_spec(module_spec)
    sys.modules[name] = module
    try:
        module_spec.loader.exec_module(module)
    except BaseException:
        del sys.modules[name]
        raise


# Settings each GPU verb reads, checked before it starts (fidelity and demo check theirs where
# they reach the GPU): a bad value is one line naming the variable, not a traceback.
GPU_SETTINGS = {"kernels": (env.cache_dir,), "gemm": (env.device_ordinal, env.cache_dir),
                "bench": (env.device_ordinal, env.cache_dir), "calibrate": (env.device_ordinal, env.cache_dir)}
INTERRUPTED = 128 + 2  # the shell's status for a command ended by SIGINT


def main(argv: list[str] | None = None) -> int:
    """Run one verb; Ctrl-C anywhere ends it with one line and exit status 130 (files are written
    through ``streamk.atomic``, so none is left half-written)."""
    sigint = _SigintSeen()
    try:
        with sigint:
            return _main(argv)
    except KeyboardInterrupt:
        print("streamk: interrupted", file=sys.stderr)
        return INTERRUPTED
    except Exception:
        if not sigint.seen:
            raise
        # C code the signal reached inside (matplotlib's path extents) raised its own error instead
        print("streamk: interrupted", file=sys.stderr)
        return INTERRUPTED


class _SigintSeen:
    """While active (in the main thread, under Python's default SIGINT handler): SIGINT still raises
    KeyboardInterrupt, and ``seen`` records that it came. A KeyboardInterrupt that lands in a finalizer
    or weakref callback, which Python reports as "Exception ignored" and swallows, is delivered again
    until it raises outside such a hook (the demo once ran on to exit 0 that way); one still pending
    when the body ends is raised on the way out."""

    def __init__(self) -> None:
        self.seen, self._previous, self._previous_hook = False, None, None
        self._pending = self._in_hook = self._redelivering = False
        self._lock = threading.RLock()  # re-entered when the handler runs inside __exit__

    def _handler(self, signum: int, frame: object) -> None:
        self.seen = True
        with self._lock:
            if self._in_hook:  # raised here it would be swallowed again
                self._pending = True
                return
            self._pending = False
        signal.default_int_handler(signum, frame)

    def _unraisable(self, unraisable: object) -> None:
        self._in_hook = True
        try:
            if isinstance(getattr(unraisable, "exc_value", None), KeyboardInterrupt):
                self._pending = True
            else:
                self._previous_hook(unraisable)
            if self._pending and not self._redelivering:
                self._redelivering = True
                threading.Thread(target=self._redeliver, daemon=True).start()
        finally:
            self._in_hook = False

    def _redeliver(self) -> None:
        """From another thread, so that the handler runs in the main thread once the hook is over."""
        while True:
            time.sleep(0.005)
            with self._lock:  # checked and raised at once: no second signal after the first lands
                if not self._pending or self._previous is None:
                    self._redelivering = False
                    return
                signal.raise_signal(signal.SIGINT)

    def __enter__(self) -> "_SigintSeen":
        if threading.current_thread() is threading.main_thread() and \
                signal.getsignal(signal.SIGINT) is signal.default_int_handler:
            self._previous = signal.signal(signal.SIGINT, self._handler)
            self._previous_hook, sys.unraisablehook = sys.unraisablehook, self._unraisable
        return self

    def __exit__(self, exc_type: object, *exc: object) -> None:
        if self._previous is None:
            return
        with self._lock:
            signal.signal(signal.SIGINT, self._previous)
            sys.unraisablehook = self._previous_hook
            self._previous, pending, self._pending = None, self._pending, False
        if pending and exc_type is None:
            raise KeyboardInterrupt


def _main(argv: list[str] | None) -> int:
    load_plugins()
    parser = build_parser()
    try:
        args, extras = parser.parse_known_args(argv)
    except StreamkError as exc:  # a setting the chosen verb needs (streamk.env)
        parser.error(" ".join(str(exc).split()))
    if extras:  # named by the subcommand that was given them, not by the top level
        args._parser.error(f"unrecognized arguments: {' '.join(extras)}")
    try:
        for check in GPU_SETTINGS.get(args.verb, ()):
            check()
        return int(args._run(args) or 0)
    except StreamkError as exc:
        args._parser.error(" ".join(str(exc).split()) or type(exc).__name__)  # one line, exit 2
    except MemoryError:  # a limit in streamk.limits should have said so first; never a traceback
        args._parser.error("out of memory; try a smaller shape, tile count or --count")
    except BrokenPipeError:
        return 0
    return 0


if __name__ == "__main__":
    sys.exit(main())
