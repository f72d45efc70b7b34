"""GPU backend: NVRTC-compiled tensor-core kernels that execute any Schedule as a table.

``available()`` says whether a usable CUDA device is present (and why not); ``gemm()`` runs one
GEMM through a schedule, eagerly, on any stream, inside CUDA graphs and under torch.compile
(``torch.ops.streamk.gemm``); ``prepare()`` checks and plans without running (for timing and
CUDA graphs); ``cache_info()`` / ``clear_cache()`` show and free what repeated calls reuse.
Importing this package needs neither a GPU, cuda-bindings nor torch.
"""

from __future__ import annotations

from .api import gemm
from .prepared import prepare
from .runtime import cache_info, clear_cache
from .device import available

__all__ = ["available", "cache_info", "clear_cache", "gemm", "prepare"]
