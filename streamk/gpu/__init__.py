"""GPU backend: NVRTC-compiled tensor-core kernels that execute any Schedule as a table.

``available()`` says whether a usable CUDA device is present (and why not); ``gemm()`` runs one
GEMM through a schedule; ``prepare()`` checks and uploads without running (for timing and CUDA
graphs). Importing this package needs neither a GPU nor cuda-bindings.
"""

from __future__ import annotations

from .api import check_residency, gemm, prepare
from .device import available

__all__ = ["available", "check_residency", "gemm", "prepare"]
