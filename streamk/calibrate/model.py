"""A kernel's calibrated cost model: the simulator's terms in microseconds, each with its error.

Distinct from auto's model constants (``TargetTile.model_costs``, in MAC iterations and tuned for
choosing grids): these are fitted to CUDA-event times of controlled Schedules on one device
(``streamk calibrate``) so that the simulator predicts microseconds (``predict.predict_us``).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from ..costs import Costs
from ..errors import InputError
from ..shapes import TileShape

# Every term the calibrated model can hold, in the order a fit reports them, with what it prices.
TERM_DOC: dict[str, str] = {
    "launch": "once per launch of the main kernel (launch latency, first and last wave's skew)",
    "a": "once per CTA (prologue, compulsory misses, writing the output tile)",
    "c1": "per MAC iteration of a CTA alone on its SM",
    "c_shared": "per MAC iteration of each CTA while ctas_per_sm CTAs share an SM",
    "a_shared": "once per CTA, what it costs more while ctas_per_sm CTAs share an SM (the pair's prologues and "
                "output-tile stores run together on one SM's load and store paths, where a is a CTA alone; LOG.md v53)",
    "b": "per partial tile stored to the workspace",
    "d": "per peer partial read and accumulated by a CTA of the main kernel",
    "pass_launch": "once per extra pass (the separate reduce after the main kernel, atomic's prescale before it)",
    "d_reduce": "per partial read in the separate reduce pass",
    "unit": "per work unit after a CTA's first (the mainloop's restart on a new tile, its epilogue)",
    "dram_us_per_mb": "per MB of A and B read from DRAM, where a step's misses outlast its MAC iteration",
    "atomic": "per unit that adds its partial tile into C atomically (the atomic policy's red.add of a whole tile)",
    "handoff": "per turnstile handoff (a middle contributor's wait, read of its predecessor's sum, store and "
               "release), in place of d + b: one CTA alone on the chain, where b is priced with every SM storing "
               "at once (LOG.md v51)",
    "c_free": "per MAC iteration, what a CTA alone on its SM saves when SMs idle: c1 - (1 - busy SMs / SMs) c_free "
              "(the idle SMs' share of L2 and DRAM bandwidth goes to the busy ones)",
    "c_tpc": "per MAC iteration of a CTA alone on its SM, what it saves more where the wave leaves each TPC (SM pair) "
             "at most one CTA: busy CTAs <= SMs / 2, placed one a TPC first (a partner's CTA shares the TPC's operand "
             "intake, and a wave's lockstep waits on the CTAs that share; LOG.md v45, v49)",
    "c_l2": "per MAC iteration, what it costs more per L2's worth of A and B: c + c_l2 (A + B bytes) / L2 bytes "
            "(the fuller the L2, the more shared slices an L2-bound mainloop refills between their reads)",
    "l2_us_per_mb": "per MB of A and B boxes that the busy CTAs read from L2 in one MAC iteration: the iteration "
                    "takes at least that (every SM's reads share the L2's bandwidth)",
    "c_shifted": "per MAC iteration, what it costs more where the kernel streams rows that are not 16-byte aligned "
                 "in place (the dot tiles' funnel-shifted fragments; target.streams_unaligned)",
    "c_row32": "per MAC iteration of a CTA alone on its SM, what it costs more where every row of its A and B boxes "
               "starts off a 32-byte boundary; any iteration stretches by 1 + share c_row32 / c1, share the rows off "
               "(traffic.row32_share: a 16-byte-aligned row spans a 32-byte sector more, and the mainloop waits on loads)",
    "c_scatter": "per MAC iteration of a CTA alone on its SM, what it costs more where every A and B slice it reads "
                 "was read by no CTA in the steps just before; any iteration stretches by 1 + share c_scatter / c1, "
                 "share the reads so beyond data-parallel's (traffic.scattered_share: Stream-K walked forwards starts "
                 "each CTA at its own k offset; LOG.md v66)",
    "pack": "once per launch whose operands the pack pass copies first (its launch and drain, less what the main "
            "kernel's programmatic launch overlaps)",
    "pack_us_per_mb": "per MB of A and B the pack pass copies (operands whose rows the kernel cannot read in place)",
}


# Terms added to the first model (LOG.md v53, v19, v21, v51, v22, v49, v26, v28, v35, v41d, v66, v35e); an entry
# fitted without some of them predicts as if they were 0.
EXTENSION_TERMS = ("a_shared", "unit", "dram_us_per_mb", "atomic", "handoff", "c_free", "c_tpc", "c_l2",
                   "l2_us_per_mb", "c_shifted", "c_row32", "c_scatter", "pack", "pack_us_per_mb")
# The pack pass's terms: fitted only on a kernel that packs (the dp-packed probes); any other predicts no pack.
PACK_TERMS = ("pack", "pack_us_per_mb")


# Terms priced through a max() with the MAC iteration: a device whose bandwidth keeps up with every
# probe never binds them, and a fit then holds them at 0 (fit.fit) instead of refusing the design.
MAX_PRICED_TERMS = ("dram_us_per_mb", "l2_us_per_mb")
# Terms a fit may leave out where no probe's time moves with them: the max-priced ones (then 0), and
# c_shared where the L2 floor binds every probe run at shared residency (a streaming kernel's CTAs
# share the L2's bandwidth, whatever their own rate: the dot tiles'); a shared CTA then predicts at c1.
MAY_NOT_BIND = MAX_PRICED_TERMS + ("c_shared",)


# Terms of CTAs sharing an SM: only a kernel of more than one resident CTA an SM has them.
SHARED_TERMS = ("c_shared", "a_shared")


def term_names(ctas_per_sm: int) -> tuple[str, ...]:
    """The terms a kernel of ``ctas_per_sm`` resident CTAs has: the shared ones only where CTAs can share."""
    return tuple(t for t in TERM_DOC if t not in SHARED_TERMS or ctas_per_sm > 1)


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
    l2_bytes: int = 0  # the L2 of the device it was measured on: the traffic model's capacity

    def __post_init__(self) -> None:
        names = tuple(t.name for t in self.terms)
        allowed = term_names(self.ctas_per_sm)
        if names != tuple(t for t in allowed if t in names) or any(t not in names for t in allowed
                                                                   if t not in EXTENSION_TERMS):
            raise InputError(f"calibration of {self.dtype} {self.tile} needs the terms "
                             f"{', '.join(term_names(self.ctas_per_sm))} in that order (got {', '.join(names)})")

    def us(self, name: str) -> float:
        """The value of term ``name``; c_shared falls back to c1 on a kernel of one CTA per SM."""
        if name == "c_shared" and self.ctas_per_sm == 1:
            name = "c1"
        return next((t.us for t in self.terms if t.name == name), 0.0 if name in EXTENSION_TERMS else math.nan)

    def model_costs(self) -> Costs:
        """The appendix model's a, b, c, d of a CTA alone on its SM, in MAC iterations (c = 1)."""
        c = self.us("c1")
        return Costs(a=self.us("a") / c, b=self.us("b") / c, c=1.0, d=self.us("d") / c)

    def to_json_dict(self) -> dict[str, Any]:
        return {"dtype": self.dtype, "tile": [self.tile.bm, self.tile.bn, self.tile.bk],
                "ctas_per_sm": self.ctas_per_sm, "device": self.device, "sms": self.sms, "probes": self.probes,
                "rms_rel_residual": None if math.isnan(self.rms_rel_residual) else self.rms_rel_residual,
                "l2_bytes": int(self.l2_bytes),
                "terms_us": {t.name: {"us": t.us, "se": t.se} for t in self.terms}}

    @classmethod
    def from_json_dict(cls, obj: dict[str, Any]) -> Calibration:
        try:
            terms = tuple(Term(name, float(v["us"]), float(v["se"])) for name, v in obj["terms_us"].items())
            rms = obj.get("rms_rel_residual")
            return cls(str(obj["dtype"]), TileShape(*(int(x) for x in obj["tile"])), int(obj["ctas_per_sm"]), terms,
                       str(obj.get("device", "")), int(obj.get("sms", 0)), int(obj.get("probes", 0)),
                       math.nan if rms is None else float(rms), int(obj.get("l2_bytes", 0)))
        except (KeyError, TypeError, ValueError) as exc:
            if isinstance(exc, InputError):
                raise
            raise InputError(f"calibration entry is malformed ({type(exc).__name__}: {exc}); it needs dtype, "
                             f"tile, ctas_per_sm and terms_us {{name: {{us, se}}}}") from None
