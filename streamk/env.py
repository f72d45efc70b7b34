"""The ``STREAMK_*`` environment variables that pick a device, a folder or a number of processes,
each checked by one function that returns the value to use or raises SettingError in one line
naming the variable, its value and what it accepts. (The limits ``STREAMK_MAX_*`` are checked in
``streamk.limits``; ``STREAMK_PLUGINS`` by the CLI.)

* ``STREAMK_SWEEP_WORKERS``: processes for sweeps and fidelity predictions, an integer >= 1,
  capped at the CPUs this process may run on (more would only queue); default every CPU.
* ``STREAMK_DEVICE``: the CUDA device ordinal the GPU backend uses, an integer >= 0 (default 0).
* ``STREAMK_CACHE_DIR``: the folder of compiled kernels (default ``~/.cache/streamk``); it must
  be a folder streamk can create and write.
* ``STREAMK_CALIBRATION``: a folder of ``<family>.json`` calibration files, or one calibration
  file, read before the shipped ones; it must exist, and each ``.json`` in it (or the file) must
  be a calibration file.
"""

from __future__ import annotations

import os
from pathlib import Path

from .errors import SettingError

CALIBRATION_ACCEPTS = ("a folder of <family>.json calibration files, or one calibration file (written by `streamk "
                       "calibrate --out`)")
WORKERS, DEVICE, CACHE_DIR, CALIBRATION = ("STREAMK_SWEEP_WORKERS", "STREAMK_DEVICE", "STREAMK_CACHE_DIR",
                                           "STREAMK_CALIBRATION")


def refuse(name: str, text: str, accepts: str) -> SettingError:
    return SettingError(f"{name}={text!r} cannot be used: it must be {accepts}; fix it or unset {name}")


def cpus() -> int:
    """CPUs this process may run on (its affinity where the OS says, else every CPU)."""
    try:
        return len(os.sched_getaffinity(0)) or 1
    except (AttributeError, OSError):
        return os.cpu_count() or 1


def sweep_workers() -> int:
    """$STREAMK_SWEEP_WORKERS capped at ``cpus()``, else ``cpus()``: a sweep's processes."""
    text = os.environ.get(WORKERS)
    if text is None:
        return cpus()
    if not text.strip().isdigit() or int(text) < 1:
        raise refuse(WORKERS, text, f"an integer >= 1 (more than this machine's {cpus()} CPUs are not used)")
    return min(int(text), cpus())


def device_ordinal() -> int:
    """$STREAMK_DEVICE as a CUDA device ordinal (default 0)."""
    text = os.environ.get(DEVICE, "0")
    if not text.strip().isdigit():
        raise refuse(DEVICE, text, "a CUDA device ordinal, an integer >= 0 (nvidia-smi lists them)")
    return int(text)


def cache_dir() -> Path:
    """$STREAMK_CACHE_DIR (default ~/.cache/streamk), created if missing; refused where it is not a
    folder streamk can create and write in."""
    text = os.environ.get(CACHE_DIR)
    path = Path(text) if text else Path.home() / ".cache" / "streamk"
    accepts = "a folder streamk can create and write in (compiled kernels are kept there)"
    try:
        path.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise refuse(CACHE_DIR, str(path), f"{accepts}; creating it failed: {exc.strerror or exc}") from None
    if not os.access(path, os.W_OK | os.X_OK):
        raise refuse(CACHE_DIR, str(path), f"{accepts}; it is not writable")
    return path


def calibration_path() -> Path | None:
    """$STREAMK_CALIBRATION where set: an existing folder or file (its contents are checked where
    they are read, ``streamk.calibrate.files.env_source``); None where unset."""
    text = os.environ.get(CALIBRATION, "").strip()
    if not text:
        return None
    path = Path(text)
    if not path.is_dir() and not path.is_file():
        raise refuse(CALIBRATION, text, f"{CALIBRATION_ACCEPTS}; it is neither a folder nor a file")
    return path
