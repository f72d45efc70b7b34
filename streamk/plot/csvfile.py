"""Reading the CSVs the plots draw (``streamk sweep --out``, ``streamk bench``): every way a file
can be wrong (empty, header only, another format, a non-numeric cell) is one InputError naming
the file, the line and the column. A name ending in .gz is read through gzip (the measurements
kept in benchmarks/data are stored so)."""

from __future__ import annotations

import csv
import gzip
import math
from pathlib import Path
from typing import IO, Callable, Sequence

import numpy as np

from ..errors import InputError


def open_text(path: str | Path) -> IO[str]:
    """``path`` opened for reading as CSV text, decompressed where its name ends in .gz."""
    if str(path).endswith(".gz"):
        return gzip.open(path, "rt", newline="")
    return open(path, newline="")


def read_rows(path: str | Path, need: Sequence[str], made_by: str) -> tuple[list[str], list[dict[str, str]]]:
    """The header and rows of CSV ``path`` (or ``path``.gz), which must have columns ``need`` and
    at least one row; ``made_by`` is the command that writes such a file (for the message)."""
    try:
        with open_text(path) as fh:
            reader = csv.DictReader(fh)
            records = list(reader)
            fields = list(reader.fieldnames or [])
    except (UnicodeDecodeError, gzip.BadGzipFile, EOFError):
        raise InputError(f"{path} is not a text CSV file; write one with: {made_by}") from None
    except csv.Error as exc:
        raise InputError(f"{path} is not a readable CSV ({exc}); write one with: {made_by}") from None
    except OSError as exc:
        raise InputError(f"cannot read {path}: {exc.strerror or exc}") from None
    if not fields:
        raise InputError(f"{path} is empty; write it with: {made_by}")
    missing = [c for c in need if c not in fields]
    if missing:
        raise InputError(f"{path} lacks column(s) {', '.join(missing)} (has {', '.join(fields)}); "
                         f"write it with: {made_by}")
    if not records:
        raise InputError(f"{path} has a header but no rows; write it with: {made_by}")
    return fields, records


def column(path: str | Path, records: list[dict[str, str]], name: str, parse: Callable[[str], float],
           dtype: type) -> np.ndarray:
    """One column parsed cell by cell; a bad cell is an InputError naming its line."""
    values = []
    for line, record in enumerate(records, start=2):  # line 1 is the header
        text = record.get(name)
        try:
            values.append(parse(text if text is not None else ""))
        except (TypeError, ValueError):
            raise InputError(f"{path} line {line}: column {name} must be a number (got {text!r})") from None
    return np.array(values, dtype=dtype)


def number(text: str) -> float:
    """A float cell; an empty or None cell is +inf (a makespan that never ended)."""
    value = float(text) if text not in ("", "None", "null") else math.inf
    if math.isnan(value):
        raise ValueError(text)
    return value
