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


def _bad(message: str) -> argparse.ArgumentTypeError:
    return argparse.ArgumentTypeError(message)


def _probe_write(path: Path) -> None:
    """Open ``path`` for appending (never truncating) and remove it again if it did not exist."""
    existed = path.exists()
    try:
        with open(path, "ab"):
            pass
    except OSError as exc:
        raise _bad(f"cannot write {str(path)!r}: {exc.strerror}") from None
    if not existed:
        path.unlink()


def output_file(*suffixes: str) -> Callable[[str], Path]:
    """An argparse type: a regular file that can be written, in a folder that exists, named with
    one of ``suffixes`` (any if none)."""

    def output(text: str) -> Path:
        path = Path(text)
        example = f"out{suffixes[0] if suffixes else '.csv'}"
        if not text.strip():
            raise _bad(f"must name a file such as {example} (got an empty name)")
        if path.is_dir():
            raise _bad(f"must name a file, not the folder {text!r} (e.g. {os.path.join(text, example)})")
        if path.exists() and not path.is_file():
            raise _bad(f"must be a regular file ({text!r} is a device or other special file)")
        if suffixes and path.suffix.lower() not in suffixes:
            raise _bad(f"must end in {' or '.join(suffixes)} (got {text!r})")
        parent = path.parent
        if not parent.is_dir():
            raise _bad(f"folder {str(parent)!r} does not exist (got {text!r}); create it first")
        _probe_write(path)
        return path

    return output


def output_folder(text: str) -> Path:
    """An argparse type: a folder to write into; created later, so it need not exist yet."""
    path = Path(text)
    if not text.strip():
        raise _bad("must name a folder such as out/demo (got an empty name)")
    if path.exists() and not path.is_dir():
        raise _bad(f"must be a folder ({text!r} is a file)")
    existing = next(p for p in (path, *path.parents) if p.exists())  # "." or "/" at the latest
    if not existing.is_dir():
        raise _bad(f"cannot create folder {text!r}: {str(existing)!r} is not a folder")
    if not os.access(existing, os.W_OK):
        raise _bad(f"cannot write in {str(existing)!r} (permission denied)")
    return path


def input_file(text: str) -> Path:
    """An argparse type: an existing, readable regular file."""
    path = Path(text)
    if not text.strip():
        raise _bad("must name a file (got an empty name)")
    if not path.exists():
        raise _bad(f"file {text!r} does not exist")
    if path.is_dir():
        raise _bad(f"must be a file, not the folder {text!r}")
    if not path.is_file():
        raise _bad(f"must be a regular file ({text!r} is a device or other special file)")
    if not os.access(path, os.R_OK):
        raise _bad(f"cannot read {text!r} (permission denied)")
    return path


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
