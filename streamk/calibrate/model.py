"""A kernel's calibrated cost model: the simulator's terms in microseconds, each with its error.

Distinct from auto's model constants (``TargetTile.model_costs``, in MAC iterations and tuned for
choosing grids): these are fitted to CUDA-event times of controlled Schedules on one device
(``streamk calibrate``) so that the simulator predicts microseconds (``predict.predict_us``).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from ..errors import InputError
from ..shapes import TileShape

# Every term the calibrated model can hold, in the order a fit reports them, with what it prices.
TERM_DOC: dict[str, str] = {
    "launch": "once per launch of the main kernel (launch latency, first and last wave's skew)",
    "a": "once per CTA (prologue, compulsory misses, writing the output tile)",
    "c1": "per MAC iteration of a CTA alone on its SM",
    "c_shared": "per MAC iteration of each CTA while ctas_per_sm CTAs share an SM",
    "b": "per partial tile stored to the workspace",
    "d": "per peer partial read and accumulated by a CTA of the main kernel",
    "pass_launch": "once per extra pass (the separate reduce after the main kernel, atomic's prescale before it)",
    "d_reduce": "per partial read in the separate reduce pass",
}


def term_names(ctas_per_sm: int) -> tuple[str, ...]:
    """The terms a kernel of ``ctas_per_sm`` resident CTAs has: c_shared only where CTAs can share."""
    return tuple(t for t in TERM_DOC if t != "c_shared" or ctas_per_sm > 1)


@dataclass(frozen=True, slots=True)
class Term:
    """One fitted constant: ``us`` microseconds, ``se`` its standard error."""

    name: str
    us: float
    se: float

    def __post_init__(self) -> None:
        if self.name not in TERM_DOC:
            raise InputError(f"calibration term must be one of {', '.join(TERM_DOC)} (got {self.name!r})")
        if not (math.isfinite(self.us) and self.us >= 0 and self.se >= 0):
            raise InputError(f"calibration term {self.name} must be finite and >= 0 with se >= 0 "
                             f"(got {self.us} +- {self.se})")


@dataclass(frozen=True, slots=True)
class Calibration:
    """One kernel (dtype, tile) on one device family: its terms and where they were measured."""

    dtype: str
    tile: TileShape
    ctas_per_sm: int
    terms: tuple[Term, ...]
    device: str = ""
    sms: int = 0
    probes: int = 0
    rms_rel_residual: float = math.nan

    def __post_init__(self) -> None:
        names = tuple(t.name for t in self.terms)
        if names != term_names(self.ctas_per_sm):
            raise InputError(f"calibration of {self.dtype} {self.tile} needs the terms "
                             f"{', '.join(term_names(self.ctas_per_sm))} in that order (got {', '.join(names)})")

    def us(self, name: str) -> float:
        """The value of term ``name``; c_shared falls back to c1 on a kernel of one CTA per SM."""
        if name == "c_shared" and self.ctas_per_sm == 1:
            name = "c1"
        return next(t.us for t in self.terms if t.name == name)

    def to_json_dict(self) -> dict[str, Any]:
        return {"dtype": self.dtype, "tile": [self.tile.bm, self.tile.bn, self.tile.bk],
                "ctas_per_sm": self.ctas_per_sm, "device": self.device, "sms": self.sms, "probes": self.probes,
                "rms_rel_residual": None if math.isnan(self.rms_rel_residual) else self.rms_rel_residual,
                "terms_us": {t.name: {"us": t.us, "se": t.se} for t in self.terms}}

    @classmethod
    def from_json_dict(cls, obj: dict[str, Any]) -> Calibration:
        try:
            terms = tuple(Term(name, float(v["us"]), float(v["se"])) for name, v in obj["terms_us"].items())
            rms = obj.get("rms_rel_residual")
            return cls(str(obj["dtype"]), TileShape(*(int(x) for x in obj["tile"])), int(obj["ctas_per_sm"]), terms,
                       str(obj.get("device", "")), int(obj.get("sms", 0)), int(obj.get("probes", 0)),
                       math.nan if rms is None else float(rms))
        except (KeyError, TypeError, ValueError) as exc:
            if isinstance(exc, InputError):
                raise
            raise InputError(f"calibration entry is malformed ({type(exc).__name__}: {exc}); it needs dtype, "
                             f"tile, ctas_per_sm and terms_us {{name: {{us, se}}}}") from None
