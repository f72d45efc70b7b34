"""The kernel catalogue: every kernel variant streamk ships and the tiles they run, as data.

``variants`` (mainloops, ``KernelVariant``, ``VARIANTS``, the named tiles), ``specs`` (``KernelSpec``
per dtype and tile, ``spec_for_tile``) and ``source`` (each compile unit's generated CUDA source).
It sits at the bottom: it imports nothing of streamk but the value types; the Target
(``streamk.target``) attaches what was measured to its entries.
"""

from .specs import SPECS, KernelSpec, spec_for_tile, tile_specs
from .variants import (BY_NAME, DOT_T_TILE, DOT_TILE, F64_LARGE_TILES, F64_TILE, LARGE_RUNGS, LAYOUTS, MAINLOOPS,
                       PAPER_HALF_TILE, RECT_TILES, SHIFTED_TILES, SM90_192_TILE, SM90_M64_192_TILE, SM90_M64_TILE,
                       SM90_M64_WIDE_TILE, SM90_NARROW_TILE, SM90_TILE, SM90_TILES, SM90_WIDE_TILE, SMALL_TILE,
                       TINY_TILES, TMA_STORE_TILES,
                       VARIANTS, WIDE_TILE, KernelVariant, column_major, layout_of_operands)

__all__ = ["BY_NAME", "DOT_TILE", "DOT_T_TILE", "F64_LARGE_TILES", "F64_TILE", "KernelSpec", "KernelVariant",
           "LARGE_RUNGS", "LAYOUTS", "MAINLOOPS", "PAPER_HALF_TILE", "RECT_TILES", "SHIFTED_TILES", "SM90_192_TILE",
           "SM90_M64_192_TILE", "SM90_M64_TILE", "SM90_M64_WIDE_TILE", "SM90_NARROW_TILE", "SM90_TILE", "SM90_TILES", "SM90_WIDE_TILE",
           "SMALL_TILE", "SPECS", "TINY_TILES", "TMA_STORE_TILES",
           "VARIANTS", "WIDE_TILE", "column_major", "layout_of_operands", "spec_for_tile", "tile_specs"]
