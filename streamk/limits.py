"""How much work streamk takes on before refusing it: checked up front, so a request too large
for memory or patience ends in one clear error instead of a MemoryError or an hour's wait.

Both limits are environment variables a user can raise: ``STREAMK_MAX_UNITS`` (work units of
one Schedule) and ``STREAMK_MAX_SECONDS`` (estimated seconds of one CPU execute or sweep).
"""

from __future__ import annotations

import math
import os

from .errors import LimitError

MAX_UNITS = 1 << 24  # work units of one Schedule: 24 bytes each plus the derived fixup arrays, ~1 GB
MAX_SECONDS = 600.0  # estimated seconds of one CPU execute or sweep before it is refused
PROGRESS_AFTER_S = 1.0  # a progress bar appears once work has run this long (tqdm's delay)
UNITS_ENV, SECONDS_ENV = "STREAMK_MAX_UNITS", "STREAMK_MAX_SECONDS"


def _env_number(name: str, default: float) -> float:
    text = os.environ.get(name)
    if text is None:
        return default
    try:
        value = float(text)
    except ValueError:
        value = -1.0
    if not (value > 0 and math.isfinite(value)):  # inf is no limit, and int(inf) would raise
        raise LimitError(f"{name} must be a finite number > 0 (got {text!r})")
    return value


def max_units() -> int:
    return int(_env_number(UNITS_ENV, MAX_UNITS))


def max_seconds() -> float:
    return _env_number(SECONDS_ENV, MAX_SECONDS)


def check_units(units: int, what: str) -> None:
    """Refuse a Schedule of more than ``max_units()`` work units (``what`` says whose)."""
    limit = max_units()
    if units > limit:
        raise LimitError(f"{what} needs at least {units:,} work units (~{units * 24 / 2**30:.1f} GiB), over the "
                         f"limit of {limit:,} ({UNITS_ENV}); use a larger tile, a smaller shape or grid, "
                         f"or raise {UNITS_ENV}")


def check_seconds(seconds: float, what: str, advice: str) -> None:
    """Refuse work estimated at more than ``max_seconds()``; ``advice`` says how to shrink it."""
    limit = max_seconds()
    if seconds > limit:
        raise LimitError(f"{what} would take about {seconds:,.0f} s, over the limit of {limit:g} s "
                         f"({SECONDS_ENV}); {advice}, or raise {SECONDS_ENV}")


def check_memory(nbytes: float, what: str) -> None:
    """Refuse work whose arrays would not fit in this machine's physical memory."""
    try:
        physical = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (AttributeError, ValueError, OSError):
        return  # no way to tell on this platform: let NumPy try
    if nbytes > physical:
        raise LimitError(f"{what} needs about {nbytes / 2**30:,.1f} GiB of memory, more than this machine's "
                         f"{physical / 2**30:,.1f} GiB; use a smaller shape")
