"""The machine every consumer plans for: a ``Target`` (arch, SMs, and per kernel tile its resident
CTAs per SM and the appendix model's constants measured for it).

Schedulers take a ``Machine``; a Target says which Machine a tile's kernel is on a GPU, so
``auto`` (tile choice included, ``streamk.gpu.decide.schedule.schedule_for``), the simulator, the sweep and
``streamk.gpu.gemm`` plan from one value. Presets are named (``a100``, ``h100``, ``h200``); on a
live device ``streamk.gpu`` uses the preset of its arch with the device's own SM count, and its
GPU tests check the preset's residencies against the occupancy API.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from collections.abc import Iterator, MutableMapping
from typing import TYPE_CHECKING, Any

from .calibrate.model import Calibration
from .costs import Costs
from .errors import ScheduleError
from .gpu.catalogue import (DOT_T_TILE, DOT_TILE, F64_LARGE_TILES, F64_TILE, LARGE_RUNGS, PAPER_HALF_TILE,
                            SM90_192_TILE, SM90_M64_192_TILE, SM90_M64_TILE, SM90_M64_WIDE_TILE, SM90_NARROW_TILE,
                            SM90_TILE, SM90_TILES, SM90_WIDE_TILE, WIDE_TILE)
from .shapes import GemmShape, Machine, Problem, TileShape

if TYPE_CHECKING:
    from pathlib import Path


@dataclass(frozen=True, slots=True)
class TargetTile:
    """One tile's main kernel for one input dtype: its resident CTAs per SM, and auto's model
    constants (``model_costs`` for owner-waits and turnstile, ``reduce_costs`` for the separate
    reduce pass; None: the paper's ``AUTO_COSTS``, and no separate-reduce planning), its tile order,
    and its ``calibration`` in microseconds where one was measured (``streamk calibrate``; None otherwise)."""

    dtype: str
    tile: TileShape
    ctas_per_sm: int
    model_costs: Costs | None = None
    reduce_costs: Costs | None = None
    calibration: Calibration | None = None
    tile_order: str | None = None  # auto's rasterization on this kernel (None: the Schedule's row-major)
    one_wave_order: str | None = None  # auto's rasterization where its tiles fit one wave (None: tile_order)
    # auto's plain DP runs on persistent CTAs up to this many iterations per tile (None: never;
    # streamk.sched.auto)
    persistent_upto: int | None = None
    # below a tile per SM auto splits tiles at aligned k offsets, priced by the calibration's
    # constants (streamk.sched.auto split_costs); False, or no calibration: the model's grid
    aligned_splits: bool = False
    # ... their MAC iterations priced slower in proportion to the CTAs beyond this share of the SMs
    # (the L2's bandwidth; streamk.sched.auto split_busy_share); None: never
    split_busy_share: float | None = None
    # ... but this share on wide GEMMs of deep tiles (streamk.sched.auto split_wide_share); None: the same
    split_wide_share: float | None = None
    # ... and each split tile's partial priced this much above the calibrated b (us)
    split_extra_us: float = 0.0
    # auto's two-tile hybrid only below this many waves of tiles (streamk.sched.auto); None: any
    hybrid_max_waves: float | None = None
    # ... and decided under the calibrated constants, MAC iterations priced as for the splits but
    # with this share (streamk.costs.two_tile_beats_dp); None: the appendix model's constants
    hybrid_busy_share: float | None = None
    # ... and only where DP's partial wave fills at most this share of the SMs; None: any
    hybrid_max_fill: float | None = None
    # few deep tiles: basic Stream-K on every SM under the separate-reduce fixup (streamk.sched.auto)
    few_tiles_reduce: bool = False
    # auto's decode-like GEMMs on this tile: a DP grid of few deep tiles becomes Stream-K on every
    # resident slot under separate-reduce (streamk.sched.auto decode_reduce; the GPU backend asks)
    decode_reduce: bool = False
    # auto on this memory-bound tile: deeper than two MAC iterations a tile, Stream-K under
    # separate-reduce on every resident slot, else DP (streamk.sched.auto spread_reduce). Measured on
    # H100 / H200 and set on the A100 too: a GEMV's DP grid there is as few lone CTAs streaming
    spread_reduce: bool = False

    def order_for(self, problem: Problem, slots: int) -> str | None:
        """auto's rasterization of ``problem`` on ``slots`` resident CTAs: ``one_wave_order`` where its
        tiles fit one wave in more tile rows than a quarter of their MAC iterations
        (ONE_WAVE_ITERS_PER_ROW)."""
        one_wave = problem.tiles <= slots and ONE_WAVE_ITERS_PER_ROW * problem.tiles_m > problem.iters_per_tile
        return self.one_wave_order if self.one_wave_order is not None and one_wave else self.tile_order

    def split_costs(self) -> Costs | None:
        """auto's constants for aligned splits: the calibrated model's, in MAC iterations, a partial
        dearer by ``split_extra_us``."""
        if not self.aligned_splits or self.calibration is None:
            return None
        costs = self.calibration.model_costs()
        return replace(costs, b=costs.b + self.split_extra_us / self.calibration.us("c1"))


def streams_unaligned(shape: GemmShape, tile: TileShape, element_bytes: int) -> bool:
    """Whether ``tile``'s kernel streams rows that are not 16-byte aligned in place, for contiguous
    row-major operands of ``shape`` (A m x k, B k x n, as auto and the calibration assume): the dot
    tiles read their large operand at any alignment (A's rows of k; B's rows of n, transposed) and
    take a funnel-shifted fragment path there; every other kernel reads such rows packed."""
    if tile == DOT_TILE:
        return shape.k * element_bytes % 16 != 0
    if tile == DOT_T_TILE:
        return shape.n * element_bytes % 16 != 0
    return False


def stores_apart(tile: TileShape) -> bool:
    """Whether ``tile``'s kernel loads its next unit's operands apart from its partial stores: the sm90
    kernels' producer warp issues the next unit's TMA loads while the consumers store, where an sm80
    CTA's warps issue theirs after their stores (a separate-reduce CTA's first partial; LOG.md v111)."""
    return tile in SM90_TILES


@dataclass(frozen=True, slots=True)
class Target:
    """A GPU as the planners see it. ``tiles`` lists each dtype's tiles, its paper tile first;
    ``large_rungs`` (a key of LARGE_RUNGS) the kernel family auto's large-GEMM tiles come from."""

    name: str
    arch: str
    sms: int
    tiles: tuple[TargetTile, ...]
    large_rungs: str = "sm80"
    # auto takes the calibrated model's pick where gpu/decide/by_model.py allows: measured on the
    # H200 only (benchmarks/LOG.md v47), so the other presets keep auto's rules
    model_picks: bool = False
    # auto runs short whole tiles of 128 rows in 2x2 clusters that share A and B
    # (gpu/decide/launches.auto_quads): measured on the H200 only (benchmarks/LOG.md v46)
    quad_clusters: bool = False
    # auto runs one wave of 64x128x64 tiles where its 128x128x64 launch leaves SMs idle
    # (gpu/decide/launches.one_wave_m64): measured on the H200 only (benchmarks/LOG.md v76)
    one_wave_m64: bool = False
    # auto runs whole 128x128x64 tiles of at most 0.6 of a wave on sector-aligned rows row-major and
    # unclustered (gpu/decide/launches.plain_partial_wave): measured on the H200 only (benchmarks/LOG.md v80)
    plain_partial_waves: bool = False
    # auto's decode rules for row-major operands measured against every candidate tile
    # (gpu/decide/tiles: DOT_ROW_MAJOR_MIN_K, tall_decode_tile): measured on the H200 only (benchmarks/LOG.md v91)
    row_major_decode: bool = False
    # torch's Linear in decode with a W under the L2 runs on 64x128x64 reading W in place
    # (gpu/decide/orient.small_w_linear): measured on the H200 only (benchmarks/LOG.md v93)
    linear_small_w: bool = False
    # torch's Linear with a W of 9-64 rows over many tokens runs transposed on 64x128x64 in place
    # (gpu/decide/orient.tall_transposed_tile): measured on the H200 only (benchmarks/LOG.md v97)
    tall_transposed: bool = False
    # lookups by (dtype, tile) and dtype, built once: a first gemm() call asks several times
    _by_tile: dict = field(init=False, repr=False, compare=False, hash=False)
    _by_dtype: dict = field(init=False, repr=False, compare=False, hash=False)

    def __post_init__(self) -> None:
        if self.large_rungs not in LARGE_RUNGS:
            raise ScheduleError(f"large_rungs must be one of {', '.join(LARGE_RUNGS)} (got {self.large_rungs!r})")
        by_dtype: dict[str, list[TileShape]] = {}
        for t in self.tiles:
            by_dtype.setdefault(t.dtype, []).append(t.tile)
        object.__setattr__(self, "_by_tile", {(t.dtype, t.tile): t for t in self.tiles})
        object.__setattr__(self, "_by_dtype", {d: tuple(tiles) for d, tiles in by_dtype.items()})

    def dtypes(self) -> tuple[str, ...]:
        return tuple(self._by_dtype)

    def tiles_for(self, dtype: str) -> tuple[TileShape, ...]:
        """The tiles a kernel runs for ``dtype`` here, the paper's first."""
        tiles = self._by_dtype.get(dtype)
        if not tiles:
            raise ScheduleError(f"target {self.name} has no {dtype} kernels (it has {', '.join(self.dtypes())})")
        return tiles

    def kernel(self, dtype: str, tile: TileShape) -> TargetTile:
        """The facts of ``dtype``'s kernel on ``tile``; ScheduleError naming the tiles there are."""
        found = self._by_tile.get((dtype, tile))
        if found is not None:
            return found
        offered = ", ".join(str(t) for t in self.tiles_for(dtype))
        raise ScheduleError(f"target {self.name} has no {dtype} kernel on {tile} tiles (it has: {offered})")

    def machine(self, dtype: str, tile: TileShape) -> Machine:
        """The Machine that tile's kernel sees: the SMs and its resident CTAs per SM."""
        return Machine(self.sms, self.kernel(dtype, tile).ctas_per_sm)

    def with_sms(self, sms: int, name: str) -> Target:
        return replace(self, sms=sms, name=name)

    def with_large_rungs(self, family: str) -> Target:
        """This target with auto's large-GEMM tiles from ``family`` (a key of catalogue.LARGE_RUNGS)."""
        return replace(self, large_rungs=family)

    def to_json_dict(self) -> dict[str, Any]:
        return {"name": self.name, "arch": self.arch, "sms": self.sms, "large_rungs": self.large_rungs,
                "tiles": [{"dtype": t.dtype, "tile": [t.tile.bm, t.tile.bn, t.tile.bk], "ctas_per_sm": t.ctas_per_sm,
                           "model_costs": str(t.model_costs) if t.model_costs else None,
                           "reduce_costs": str(t.reduce_costs) if t.reduce_costs else None,
                           "calibrated": t.calibration is not None, "tile_order": t.tile_order,
                           "one_wave_order": t.one_wave_order,
                           "persistent_upto": t.persistent_upto, "few_tiles_reduce": t.few_tiles_reduce,
                           "decode_reduce": t.decode_reduce, "spread_reduce": t.spread_reduce,
                           "split_costs": str(t.split_costs()) if t.aligned_splits and t.calibration else None,
                           "split_busy_share": t.split_busy_share, "split_wide_share": t.split_wide_share,
                           "hybrid_max_waves": t.hybrid_max_waves,
                           "hybrid_busy_share": t.hybrid_busy_share, "hybrid_max_fill": t.hybrid_max_fill}
                          for t in self.tiles]}


HALF_DTYPES = ("float16", "bfloat16")
# auto's tile order on the sm90 tiles: the tiles in flight share rows of A and columns of B in L2
# (8192^3 17-21% faster than row-major on an H100; LOG.md v17c). The sm80 tiles keep row-major (v8).
SM90_TILE_ORDER = "grouped-8"
# ... except one wave of 128x128x64 tiles with more tile rows than a quarter of its MAC iterations
# per tile (about 2m > k): row-major and unclustered, since multicast pays off on deep, short waves
# (LOG.md v29; 128x256x64 neutral, v28).
SM90_ONE_WAVE_ORDER = {SM90_TILE: "row-major"}
ONE_WAVE_ITERS_PER_ROW = 4
# auto's aligned splits on 128x128x64 price MAC iterations by the CTAs busy beyond this share of the
# SMs: the mainloop slows once more than ~60 CTAs share L2 (LOG.md v28) ...
_SM90_SPLIT_BUSY_SHARE = {SM90_TILE: 0.5}
# ... and beyond 0.6 on GEMMs at least 8x wider than tall with 64 iterations a tile or more (LOG.md v37)
_SM90_SPLIT_WIDE_SHARE = {SM90_TILE: 0.6}
# ... and a split tile's partial 1.5 us dearer than the calibration's b: fixed-split's own runs fit
# its partials dearer than the other variants' (LOG.md v28)
_SM90_SPLIT_EXTRA_US = {SM90_TILE: 1.5}
# auto's two-tile hybrid on 128x128x64 below two waves only: from two waves on persistent DP in
# grouped order beat it (LOG.md v28) ...
_SM90_HYBRID_MAX_WAVES = {SM90_TILE: 2.0}
# ... and there only where the calibrated model says it beats DP, MAC iterations priced by the CTAs
# busy beyond 40% of the SMs (LOG.md v29)
_SM90_HYBRID_BUSY_SHARE = {SM90_TILE: 0.4}
# 128x256x64's hybrid only where DP's partial wave fills at most 60% of the SMs: past that the
# hybrid's extra work costs more than the idle SMs it fills (LOG.md v37)
_SM90_HYBRID_MAX_FILL = {SM90_WIDE_TILE: 0.6}

# auto's constants on sm_90a, in MAC iterations (each the best of a grid of values against DP on
# corpus samples). Owner-waits b = 16, d = 8 on the sm80 FP16/BF16 tiles (LOG.md v10b, v13); b = 48 on
# the one-CTA-per-SM 128x256 tile (v15); separate-reduce b = 24, d = 0.5 (v11); FP64 its own pair (v11).
_SM90_OWNER = Costs(a=32.0, b=16.0, c=1.0, d=8.0)
_SM90_WIDE = Costs(a=32.0, b=48.0, c=1.0, d=8.0)
# The paper's 128x128x32 tile: d = 4 (LOG.md v22).
_SM90_PAPER_OWNER = Costs(a=32.0, b=16.0, c=1.0, d=4.0)
# The TMA + wgmma tiles: b = 64 on 128x128x64, 48 on 128x256x64 (LOG.md v21). The tiles not measured
# on their own take a neighbour's: 128x64x64 and 64x128x64 the square tile's, 128x192x64, 64x256x64 and
# 64x192x64 the wide one's (auto takes 64x192x64 only by a rule, decide/launches.one_wave_m64_192).
_SM90_TMA_OWNER = {SM90_TILE: Costs(a=32.0, b=64.0, c=1.0, d=8.0), SM90_WIDE_TILE: _SM90_WIDE,
                   SM90_NARROW_TILE: Costs(a=32.0, b=64.0, c=1.0, d=8.0), SM90_192_TILE: _SM90_WIDE,
                   SM90_M64_TILE: Costs(a=32.0, b=64.0, c=1.0, d=8.0), SM90_M64_WIDE_TILE: _SM90_WIDE,
                   SM90_M64_192_TILE: _SM90_WIDE}
# Below a tile per SM the sm90 tiles split tiles at aligned k offsets under their calibrated constants
# (TargetTile.aligned_splits; grids of even shares lost to DP there, LOG.md v24).
# auto's DP on persistent CTAs (streamk.sched.auto): on 128x128x64 up to 16 iterations per tile
# (k <= 1024), the largest threshold with no shape slower (LOG.md v23; 128x256x64 gained too little).
_SM90_PERSISTENT_UPTO = {SM90_TILE: 16}
# auto's few deep tiles under separate-reduce (streamk.sched.auto few_tiles_reduce): measured on
# 128x128x64 only (LOG.md v26).
_SM90_FEW_TILES_REDUCE = (SM90_TILE,)
# decode-like GEMMs on the sm80 rectangles (two CTAs per SM): DP's few tall tiles leave most SMs idle
# while each CTA streams its operand alone, so Stream-K runs over every slot (LOG.md v29).
_SM90_DECODE_REDUCE = (TileShape(128, 64, 32), TileShape(64, 128, 32))
_SM90_REDUCE = Costs(a=32.0, b=24.0, c=1.0, d=0.5)
_SM90_F64_OWNER = Costs(a=32.0, b=16.0, c=1.0, d=8.0)
_SM90_F64_REDUCE = Costs(a=32.0, b=16.0, c=1.0, d=1.0)


def _half_tiles(residency: dict[tuple[int, int, int], int], measured: bool) -> tuple[TargetTile, ...]:
    out = []
    for dtype in HALF_DTYPES:
        for (bm, bn, bk), ctas in residency.items():
            tile = TileShape(bm, bn, bk)
            sm80 = measured and tile not in SM90_TILES
            if not measured:
                owner = None
            elif sm80:
                owner = {WIDE_TILE: _SM90_WIDE, PAPER_HALF_TILE: _SM90_PAPER_OWNER}.get(tile, _SM90_OWNER)
            else:
                owner = _SM90_TMA_OWNER[tile]
            out.append(TargetTile(dtype, tile, ctas, owner, _SM90_REDUCE if sm80 and tile != WIDE_TILE else None,
                                  tile_order=SM90_TILE_ORDER if tile in SM90_TILES else None,
                                  one_wave_order=SM90_ONE_WAVE_ORDER.get(tile),
                                  persistent_upto=_SM90_PERSISTENT_UPTO.get(tile) if measured else None,
                                  aligned_splits=measured and tile in SM90_TILES,
                                  split_busy_share=_SM90_SPLIT_BUSY_SHARE.get(tile) if measured else None,
                                  split_wide_share=_SM90_SPLIT_WIDE_SHARE.get(tile) if measured else None,
                                  split_extra_us=_SM90_SPLIT_EXTRA_US.get(tile, 0.0) if measured else 0.0,
                                  hybrid_max_waves=_SM90_HYBRID_MAX_WAVES.get(tile) if measured else None,
                                  hybrid_busy_share=_SM90_HYBRID_BUSY_SHARE.get(tile) if measured else None,
                                  hybrid_max_fill=_SM90_HYBRID_MAX_FILL.get(tile) if measured else None,
                                  few_tiles_reduce=measured and tile in _SM90_FEW_TILES_REDUCE,
                                  decode_reduce=measured and tile in _SM90_DECODE_REDUCE,
                                  spread_reduce=tile in (DOT_TILE, DOT_T_TILE)))
    return tuple(out)


# Resident CTAs per SM of each main kernel (16-byte copies), in the registry's tile order (the
# paper's first). sm_90a: the occupancy API (tests/test_gpu_target.py checks it on every device run);
# the TMA + wgmma tiles run one CTA per SM (their shared memory: kernels/sm90/config.cuh), 128x64x64
# two. sm_80: derived from ptxas's registers and shared memory under the A100's limits (64 K
# registers, 164 KB shared memory per SM), not measured: one 128x128 CTA per SM, as in the paper.
_SM80_RESIDENCY = {(128, 128, 32): 1, (64, 64, 32): 2, (128, 64, 32): 2, (64, 128, 32): 2, (32, 64, 32): 3,
                   (32, 32, 32): 4, (128, 256, 32): 1, (64, 8, 128): 2, (8, 128, 64): 2}
_SM90_RESIDENCY = {(128, 128, 32): 2, (64, 64, 32): 3, (128, 64, 32): 2, (64, 128, 32): 2, (32, 64, 32): 4,
                   (32, 32, 32): 4, (128, 256, 32): 1, (128, 128, 64): 1, (128, 256, 64): 1, (128, 64, 64): 2,
                   (128, 192, 64): 1, (64, 128, 64): 1, (64, 256, 64): 1, (64, 192, 64): 1, (64, 8, 128): 4,
                   (8, 128, 64): 4}

# The larger FP64 tiles (128x64x16, 128x128x16; sm80/f64_config.cuh), one CTA per SM on either arch
# (255 and 254 registers a thread on sm_90a, 141-163 KB of shared memory; the occupancy API agrees on
# an H200, tests/test_gpu_target.py; the A100's derived from ptxas), after the paper's tile: auto
# takes 128x128x16 on sm_90a from a wave of its tiles (decide/tiles.py F64_WIDE_TILE); auto's model
# constants on them are the paper's.
_F64_LARGE = tuple(TargetTile("float64", tile, 1) for tile in F64_LARGE_TILES)
_H100_TILES = (*_half_tiles(_SM90_RESIDENCY, True),
               TargetTile("float64", F64_TILE, 2, _SM90_F64_OWNER, _SM90_F64_REDUCE), *_F64_LARGE)
_A100_TILES = (*_half_tiles(_SM80_RESIDENCY, False), TargetTile("float64", F64_TILE, 2), *_F64_LARGE)



def with_calibration(target: Target, found: tuple[Calibration, ...]) -> Target:
    """``target`` with each kernel's calibration of ``found`` (matched by dtype and tile) attached."""
    by_key = {(c.dtype, c.tile): c for c in found}
    tiles = tuple(replace(t, calibration=by_key.get((t.dtype, t.tile), t.calibration)) for t in target.tiles)
    return replace(target, tiles=tiles)


# The presets; each one's calibration file (streamk/calibrate/data/<name>.json) is read at its first
# use, not at import.
_BARE = {
    "a100": Target("a100", "sm_80", 108, _A100_TILES),
    "h100": Target("h100", "sm_90a", 132, _H100_TILES, large_rungs="sm90"),
    "h200": Target("h200", "sm_90a", 132, _H100_TILES, large_rungs="sm90", model_picks=True,
                   quad_clusters=True, one_wave_m64=True, plain_partial_waves=True,
                   row_major_decode=True, linear_small_w=True, tall_transposed=True),
}


class _Presets(MutableMapping):
    """name -> Target, each calibrated (calibrate.files) when first looked up; settable (tests)."""

    def __init__(self, bare: dict[str, Target]) -> None:
        self._bare, self._ready = dict(bare), {}

    def __getitem__(self, name: str) -> Target:
        if name not in self._ready:
            from .calibrate import files as calibration_files

            self._ready[name] = with_calibration(self._bare[name], calibration_files.load(name))
        return self._ready[name]

    def __setitem__(self, name: str, target: Target) -> None:
        self._bare[name] = self._ready[name] = target

    def __delitem__(self, name: str) -> None:
        del self._bare[name]
        self._ready.pop(name, None)

    def __iter__(self) -> Iterator[str]:
        return iter(self._bare)

    def __len__(self) -> int:
        return len(self._bare)

    def bare(self) -> dict[str, Target]:
        """The presets without their calibration files read (what their arch and name need)."""
        return dict(self._bare)


PRESETS = _Presets(_BARE)


def preset(name: str) -> Target:
    """A named preset, or a GPU that $STREAMK_CALIBRATION's file of that name defines
    (``target_from_file``); ScheduleError naming the presets otherwise."""
    key = name.strip().lower()
    if key not in PRESETS:
        defined = env_target(key)  # a GPU with no preset, calibrated by $STREAMK_CALIBRATION
        if defined is not None:
            return defined
        raise ScheduleError(f"no target named {name!r} (there are: {', '.join(PRESETS)}); another GPU's "
                            f"calibration file defines it: --calibration FILE or STREAMK_CALIBRATION=FILE")
    return PRESETS[key]


def family_for(arch: str, name: str) -> str | None:
    """The preset a device is: of its arch, the one its name names ("NVIDIA H200" -> h200), else the
    arch's first; None for an arch with no preset. Calibration files are kept per family."""
    of_arch = [key for key, target in PRESETS.bare().items() if target.arch == arch]
    named = [key for key in of_arch if key in name.lower()]
    return (named or of_arch or [None])[0]


def for_arch(arch: str, sms: int, name: str) -> Target | None:
    """The preset of ``arch`` (``family_for``) with ``sms`` SMs and the device's ``name``; None for
    an arch with no preset."""
    family = family_for(arch, name)
    return PRESETS[family].with_sms(sms, name) if family else None


def target_from_file(path: Path) -> Target:
    """The Target a calibration file is for: its family's preset with the file's kernels as its
    calibration (kernels the file lacks: none, the appendix model's constants), or, for a family
    no preset is named, a new Target of the file's facts: its SMs, its kernels' residency and
    calibration, on the kernels (and auto's constants) of its arch's preset (sm_90: h100's; any
    other arch: a100's sm_80 kernels)."""
    from .calibrate import files

    obj = files.read(path)
    family, arch = obj["family"], obj["arch"]
    cals = files.read_kernels(path)
    bare = PRESETS.bare()
    if family in bare:
        return with_calibration(bare[family], cals)
    sms = {c.sms for c in cals}
    if not cals or len(sms) != 1 or 0 in sms:
        raise files.refusal(path, "kernels[].sms", f"the SM count of GPU {family!r} (no preset is named so), "
                                                   f"one integer >= 1 on every kernel", sorted(sms) or None)
    base = bare[family_for(arch, family) or "a100"]
    residency = {(c.dtype, c.tile): c.ctas_per_sm for c in cals}
    tiles = tuple(replace(t, ctas_per_sm=residency.get((t.dtype, t.tile), t.ctas_per_sm), calibration=None)
                  for t in base.tiles)
    missing = [f"{c.dtype} {c.tile}" for c in cals if (c.dtype, c.tile) not in {(t.dtype, t.tile) for t in tiles}]
    if missing:
        offered = ", ".join(sorted({str(t.tile) for t in tiles}))
        raise files.refusal(path, "kernels[].tile", f"a kernel streamk runs on {arch} ({offered})", missing[0])
    return with_calibration(replace(base, name=family, arch=arch, sms=sms.pop(), tiles=tiles), cals)


def env_target(family: str) -> Target | None:
    """The Target $STREAMK_CALIBRATION's file of ``family`` defines, where no preset is named so."""
    from .calibrate import files

    extra = files.env_source()
    path = files.file_of(extra, family) if extra else None
    return target_from_file(path) if path is not None else None
