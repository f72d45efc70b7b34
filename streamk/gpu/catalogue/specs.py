"""What the host picks kernels by: one ``KernelSpec`` per (input dtype, tile), derived from the
catalogue's variants, and the parsing of a ``tile=`` argument (``spec_for_tile``)."""

from __future__ import annotations

import functools
from dataclasses import dataclass

from ...errors import ScheduleError
from ...shapes import ITEMSIZE, TileShape
from .variants import MAINLOOPS, VARIANTS, column_major

# input dtype -> entry point, reduce pass, prescale pass, tile, pack entry, element bytes,
# accumulator/output dtype, and the entry points with narrower global->shared copies (bytes, name)
# that read operands whose rows are only 8-, 4- or (shifted copies) 2-byte aligned in place. All
# derived from the catalogue (variants.VARIANTS). Threads per block come from the
# kernel's __launch_bounds__, dynamic shared memory from its module's <entry>_smem constant.
@dataclass(frozen=True, slots=True)
class KernelSpec:
    main: str
    reduce: str
    prescale: str
    tile: TileShape
    pack: str
    itemsize: int
    out_dtype: str
    narrow: tuple[tuple[int, str], ...] = ()
    tma: bool = False  # the main kernel reads A and B through TMA maps (streamk/gpu/runtime/tma.py)
    archs: tuple[str, ...] = ("sm_80", "sm_90a")  # device archs its kernels are built for
    any_rows: bool = False  # reads unit-column-stride operands in place at any row stride (sm80/dot.cuh)
    elementwise: str = ""  # "A" or "B": the operand its main kernel reads in place at any strides
    # (layout, entry) of the main kernels reading column-major operands (variants.LAYOUTS)
    layouts: tuple[tuple[str, str], ...] = ()

    def entry(self, load_bytes: int, layout: str = "") -> str:
        """The main entry point whose copies are ``load_bytes`` wide (16: ``main``) and that reads
        operands of ``layout`` (variants.LAYOUTS; "": row-major A and B)."""
        if layout:
            return dict(self.layouts)[layout]
        if load_bytes == 16:
            return self.main
        return dict(self.narrow)[load_bytes]

    def reads_column_major(self, name: str) -> bool:
        """Whether a main kernel of this spec reads operand ``name`` ("A" or "B") column-major in place."""
        return any(column_major(layout, name) for layout, _ in self.layouts)

    @property
    def chunk(self) -> int:
        """Elements per 16-byte cp.async: rows must be multiples of this (or get packed)."""
        return 16 // self.itemsize


@functools.lru_cache(maxsize=None)
def _spec(dtype: str, tile: TileShape) -> KernelSpec:
    """The registry's kernels for ``dtype`` inputs on ``tile``: main (every copy width), passes, pack."""
    tiled = [v for v in VARIANTS if v.role == "main" and v.dtype == dtype and v.tile == tile]
    main = [v for v in tiled if not v.layout]
    family = MAINLOOPS[main[0].mainloop]
    passes = {v.role: v.name for v in VARIANTS if v.role in ("reduce", "prescale") and v.mainloop == family.name
              and v.tile == tile}
    pack = next(v.name for v in VARIANTS if v.role == "pack" and ITEMSIZE[v.dtype] == ITEMSIZE[dtype])
    return KernelSpec(next(v.name for v in main if v.load_bytes == 16), passes["reduce"], passes["prescale"], tile,
                      pack, ITEMSIZE[dtype], family.acc_dtype,
                      tuple((v.load_bytes, v.name) for v in main if v.load_bytes != 16), family.tma, family.archs,
                      family.any_rows, family.elementwise, tuple((v.layout, v.name) for v in tiled if v.layout))


@functools.lru_cache(maxsize=None)
def _tiles(dtype: str) -> tuple[TileShape, ...]:
    """The tiles the registry has main kernels for, in its order (the paper's first)."""
    return tuple(dict.fromkeys(v.tile for v in VARIANTS if v.role == "main" and v.dtype == dtype))


SPECS = {dtype: _spec(dtype, _tiles(dtype)[0]) for dtype in dict.fromkeys(v.dtype for v in VARIANTS if v.role == "main")}


def tile_specs(dtype: str) -> dict[TileShape, KernelSpec]:
    """Every tile a kernel runs for ``dtype``, the default (the paper's) first."""
    return dict(_tile_specs(dtype))


@functools.lru_cache(maxsize=None)
def _tile_specs(dtype: str) -> tuple[tuple[TileShape, KernelSpec], ...]:
    return tuple((tile, _spec(dtype, tile)) for tile in _tiles(dtype))


def spec_for_tile(dtype: str, tile: TileShape | int | str) -> KernelSpec:
    """The kernel for ``dtype`` on ``tile``: a TileShape, its edge (128 or 64) for a square tile,
    "BMxBN" (the first kernel of that tile, in registry order) or "BMxBNxBK" (e.g. "128x128x64":
    the sm90 TMA + wgmma kernel); ScheduleError naming the tiles there are otherwise."""
    specs = tile_specs(dtype)
    if isinstance(tile, str):
        parts = tile.lower().split("x")
        if len(parts) not in (2, 3) or not all(p.isdigit() for p in parts):
            raise ScheduleError(f"tile must look like 128x64 or 128x128x64 (got {tile!r})")
        sides = tuple(int(p) for p in parts)
        match = [spec for t, spec in specs.items() if (t.bm, t.bn, t.bk)[:len(sides)] == sides]
        if match:
            return match[0]
    for t, spec in specs.items():
        if t == tile or (isinstance(tile, int) and not isinstance(tile, bool) and t.bm == t.bn == tile):
            return spec
    offered = ", ".join(f"{t.bm}x{t.bn}x{t.bk}" for t in specs)
    raise ScheduleError(f"no {dtype} kernel runs {tile} tiles (there are: {offered})")
