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


DECODE_SMALL = 64      # decode-like shapes: m or n at most this (a few tokens of a batch)
DECODE_HIGH = 16_384   # their other side and k: up to a large model's hidden size


def decode_corpus(count: int, seed: int = 0) -> np.ndarray:
    """``count`` decode-like shapes (m, n, k): one of m and n (each with probability 1/2)
    log-uniform in [1, DECODE_SMALL], the other and k log-uniform in [CORPUS_LOW, DECODE_HIGH],
    rounded to the nearest int; seeded like ``corpus``."""
    if count < 1:
        raise ScheduleError(f"corpus size must be >= 1 (got {count})")
    rng = np.random.default_rng(seed)
    small = np.exp(rng.uniform(0.0, np.log(DECODE_SMALL), size=count))
    large = np.exp(rng.uniform(np.log(CORPUS_LOW), np.log(DECODE_HIGH), size=(count, 2)))
    shapes = np.rint(np.column_stack([small, large])).astype(np.int64)
    shapes[:, 0] = np.clip(shapes[:, 0], 1, DECODE_SMALL)
    shapes[:, 1:] = np.clip(shapes[:, 1:], CORPUS_LOW, DECODE_HIGH)
    m_small = rng.random(count) < 0.5
    m = np.where(m_small, shapes[:, 0], shapes[:, 1])
    n = np.where(m_small, shapes[:, 1], shapes[:, 0])
    return np.column_stack([m, n, shapes[:, 2]])
