"""The problem, tile and machine values every scheduler, executor and simulator takes.

They are frozen and check themselves, so a bad size fails where it is written rather than
deep inside a scheduler.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from .errors import ScheduleError

ITEMSIZE = {"float16": 2, "bfloat16": 2, "float32": 4, "float64": 8}  # bytes per element of each dtype

MAX_SIDE = 2**31 - 1  # sizes are 32-bit in the GPU table and in BLAS; larger ones overflow int64 counts
_TRIPLE = re.compile(r"^\s*(\d+)\s*[xX,]\s*(\d+)\s*[xX,]\s*(\d+)\s*$")


def parse_triple(text: str, what: str) -> tuple[int, int, int]:
    """Parse ``"MxNxK"`` (or ``"M,N,K"``) into three positive ints."""
    match = _TRIPLE.match(text)
    if not match:
        raise ScheduleError(f"{what} must look like 384x384x128 (got {text!r})")
    values = tuple(int(v) for v in match.groups())
    if min(values) < 1:
        raise ScheduleError(f"{what} sides must be >= 1 (got {text!r})")
    if max(values) > MAX_SIDE:
        raise ScheduleError(f"{what} sides must be <= {MAX_SIDE} (got {text!r})")
    return values  # type: ignore[return-value]


def _check_positive(what: str, **sides: int) -> None:
    for name, value in sides.items():
        if not isinstance(value, int) or isinstance(value, bool):
            raise ScheduleError(f"{what}.{name} must be an int (got {value!r})")
        if value < 1:
            raise ScheduleError(f"{what}.{name} must be >= 1 (got {value})")
        if value > MAX_SIDE:
            raise ScheduleError(f"{what}.{name} must be <= {MAX_SIDE} (got {value})")


@dataclass(frozen=True, slots=True)
class GemmShape:
    """An m x n x k GEMM: C[m, n] = A[m, k] @ B[k, n]."""

    m: int
    n: int
    k: int

    def __post_init__(self) -> None:
        _check_positive("GemmShape", m=self.m, n=self.n, k=self.k)

    @classmethod
    def parse(cls, text: str) -> GemmShape:
        return cls(*parse_triple(text, "shape"))

    def __str__(self) -> str:
        return f"{self.m}x{self.n}x{self.k}"


@dataclass(frozen=True, slots=True)
class TileShape:
    """The CTA blocking factor BLK_M x BLK_N x BLK_K; one MAC iteration is one such block."""

    bm: int
    bn: int
    bk: int

    def __post_init__(self) -> None:
        _check_positive("TileShape", bm=self.bm, bn=self.bn, bk=self.bk)

    @classmethod
    def parse(cls, text: str) -> TileShape:
        return cls(*parse_triple(text, "tile"))

    def __str__(self) -> str:
        return f"{self.bm}x{self.bn}x{self.bk}"


@dataclass(frozen=True, slots=True)
class Machine:
    """A GPU as the schedulers see it: ``sms`` cores with ``ctas_per_sm`` resident CTA slots each."""

    sms: int
    ctas_per_sm: int = 1

    def __post_init__(self) -> None:
        _check_positive("Machine", sms=self.sms, ctas_per_sm=self.ctas_per_sm)

    @property
    def slots(self) -> int:
        """How many CTAs can be resident at once (the paper's p when ctas_per_sm = 1)."""
        return self.sms * self.ctas_per_sm


@dataclass(frozen=True, slots=True)
class Problem:
    """Shape and tile together, with the counts every decomposition is written in."""

    shape: GemmShape
    tile: TileShape

    @property
    def tiles_m(self) -> int:
        return -(-self.shape.m // self.tile.bm)

    @property
    def tiles_n(self) -> int:
        return -(-self.shape.n // self.tile.bn)

    @property
    def tiles(self) -> int:
        return self.tiles_m * self.tiles_n

    @property
    def iters_per_tile(self) -> int:
        return -(-self.shape.k // self.tile.bk)

    @property
    def total_iters(self) -> int:
        return self.tiles * self.iters_per_tile
