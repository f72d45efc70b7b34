"""The Schedule: for each CTA, in blockIdx order, the MAC-iteration ranges it computes.

One value feeds the CPU executor, the simulator and the GPU table. It is stored as two int
arrays (the same layout the GPU uploads) so that a 4,096-tile schedule costs microseconds to
build; ``ctas`` gives the friendly nested view. A Schedule that does not cover every MAC
iteration exactly once cannot be constructed.
"""

from __future__ import annotations

import json
import operator
from dataclasses import dataclass, field
from typing import Any, Iterable, NamedTuple, Sequence

import numpy as np

from .errors import ScheduleError
from .shapes import GemmShape, Machine, Problem, TileShape

TILE_ORDERS = ("row-major", "column-major", "grouped-G", "quads-G")
"""Rasterizations: tile t -> (tile_m, tile_n). ``grouped-G`` (G >= 1, e.g. grouped-8) walks G
tile rows at a time, column by column within the group (Triton's GROUP_M ordering, from
triton-lang/triton python/tutorials/03-matrix-multiplication.py): CTAs running together then
share A rows and B columns in L2 instead of streaming all of B for every tile row.
``quads-G`` (G even, e.g. quads-8) numbers 2x2 blocks of tiles four at a time, so that whole-tile
CTAs 4q .. 4q + 3 run one block (tiles (2i, 2j), (2i + 1, 2j), (2i, 2j + 1), (2i + 1, 2j + 1)): an
sm90 cluster of four shares A along its rows and B along its columns (gpu/clusters.py). The blocks
lie in grouped-(G/2) order over the grid of blocks; after them the ragged edges, each in pairs: an
odd last tile column's rows 2i, 2i + 1 (one B), then an odd last tile row's columns 2j, 2j + 1
(one A), then the corner tile where both are odd. Every pair starts on an even index."""


def check_fixup(fixup: object) -> None:
    """Raise ScheduleError unless ``fixup`` names a policy."""
    if fixup not in FIXUP_POLICIES:
        raise ScheduleError(f"fixup must be one of {FIXUP_POLICIES} (got {fixup!r})")


def check_tile_order(order: str) -> str:
    if not isinstance(order, str):
        raise ScheduleError(f"tile order must be a string such as row-major (got {order!r})")
    if order in ("row-major", "column-major"):
        return order
    head, _, size = order.partition("-")
    if head == "grouped" and size.isdigit() and int(size) >= 1:
        return order
    if head == "quads" and size.isdigit() and int(size) >= 2 and int(size) % 2 == 0:
        return order
    raise ScheduleError(f"tile order must be row-major, column-major, grouped-G with G >= 1 such as grouped-8 "
                        f"or quads-G with G even such as quads-8 (got {order!r})")


def tile_coordinates(order: str, tiles_m: int, tiles_n: int, tile: np.ndarray | int) -> tuple:
    """(tile_m, tile_n) of tile index(es) ``tile`` under rasterization ``order`` (vectorized)."""
    t = np.asarray(tile, dtype=np.int64)
    if order == "row-major":
        tm, tn = np.divmod(t, tiles_n)
    elif order == "column-major":
        tn, tm = np.divmod(t, tiles_m)
    elif order.startswith("quads"):
        tm, tn = _quad_coordinates(int(order.split("-")[1]), tiles_m, tiles_n, t)
    else:
        tm, tn = _grouped(int(order.split("-")[1]), tiles_m, tiles_n, t)
    return tm, tn


def _grouped(group: int, tiles_m: int, tiles_n: int, t: np.ndarray) -> tuple:
    group_id, within = np.divmod(t, group * tiles_n)
    first_m = group_id * group
    rows = np.minimum(tiles_m - first_m, group)
    return first_m + within % rows, within // rows


def _quad_coordinates(group: int, tiles_m: int, tiles_n: int, t: np.ndarray) -> tuple:
    """quads-G (TILE_ORDERS): the 2x2 blocks, then the odd column's pairs, the odd row's, the corner."""
    blocks_m, blocks_n = tiles_m // 2, tiles_n // 2
    quads = 4 * blocks_m * blocks_n
    column = 2 * blocks_m if tiles_n % 2 else 0  # the odd last column's paired tiles
    row = 2 * blocks_n if tiles_m % 2 else 0  # the odd last row's
    q, rank = np.divmod(np.minimum(t, max(quads - 1, 0)), 4)
    bm, bn = _grouped(group // 2, max(blocks_m, 1), max(blocks_n, 1), q)
    u = t - quads
    v = u - column
    tm = np.where(t < quads, 2 * bm + rank % 2, np.where(u < column, u, tiles_m - 1))
    tn = np.where(t < quads, 2 * bn + rank // 2, np.where(u < column, tiles_n - 1, np.where(v < row, v, tiles_n - 1)))
    return tm, tn
FIXUP_POLICIES = ("owner-waits", "turnstile", "last-arrival", "atomic", "separate-reduce")
DEFAULT_FIXUP = "owner-waits"


class WorkUnit(NamedTuple):
    """A half-open range [k_begin, k_end) of MAC iterations (not elements) of one output tile."""

    tile: int
    k_begin: int
    k_end: int

    @property
    def iters(self) -> int:
        return self.k_end - self.k_begin


def _integers(values: Any, what: str) -> np.ndarray:
    """``values`` as int64, refusing what is not a whole number (2.9 never becomes 2)."""
    try:
        raw = np.asarray(values)
    except ValueError as exc:  # ragged nesting
        raise ScheduleError(f"{what} must be integers in a regular array ({exc})") from None
    if raw.dtype.kind in "iu":
        return raw.astype(np.int64)
    if raw.size == 0:
        return raw.astype(np.int64)
    if raw.dtype.kind == "f":
        whole = np.isfinite(raw) & (raw == np.trunc(raw)) & (np.abs(raw) < 2**62)
        if whole.all():
            return raw.astype(np.int64)
        bad = raw.reshape(-1)[int(np.argmin(whole.reshape(-1)))]
        raise ScheduleError(f"{what} must be integers (got {float(bad)!r})")
    raise ScheduleError(f"{what} must be integers (got an array of {raw.dtype})")


def _unit_row(unit: Any, cta: int, index: int) -> tuple[int, int, int]:
    """One work unit as three ints; 2.9 or "3" is refused, never truncated or parsed."""
    try:
        values = tuple(unit)
    except TypeError:
        values = ()
    if len(values) != 3:
        raise ScheduleError(f"CTA {cta} unit {index} must be (tile, k_begin, k_end) (got {unit!r})")
    try:
        if any(isinstance(v, (bool, np.bool_)) for v in values):
            raise TypeError
        row = tuple(operator.index(v) for v in values)
    except TypeError:
        raise ScheduleError(f"CTA {cta} unit {index} must hold integers (tile, k_begin, k_end) "
                            f"(got {tuple(values)!r})") from None
    if any(abs(v) >= 2**62 for v in row):  # beyond any tile or MAC iteration, and near int64's end
        raise ScheduleError(f"CTA {cta} unit {index} holds a number too large for a tile or MAC iteration "
                            f"(got {row!r})")
    return row  # type: ignore[return-value]


def _readonly(array: np.ndarray) -> np.ndarray:
    array = np.ascontiguousarray(array)
    array.setflags(write=False)
    return array


@dataclass(frozen=True, slots=True, eq=False)
class Schedule:
    """A validated decomposition of one GEMM.

    ``units`` is an int64 array of rows ``(tile, k_begin, k_end)``; CTA ``c`` owns rows
    ``cta_offsets[c]:cta_offsets[c+1]`` in execution order. ``tile_order`` says how a tile index
    maps to (tile_m, tile_n); ``fixup`` names the policy that consolidates split tiles.
    """

    decomposition: str
    shape: GemmShape
    tile: TileShape
    units: np.ndarray
    cta_offsets: np.ndarray
    machine: Machine | None = None
    tile_order: str = "row-major"
    fixup: str = DEFAULT_FIXUP
    problem: Problem = field(init=False)

    def __post_init__(self) -> None:
        _check_labels(self)
        units = _integers(self.units, "units")
        if units.size % 3:
            raise ScheduleError(f"units must be rows of (tile, k_begin, k_end) (got {units.size} numbers)")
        object.__setattr__(self, "units", _readonly(units.reshape(-1, 3)))
        object.__setattr__(self, "cta_offsets", _readonly(_integers(self.cta_offsets, "cta_offsets").reshape(-1)))
        _validate(self)

    @classmethod
    def proven(cls, decomposition: str, shape: GemmShape, tile: TileShape, units: np.ndarray,
               cta_offsets: np.ndarray, machine: Machine | None = None, tile_order: str = "row-major",
               fixup: str = DEFAULT_FIXUP) -> Schedule:
        """A Schedule whose units are already known to cover every MAC iteration exactly once
        (int64 rows derived from a checked Schedule, or cut from ranges that tile the iterations
        in order): the per-unit validation, ~100 us of small NumPy calls, is skipped; the labels
        are still checked."""
        self = object.__new__(cls)
        for name, value in (("decomposition", decomposition), ("shape", shape), ("tile", tile),
                            ("units", _readonly(units)), ("cta_offsets", _readonly(cta_offsets)),
                            ("machine", machine), ("tile_order", tile_order), ("fixup", fixup)):
            object.__setattr__(self, name, value)
        _check_labels(self)
        return self

    # ---- construction -------------------------------------------------------------------
    @classmethod
    def from_ctas(
        cls,
        decomposition: str,
        shape: GemmShape,
        tile: TileShape,
        ctas: Sequence[Iterable[WorkUnit | tuple[int, int, int]]],
        **options: Any,
    ) -> Schedule:
        """Build from a nested list: ``ctas[c]`` is CTA c's ordered work units."""
        rows: list[tuple[int, int, int]] = []
        offsets = [0]
        for c, cta in enumerate(ctas):
            rows.extend(_unit_row(unit, c, i) for i, unit in enumerate(cta))
            offsets.append(len(rows))
        units = np.array(rows, dtype=np.int64).reshape(-1, 3)
        return cls(decomposition, shape, tile, units, np.array(offsets), **options)

    # ---- views --------------------------------------------------------------------------
    @property
    def grid(self) -> int:
        return len(self.cta_offsets) - 1

    @property
    def ctas(self) -> tuple[tuple[WorkUnit, ...], ...]:
        rows = [WorkUnit(*map(int, row)) for row in self.units]
        bounds = self.cta_offsets.tolist()
        return tuple(tuple(rows[bounds[c] : bounds[c + 1]]) for c in range(self.grid))

    @property
    def unit_cta(self) -> np.ndarray:
        """For each unit row, the CTA that executes it."""
        return np.arange(self.grid).repeat(self.cta_offsets[1:] - self.cta_offsets[:-1])

    @property
    def iters_per_cta(self) -> np.ndarray:
        lengths = self.units[:, 2] - self.units[:, 1]
        return np.add.reduceat(lengths, self.cta_offsets[:-1]) if len(lengths) else lengths

    def tile_coords(self, tile: int) -> tuple[int, int]:
        """(tile_m, tile_n) of a tile index under this schedule's rasterization."""
        tm, tn = tile_coordinates(self.tile_order, self.problem.tiles_m, self.problem.tiles_n, tile)
        return int(tm), int(tn)

    def with_fixup(self, fixup: str) -> Schedule:
        """The same decomposition consolidated by another policy."""
        return Schedule.proven(self.decomposition, self.shape, self.tile, self.units, self.cta_offsets,
                               self.machine, self.tile_order, fixup)

    def with_tile_order(self, order: str) -> Schedule:
        """The same units with tile indices read in rasterization ``order`` (which tile each CTA
        runs changes; every MAC iteration is still covered once)."""
        return Schedule.proven(self.decomposition, self.shape, self.tile, self.units, self.cta_offsets,
                               self.machine, check_tile_order(order), self.fixup)

    def walked_backward(self) -> Schedule:
        """Each CTA's units in reverse order (CUTLASS's SK units walk their tiles backwards).

        Under stream-k's contiguous ranges a CTA then computes the head (k = 0 part) of its last
        tile first and the tail of its first tile last, so under ``turnstile`` every tail's
        predecessor finished long before instead of at the very end of the previous CTA.
        """
        sizes = self.cta_offsets[1:] - self.cta_offsets[:-1]
        cta = np.arange(self.grid).repeat(sizes)
        within = np.arange(len(self.units)) - self.cta_offsets[cta]
        order = self.cta_offsets[cta] + (sizes[cta] - 1 - within)
        return Schedule.proven(self.decomposition, self.shape, self.tile, self.units[order], self.cta_offsets,
                               self.machine, self.tile_order, self.fixup)

    # ---- JSON (the CLI contract: `streamk schedule --json`) -----------------------------------------
    def to_json_dict(self) -> dict[str, Any]:
        p = self.problem
        obj: dict[str, Any] = {
            "decomposition": self.decomposition,
            "shape": [self.shape.m, self.shape.n, self.shape.k],
            "tile": [self.tile.bm, self.tile.bn, self.tile.bk],
            "tiles_m": p.tiles_m,
            "tiles_n": p.tiles_n,
            "iters_per_tile": p.iters_per_tile,
            "grid": self.grid,
            "ctas": [[u._asdict() for u in cta] for cta in self.ctas],
            "tile_order": self.tile_order,
            "fixup": self.fixup,
        }
        if self.machine is not None:
            obj["sms"] = self.machine.sms
            obj["ctas_per_sm"] = self.machine.ctas_per_sm
        return obj

    def to_json(self, **dump_options: Any) -> str:
        return json.dumps(self.to_json_dict(), **dump_options)

    @classmethod
    def from_json(cls, source: str | dict[str, Any]) -> Schedule:
        """Load the object ``to_json`` writes (or one written by hand with the same keys)."""
        try:
            obj = json.loads(source) if isinstance(source, str) else source
            shape = GemmShape(*obj["shape"])
            tile = TileShape(*obj["tile"])
            ctas = [[(u["tile"], u["k_begin"], u["k_end"]) for u in cta] for cta in obj["ctas"]]
        except (KeyError, TypeError, ValueError) as exc:
            raise ScheduleError(f"schedule JSON must have shape, tile and ctas of "
                                f"{{tile, k_begin, k_end}} objects ({exc!r})") from exc
        machine = Machine(obj["sms"], obj.get("ctas_per_sm", 1)) if "sms" in obj else None
        return cls.from_ctas(obj.get("decomposition", "custom"), shape, tile, ctas, machine=machine,
                             tile_order=obj.get("tile_order", "row-major"),
                             fixup=obj.get("fixup", DEFAULT_FIXUP))

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Schedule):
            return NotImplemented
        return (self.decomposition, self.shape, self.tile, self.machine, self.tile_order,
                self.fixup) == (other.decomposition, other.shape, other.tile, other.machine,
                                other.tile_order, other.fixup) and \
            np.array_equal(self.units, other.units) and \
            np.array_equal(self.cta_offsets, other.cta_offsets)

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return (f"Schedule({self.decomposition!r}, shape={self.shape}, tile={self.tile}, "
                f"grid={self.grid}, units={len(self.units)}, fixup={self.fixup!r})")


def _locate(schedule: Schedule, row: int) -> str:
    cta = int(np.searchsorted(schedule.cta_offsets, row, side="right") - 1)
    return f"CTA {cta} unit {row - int(schedule.cta_offsets[cta])}"


def _check_labels(s: Schedule) -> None:
    """Everything but the units: value types, tile order, fixup policy; sets ``problem``."""
    for what, value, kind in (("shape", s.shape, GemmShape), ("tile", s.tile, TileShape)):
        if not isinstance(value, kind):
            raise ScheduleError(f"{what} must be a streamk.{kind.__name__} (got {value!r})")
    object.__setattr__(s, "problem", Problem(s.shape, s.tile))
    if s.machine is not None and not isinstance(s.machine, Machine):
        raise ScheduleError(f"machine must be a streamk.Machine or None (got {s.machine!r})")
    check_tile_order(s.tile_order)
    check_fixup(s.fixup)


def _validate(s: Schedule) -> None:
    """Raise ScheduleError naming the first tile/iteration not covered exactly once."""
    p, units, offsets = s.problem, s.units, s.cta_offsets
    if len(offsets) < 2 or offsets[0] != 0 or offsets[-1] != len(units):
        raise ScheduleError(f"cta_offsets must run from 0 to the unit count {len(units)} "
                            f"with one entry per CTA plus one (got {offsets.tolist()[:8]}...)")
    sizes = np.diff(offsets)
    if (sizes < 1).any():
        raise ScheduleError(f"every CTA needs at least one work unit (CTA {int(np.argmax(sizes < 1))} "
                            f"has {int(sizes.min())})")
    tile, kb, ke = units[:, 0], units[:, 1], units[:, 2]
    bad = (tile < 0) | (tile >= p.tiles) | (kb < 0) | (ke > p.iters_per_tile) | (kb >= ke)
    if bad.any():
        row = int(np.argmax(bad))
        raise ScheduleError(
            f"{_locate(s, row)} is {tuple(units[row].tolist())}: need 0 <= tile < {p.tiles} and "
            f"0 <= k_begin < k_end <= {p.iters_per_tile} (an empty or out-of-range unit)")
    order = np.lexsort((kb, tile))
    t, b, e = tile[order], kb[order], ke[order]
    first = np.ones(len(t), dtype=bool)
    first[1:] = t[1:] != t[:-1]
    last = np.ones(len(t), dtype=bool)
    last[:-1] = t[1:] != t[:-1]
    present = np.zeros(p.tiles, dtype=bool)
    present[t] = True
    if not present.all():
        missing = int(np.argmin(present))
        raise ScheduleError(f"tile {missing}: {_iterations(0, p.iters_per_tile)} not covered by any unit")
    prev_end = np.empty_like(e)
    prev_end[1:] = e[:-1]
    expect = np.where(first, 0, prev_end)
    wrong = b != expect
    if wrong.any():
        i = int(np.argmax(wrong))
        if b[i] > expect[i]:
            what = f"{_iterations(int(expect[i]), int(b[i]))} not covered"
        else:
            what = (f"iteration {int(b[i])} is covered twice (by {_locate(s, int(order[i]))} "
                    f"and {_locate(s, int(order[i - 1]))})")
        raise ScheduleError(f"tile {int(t[i])}: {what}")
    short = last & (e != p.iters_per_tile)
    if short.any():
        i = int(np.argmax(short))
        raise ScheduleError(f"tile {int(t[i])}: {_iterations(int(e[i]), p.iters_per_tile)} not covered")


def _iterations(begin: int, end: int) -> str:
    """The half-open range [begin, end) in words, both ends inclusive: "iteration 2 is", "iterations 2..5 are"."""
    return f"iteration {begin} is" if end - begin == 1 else f"iterations {begin}..{end - 1} are"
