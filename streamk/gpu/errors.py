"""One ``check()`` for every cuda.bindings result: the value, or a CudaError with the error's name."""

from __future__ import annotations

from typing import Any

from ..errors import CudaError


def _name(err: Any) -> str:
    return getattr(err, "name", str(err))


def _is_success(err: Any) -> bool:
    return int(err) == 0


def check(result: Any, what: str, *, log: str = "") -> Any:
    """Unpack a cuda.bindings ``(err, *values)`` tuple; raise CudaError unless err is success.

    Returns None, the single value, or a tuple of values. NVRTC's log is appended when given.
    """
    err, *values = result if isinstance(result, tuple) else (result,)
    if not _is_success(err):
        detail = ""
        try:
            from cuda.bindings import driver

            if isinstance(err, driver.CUresult):
                _, text = driver.cuGetErrorString(err)
                detail = f": {text.decode() if isinstance(text, bytes) else text}"
        except Exception:  # noqa: BLE001 - the name alone still says what failed
            pass
        message = f"{what} failed with {_name(err)}{detail}"
        if log.strip():
            message += f"\n{log.strip()}"
        raise CudaError(message)
    if not values:
        return None
    return values[0] if len(values) == 1 else tuple(values)
