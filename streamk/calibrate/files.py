"""Calibration files: one JSON per device family (a Target preset's name), one entry per kernel.

``streamk/calibrate/data/<family>.json`` ships in the package; a folder named by
``STREAMK_CALIBRATION`` is read first (a fresh calibration tried before it is committed). Writes
are atomic (a temp file, then ``os.replace``) and keep the file's other kernels.
"""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path
from typing import Any

from ..env import CALIBRATION, calibration_folder
from ..errors import InputError
from .model import Calibration

FORMAT = 1
DATA = Path(__file__).parent / "data"
ENV = CALIBRATION  # a folder of <family>.json read before the shipped ones


def folders() -> tuple[Path, ...]:
    """Where calibration files are looked for, first match wins: $STREAMK_CALIBRATION (checked:
    SettingError naming it where it is not a folder of calibration files), the package."""
    extra = calibration_folder()
    return (extra, DATA) if extra else (DATA,)


def read(path: Path) -> dict[str, Any]:
    try:
        obj = json.loads(path.read_text())
    except (OSError, ValueError) as exc:
        raise InputError(f"cannot read calibration file {str(path)!r}: {exc}") from None
    if not isinstance(obj, dict) or obj.get("format") != FORMAT or not isinstance(obj.get("kernels"), list):
        raise InputError(f"calibration file {str(path)!r} must be an object with format {FORMAT} and a kernels list")
    return obj


def load(family: str) -> tuple[Calibration, ...]:
    """Every kernel's calibration of ``family`` (a preset's name), from the first folder with its file."""
    for folder in folders():
        path = folder / f"{family}.json"
        if path.is_file():
            return tuple(Calibration.from_json_dict(k) for k in read(path)["kernels"])
    return ()


def write(calibration: Calibration, family: str, arch: str, folder: Path = DATA) -> Path:
    """Put ``calibration`` into ``folder/<family>.json``, replacing the same dtype and tile's entry."""
    path = Path(folder) / f"{family}.json"
    obj = read(path) if path.is_file() else {"format": FORMAT, "family": family, "arch": arch, "kernels": []}
    key = (calibration.dtype, [calibration.tile.bm, calibration.tile.bn, calibration.tile.bk])
    entry = calibration.to_json_dict()
    obj["kernels"] = [k for k in obj["kernels"] if (k.get("dtype"), k.get("tile")) != key]
    obj["kernels"].append(entry)
    obj["kernels"].sort(key=lambda k: (k["dtype"], k["tile"]))
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{family}.", suffix=".json")
    with os.fdopen(fd, "w") as f:
        json.dump(obj, f, indent=1)
        f.write("\n")
    os.replace(tmp, path)
    return path
