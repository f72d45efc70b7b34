"""Decompositions: pure functions (shape, tile, machine, options) -> Schedule, by CLI name."""

from . import basic, hybrid, auto, cutlass  # noqa: F401,I001  (importing registers the built-in schedulers)
from .registry import accepted_options, get, make_schedule, names, register

__all__ = ["register", "names", "get", "make_schedule", "accepted_options"]
