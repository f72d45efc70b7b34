"""Old import path of ``streamk.gpu.decide.operands`` and the catalogue's specs, kept for the
runtime modules (prepared, device, request) until they move into ``gpu/runtime/`` (issue 40)."""

from .catalogue import SPECS, KernelSpec, spec_for_tile, tile_specs
from .decide.operands import NARROW_MODES, Operand, check_operands, describe, padded

__all__ = ["NARROW_MODES", "SPECS", "KernelSpec", "Operand", "check_operands", "describe", "padded", "spec_for_tile",
           "tile_specs"]
