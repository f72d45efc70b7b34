"""Files and folders named on the command line, checked when the arguments are parsed, so a
missing folder, a device or an unwritable path is one line before any work starts."""

from __future__ import annotations

import argparse
import contextlib
import os
from pathlib import Path
from typing import Callable, Iterator

from ..errors import InputError

PLOT_SUFFIXES = (".png", ".pdf", ".svg")  # what matplotlib's Agg backend writes
MEASUREMENT_COLUMNS = ("measured_us", "cublas_raw")  # GPU times: of `streamk fidelity`, of `streamk bench`


def _argument(check: Callable[[str], Path]) -> Callable[[str], Path]:
    """``check`` as an argparse type: its InputError becomes argparse's one-line message."""

    def convert(text: str) -> Path:
        try:
            return check(text)
        except InputError as exc:
            raise argparse.ArgumentTypeError(str(exc)) from None

    convert.__name__ = check.__name__.lstrip("_")
    return convert


def _probe_write(path: Path) -> None:
    """Open ``path`` for appending (never truncating) and remove it again if it did not exist."""
    existed = path.exists()
    try:
        with open(path, "ab"):
            pass
    except OSError as exc:
        raise InputError(f"cannot write {str(path)!r}: {exc.strerror}") from None
    if not existed:
        path.unlink()


def check_output_file(text: str, suffixes: tuple[str, ...] = ()) -> Path:
    """``text`` as a regular file that can be written, in a folder that exists, named with one of
    ``suffixes`` (any if none); else an InputError saying why not."""
    path = Path(text)
    example = f"out{suffixes[0] if suffixes else '.csv'}"
    if not text.strip():
        raise InputError(f"must name a file such as {example} (got an empty name)")
    if path.is_dir():
        raise InputError(f"must name a file, not the folder {text!r} (e.g. {os.path.join(text, example)})")
    if path.exists() and not path.is_file():
        raise InputError(f"must be a regular file ({text!r} is a device or other special file)")
    if suffixes and path.suffix.lower() not in suffixes:
        raise InputError(f"must end in {' or '.join(suffixes)} (got {text!r})")
    if not path.parent.is_dir():
        raise InputError(f"folder {str(path.parent)!r} does not exist (got {text!r}); create it first")
    _probe_write(path)
    return path


def measured_column(path: Path) -> str | None:
    """The GPU-time column of ``path``'s CSV header (None where ``path`` holds no measurements)."""
    try:
        with open(path, newline="", errors="replace") as fh:
            header = fh.readline().rstrip("\r\n").split(",")
    except OSError:
        return None
    return next((c for c in MEASUREMENT_COLUMNS if c in header), None)


def refuse_overwriting_measurements(path: Path, force: bool) -> None:
    """Measurements took a GPU to make: an existing file holding them is overwritten only under
    ``--force``; else an InputError naming it and the way out."""
    column = measured_column(path) if path.is_file() and not force else None
    if column:
        raise InputError(f"{str(path)!r} holds GPU measurements (its {column} column) and would be overwritten; "
                         f"choose another --out, or pass --force to overwrite it")


def add_force_arg(p: argparse.ArgumentParser) -> None:
    p.add_argument("--force", action="store_true",
                   help="overwrite --out even where it holds GPU measurements (refused otherwise)")


def output_file(*suffixes: str) -> Callable[[str], Path]:
    """An argparse type: ``check_output_file`` with these suffixes."""
    return _argument(lambda text: check_output_file(text, suffixes))


def _output_folder(text: str) -> Path:
    """A folder to write into; created later (``make_folder``), so it need not exist yet."""
    path = Path(text)
    if not text.strip():
        raise InputError("must name a folder such as out/demo (got an empty name)")
    if path.exists() and not path.is_dir():
        raise InputError(f"must be a folder ({text!r} is a file)")
    existing = next(p for p in (path, *path.parents) if p.exists())  # "." or "/" at the latest
    if not existing.is_dir():
        raise InputError(f"cannot create folder {text!r}: {str(existing)!r} is not a folder")
    if not os.access(existing, os.W_OK):
        raise InputError(f"cannot write in {str(existing)!r} (permission denied)")
    return path


def _input_file(text: str) -> Path:
    """An existing, readable regular file."""
    path = Path(text)
    if not text.strip():
        raise InputError("must name a file (got an empty name)")
    if not path.exists():
        raise InputError(f"file {text!r} does not exist")
    if path.is_dir():
        raise InputError(f"must be a file, not the folder {text!r}")
    if not path.is_file():
        raise InputError(f"must be a regular file ({text!r} is a device or other special file)")
    if not os.access(path, os.R_OK):
        raise InputError(f"cannot read {text!r} (permission denied)")
    return path


output_folder = _argument(_output_folder)
input_file = _argument(_input_file)


def make_folder(path: Path) -> Path:
    """Create ``path`` (and its parents) or say why not in one line."""
    try:
        path.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise InputError(f"cannot create folder {str(path)!r}: {exc.strerror}") from None
    return path


@contextlib.contextmanager
def writing(path: Path) -> Iterator[None]:
    """Turn a failure to write ``path`` (a full disk, a folder removed meanwhile) into one line."""
    try:
        yield
    except OSError as exc:
        raise InputError(f"cannot write {str(path)!r}: {exc.strerror or exc}") from None
