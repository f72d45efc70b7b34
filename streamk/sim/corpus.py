"""The paper's GEMM shape corpus: m, n and k each log-uniform in [128, 8192], seeded.

Section 6 of the paper evaluates 32,824 such shapes; ``corpus()`` draws them with NumPy's
PCG64 generator, so a seed names the same shapes on every machine.
"""

from __future__ import annotations

import numpy as np

from ..errors import ScheduleError

CORPUS_SIZE = 32_824  # shapes in the paper's evaluation corpus (section 6)
CORPUS_LOW = 128      # smallest m, n, k (elements)
CORPUS_HIGH = 8_192   # largest m, n, k (elements)


def corpus(count: int = CORPUS_SIZE, seed: int = 0, low: int = CORPUS_LOW, high: int = CORPUS_HIGH) -> np.ndarray:
    """``count`` shapes as an int64 array of rows (m, n, k), each log-uniform in [low, high]
    and rounded to the nearest int."""
    if count < 1:
        raise ScheduleError(f"corpus size must be >= 1 (got {count})")
    if not 1 <= low <= high:
        raise ScheduleError(f"corpus bounds must satisfy 1 <= low <= high (got {low}, {high})")
    rng = np.random.default_rng(seed)
    x = np.exp(rng.uniform(np.log(low), np.log(high), size=(count, 3)))
    return np.clip(np.rint(x), low, high).astype(np.int64)
