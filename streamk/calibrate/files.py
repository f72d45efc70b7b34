"""Calibration files: one JSON per device family (a Target's name), one entry per kernel.

``streamk/calibrate/data/<family>.json`` ships in the package. ``STREAMK_CALIBRATION`` names a
folder of such files, or one file, read before the shipped ones (the first source with a family's
file gives that family's whole calibration); ``--calibration FILE`` on the CLI loads one file for
one command. A file whose family is no preset defines a Target of its own from the machine facts it
carries (``streamk.target.target_from_file``). Every read is checked (``check``): an error is one line naming the file,
the field and what it accepts. Writes are atomic (a temp file, then ``os.replace``) and keep the
file's other kernels. The format is documented, key by key, in docs/calibration.md.
"""

from __future__ import annotations

import json
import math
import os
import re
import tempfile
from pathlib import Path
from typing import Any, Sequence

from ..env import CALIBRATION, CALIBRATION_ACCEPTS, calibration_path, refuse
from ..errors import InputError
from .model import TERM_DOC, Calibration


# The format version written, and those read. Version history (docs/calibration.md):
# 1: family, arch, kernels [{dtype, tile, ctas_per_sm, device, sms, probes, rms_rel_residual,
#    l2_bytes, terms_us {term: {us, se}}}] (every file since the first calibration, v19).
FORMAT = 1
FORMATS = (1,)
DATA = Path(__file__).parent / "data"
ENV = CALIBRATION  # a folder of <family>.json, or one calibration file, read before the shipped ones
DTYPES = ("float16", "bfloat16", "float64")
FAMILY = re.compile(r"^[a-z0-9][a-z0-9_-]*$")  # a Target's name: what --target takes
ARCH = re.compile(r"^sm_(\d+)a?$")
MIN_ARCH = 80  # the GPU backend's kernels need sm_80 or later


def env_source() -> Path | None:
    """$STREAMK_CALIBRATION, checked: a folder whose every ``.json`` is a calibration file, or one
    calibration file (SettingError in one line naming the variable otherwise); None where unset."""
    path = calibration_path()
    if path is None:
        return None
    for item in sorted(path.glob("*.json")) if path.is_dir() else [path]:
        try:
            read(item)
        except InputError as exc:
            why = " ".join(str(exc).split()) or type(exc).__name__
            raise refuse(CALIBRATION, str(path), f"{CALIBRATION_ACCEPTS}; {item.name} is not one ({why})") from None
    return path


def sources() -> tuple[Path, ...]:
    """Where calibration files are looked for, first match wins: $STREAMK_CALIBRATION (a folder or
    one file, checked), the package's folder."""
    extra = env_source()
    return (extra, DATA) if extra else (DATA,)


def refusal(path: Path, field: str, accepts: str, got: Any) -> InputError:
    shown = repr(got) if not isinstance(got, (dict, list)) else type(got).__name__
    return InputError(f"calibration file {str(path)!r}: {field} must be {accepts} (got {shown})")


def _int(obj: dict, key: str, path: Path, field: str, low: int, accepts: str, default: Any = None) -> int:
    if key not in obj and default is not None:
        return default
    value = obj.get(key)
    if isinstance(value, bool) or not isinstance(value, int) or value < low:
        raise refusal(path, field, accepts, value)
    return value


def _number(value: Any, path: Path, field: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) or value < 0:
        raise refusal(path, field, "a finite number >= 0 (microseconds)", value)
    return float(value)


def check_kernel(entry: Any, path: Path, where: str) -> Calibration:
    """One kernel entry, checked field by field; the Calibration it holds."""
    if not isinstance(entry, dict):
        raise refusal(path, where, "an object (one kernel: dtype, tile, ctas_per_sm, terms_us)", entry)
    if entry.get("dtype") not in DTYPES:
        raise refusal(path, f"{where}.dtype", f"one of {', '.join(DTYPES)}", entry.get("dtype"))
    tile = entry.get("tile")
    if not (isinstance(tile, list) and len(tile) == 3
            and all(isinstance(x, int) and not isinstance(x, bool) and x >= 1 for x in tile)):
        raise refusal(path, f"{where}.tile", "[BM, BN, BK], three integers >= 1", tile)
    _int(entry, "ctas_per_sm", path, f"{where}.ctas_per_sm", 1, "an integer >= 1 (resident CTAs per SM)")
    _int(entry, "sms", path, f"{where}.sms", 0, "an integer >= 0 (the SMs it was measured on)", 0)
    _int(entry, "probes", path, f"{where}.probes", 0, "an integer >= 0", 0)
    _int(entry, "l2_bytes", path, f"{where}.l2_bytes", 0, "an integer >= 0 (the L2 it was measured on)", 0)
    if not isinstance(entry.get("device", ""), str):
        raise refusal(path, f"{where}.device", "a string (the GPU's name)", entry.get("device"))
    rms = entry.get("rms_rel_residual")
    if rms is not None:
        _number(rms, path, f"{where}.rms_rel_residual")
    terms = entry.get("terms_us")
    if not isinstance(terms, dict) or not terms:
        raise refusal(path, f"{where}.terms_us", "an object {term: {us, se}}", terms)
    for name, value in terms.items():
        if name not in TERM_DOC:
            raise refusal(path, f"{where}.terms_us", f"keyed by the terms {', '.join(TERM_DOC)}", name)
        if not isinstance(value, dict):
            raise refusal(path, f"{where}.terms_us.{name}", "an object {us, se}", value)
        for key in ("us", "se"):
            _number(value.get(key), path, f"{where}.terms_us.{name}.{key}")
    try:
        return Calibration.from_json_dict(entry)
    except InputError as exc:  # the terms' order and presence (model.Calibration)
        raise InputError(f"calibration file {str(path)!r}: {where}: {' '.join(str(exc).split())}") from None


def check(obj: Any, path: Path) -> tuple[Calibration, ...]:
    """A calibration file's object, checked (InputError in one line naming the file, the field and
    what it accepts); its kernels' Calibrations."""
    if not isinstance(obj, dict):
        raise refusal(path, "the file", "a JSON object with format, family, arch and kernels", obj)
    if "format" not in obj:
        raise refusal(path, "format", f"the format version, one of {', '.join(map(str, FORMATS))}", None)
    if obj["format"] not in FORMATS or isinstance(obj["format"], bool):
        raise refusal(path, "format", f"a version this streamk reads: {', '.join(map(str, FORMATS))} "
                                      f"(a newer streamk may read it)", obj["format"])
    family = obj.get("family")
    if not isinstance(family, str) or not FAMILY.match(family):
        raise refusal(path, "family", "the GPU family's name, lower case (h100, h200, l40s): what --target takes",
                      family)
    arch = obj.get("arch")
    found = ARCH.match(arch) if isinstance(arch, str) else None
    if found is None or int(found.group(1)) < MIN_ARCH:
        raise refusal(path, "arch", f"the GPU's architecture, sm_{MIN_ARCH} or later (sm_80, sm_89, sm_90a)", arch)
    kernels = obj.get("kernels")
    if not isinstance(kernels, list):
        raise refusal(path, "kernels", "a list of kernel entries", kernels)
    out = tuple(check_kernel(k, path, f"kernels[{i}]") for i, k in enumerate(kernels))
    seen: set = set()
    for i, c in enumerate(out):
        if (c.dtype, c.tile) in seen:
            raise refusal(path, f"kernels[{i}]", "one entry per dtype and tile", f"{c.dtype} {c.tile} again")
        seen.add((c.dtype, c.tile))
    return out


def read(path: Path) -> dict[str, Any]:
    """A calibration file's JSON object, checked (``check``)."""
    try:
        obj = json.loads(Path(path).read_text())
    except (OSError, ValueError) as exc:
        raise InputError(f"cannot read calibration file {str(path)!r}: {exc}") from None
    check(obj, Path(path))
    return obj


def read_kernels(path: Path) -> tuple[Calibration, ...]:
    return tuple(Calibration.from_json_dict(k) for k in read(path)["kernels"])


def file_of(source: Path, family: str) -> Path | None:
    """``source``'s file of ``family``: the file itself where it is one and names that family."""
    if source.is_dir():
        path = source / f"{family}.json"
        return path if path.is_file() else None
    return source if source.is_file() and read(source)["family"] == family else None


def load(family: str) -> tuple[Calibration, ...]:
    """Every kernel's calibration of ``family`` (a Target's name), from the first source with its file."""
    for source in sources():
        path = file_of(source, family)
        if path is not None:
            return read_kernels(path)
    return ()


def document(calibrations: Sequence[Calibration], family: str, arch: str) -> dict[str, Any]:
    """A calibration file's object for these kernels, sorted by dtype and tile."""
    kernels = sorted((c.to_json_dict() for c in calibrations), key=lambda k: (k["dtype"], k["tile"]))
    return {"format": FORMAT, "family": family, "arch": arch, "kernels": kernels}


def write_file(path: Path, calibrations: Sequence[Calibration], family: str, arch: str) -> Path:
    """Put ``calibrations`` into the calibration file ``path``, each replacing the entry of its dtype
    and tile, the file's other kernels kept (its family and arch must be these)."""
    path = Path(path)
    kept: tuple[Calibration, ...] = ()
    if path.is_file():
        obj = read(path)
        if (obj["family"], obj["arch"]) != (family, arch):
            raise InputError(f"calibration file {str(path)!r} is of {obj['family']} ({obj['arch']}), not {family} "
                             f"({arch}); write to another file")
        kept = read_kernels(path)
    new = {(c.dtype, c.tile) for c in calibrations}
    obj = document([c for c in kept if (c.dtype, c.tile) not in new] + list(calibrations), family, arch)
    check(obj, path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.stem}.", suffix=".json")
    with os.fdopen(fd, "w") as f:
        json.dump(obj, f, indent=1)
        f.write("\n")
    os.replace(tmp, path)
    return path


def write(calibration: Calibration, family: str, arch: str, folder: Path = DATA) -> Path:
    """Put ``calibration`` into ``folder/<family>.json``, replacing the same dtype and tile's entry."""
    return write_file(Path(folder) / f"{family}.json", (calibration,), family, arch)
