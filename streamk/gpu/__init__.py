"""GPU backend: NVRTC-compiled tensor-core kernels that execute any Schedule as a table.

``available()`` says whether a usable CUDA device is present (and why not); ``gemm()`` runs one
GEMM through a schedule, eagerly, on any stream, inside CUDA graphs and under torch.compile
(``torch.ops.streamk.gemm``); ``prepare()`` checks and plans without running (for timing and
CUDA graphs); ``cache_info()`` / ``clear_cache()`` show and free what repeated calls reuse.
Importing this package needs neither a GPU, cuda-bindings nor torch, and imports none of its
modules: each name below loads its module on first use (the CLI's --help reads
``bench_args`` without paying for the backend).
"""

from __future__ import annotations

import importlib
from typing import Any

_HOME = {"gemm": "api", "prepare": "prepared", "cache_info": "runtime", "clear_cache": "runtime",
         "available": "device"}

__all__ = ["available", "cache_info", "clear_cache", "gemm", "prepare"]


def __getattr__(name: str) -> Any:
    if name not in _HOME:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(f".{_HOME[name]}", __name__), name)
