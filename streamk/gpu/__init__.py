"""GPU backend: NVRTC-compiled tensor-core kernels that execute any Schedule as a table.

``available()`` says whether a usable CUDA device is present (and why not); ``gemm()`` runs one
GEMM through a schedule, eagerly, on any stream, inside CUDA graphs and under torch.compile
(``torch.ops.streamk.gemm``); ``prepare()`` checks and plans without running (for timing and
CUDA graphs); ``cache_info()`` / ``clear_cache()`` show and free what repeated calls reuse.
Importing this package needs neither a GPU, cuda-bindings nor torch, and imports none of its
modules until one of these names is used: ``streamk.target`` imports the kernel catalogue
(``streamk.gpu.catalogue``) below everything else here.
"""

from __future__ import annotations

import importlib
from typing import Any

_PUBLIC = {"gemm": ".runtime.api", "prepare": ".runtime.prepared", "cache_info": ".runtime.device_runtime",
           "clear_cache": ".runtime.device_runtime", "available": ".runtime.device"}
__all__ = sorted(_PUBLIC)


def __getattr__(name: str) -> Any:
    if name not in _PUBLIC:
        raise AttributeError(f"module 'streamk.gpu' has no attribute {name!r}")
    return getattr(importlib.import_module(_PUBLIC[name], __name__), name)
