"""Exceptions a user of streamk can meet; every message says what, the value, and what to do."""


class StreamkError(Exception):
    """Base class of every error streamk raises on purpose."""


class ScheduleError(StreamkError, ValueError):
    """A shape, tile, machine or Schedule is invalid (bad sizes, coverage holes or overlaps)."""


class InputError(StreamkError, ValueError):
    """A file, folder or operand a user gave cannot be used (missing, unreadable, wrong format)."""


class LimitError(StreamkError):
    """The work asked for would not fit in memory or time; the message says how large, the limit,
    and which ``STREAMK_MAX_*`` variable raises it."""


class DeadlockError(StreamkError):
    """Executing a Schedule would wait forever (a wait on a CTA that can never run)."""


class CudaError(StreamkError, RuntimeError):
    """A CUDA driver or NVRTC call failed; the message carries the error name and any log."""


def check_type(what: str, value: object, kind: type) -> None:
    """Refuse ``value`` unless it is a ``kind`` (a ScheduleError naming the class to pass)."""
    if not isinstance(value, kind):
        raise ScheduleError(f"{what} must be a streamk.{kind.__name__} (got {type(value).__name__} {value!r})")


class SettingError(StreamkError, ValueError):
    """An environment variable (``STREAMK_*``) holds a value streamk cannot use; the message names
    the variable, its value and what it accepts."""
