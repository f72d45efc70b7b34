"""Benchmark variants: the text of `streamk bench --decomps` to prepare() arguments, and when two
prepared launches are the same computation (no torch or GPU needed, so both are unit-tested)."""

from __future__ import annotations

from typing import Any, Callable

from ..costs import Costs
from ..errors import ScheduleError
from ..schedule import FIXUP_POLICIES
from ..sched import names
from ..shapes import GemmShape, Machine
from ..target import Target
from ..gpu.request import Tuning

NARROW_SUFFIXES = {"": "auto", "pack": "never", "narrow": "always"}
PDL_SUFFIXES = {"pdl": True, "nopdl": False}
WALK_SUFFIXES = {"back": "backward"}
RUNGS_SUFFIXES = {"sm80": "sm80", "sm90": "sm90"}  # +sm80 / +sm90: auto's tile with that family's large rungs
NO_MULTICAST = "nomc"  # +nomc: sm90 launches without clusters (plan.Tuning.multicast)
CLUSTERS_2D = "mc2d"  # +mc2d: whole-tile schedules in 2x2 clusters sharing A and B (Tuning.cluster_2d)


def variant(text: str, sms: Callable[[], int]) -> dict[str, Any]:
    """prepare() arguments (experiment switches as ``_tuning``) for NAME[%GRID][@CTAS_PER_SM][:A,B,C,D[&A,B,C,D]][/TILE_ORDER][!FIXUP]
    [#TILE][+pack|+narrow][+pdl|+nopdl][+back][+sm80|+sm90][+nomc|+mc2d]: the scheduler's grid, a machine of ``sms()`` SMs and
    that many CTAs per SM, auto's model constants and after & its separate-reduce ones, a
    rasterization such as grouped-8, the fixup policy, the tile (an edge such as 128 or 64, or
    BMxBN; auto picks one by default); +pack packs every operand that is not 16-byte aligned (as
    v1-v8 did), +narrow reads every one it can in place (narrow="always"); +pdl / +nopdl launch the
    kernels (the main kernel too where it is the first) with or without programmatic dependent launch; +back walks each CTA's
    units backwards (walk="backward"); +sm80 / +sm90 run the tile auto picks on the device's Target
    with its large-GEMM rungs on that family's tiles (``_large_rungs``: the bench resolves it per
    shape with ``tile_for``), what the Target switched to that ``large_rungs`` would run; +nomc
    launches the sm90 kernels without the clusters that share B (gpu/clusters.py); +mc2d runs
    whole-tile schedules on the sm90 tiles that multicast in 2x2 clusters that share A and B
    (decide.launches.cluster_shape; its tiles renumbered in 2x2 blocks)."""
    decomp, *flags = text.split("+")
    multicast = NO_MULTICAST not in flags
    cluster_2d = CLUSTERS_2D in flags
    if not multicast and cluster_2d:
        raise ScheduleError(f"variant {text!r}: +nomc turns the clusters off that +mc2d asks for; drop one")
    flags = [f for f in flags if f not in (NO_MULTICAST, CLUSTERS_2D)]
    pdl = [f for f in flags if f in PDL_SUFFIXES]
    walk = [f for f in flags if f in WALK_SUFFIXES]
    rungs = [f for f in flags if f in RUNGS_SUFFIXES]
    flag = "".join(f for f in flags if f not in PDL_SUFFIXES and f not in WALK_SUFFIXES and f not in RUNGS_SUFFIXES)
    if flag not in NARROW_SUFFIXES or len(pdl) > 1 or len(walk) > 1 or len(rungs) > 1 or \
            len(flags) - len(pdl) - len(walk) - len(rungs) > 1:
        raise ScheduleError(f"variant {text!r}: the suffixes must be one of +pack or +narrow, one of +pdl or "
                            f"+nopdl, one of +sm80 or +sm90, one of +nomc or +mc2d, and +back "
                            f"(got {'+' + '+'.join(flags)})")
    decomp, _, tile = decomp.partition("#")
    if tile and not (tile.isdigit() or all(p.isdigit() for p in tile.split("x"))):
        raise ScheduleError(f"variant {text!r}: #TILE must be a tile edge such as 64 or a tile such as 128x64 "
                            f"(got #{tile})")
    if tile and rungs:
        raise ScheduleError(f"variant {text!r}: +{rungs[0]} picks the tile; drop #{tile} or +{rungs[0]}")
    decomp, _, fixup = decomp.partition("!")
    if fixup and fixup not in FIXUP_POLICIES:
        raise ScheduleError(f"variant {text!r}: !FIXUP must be one of {', '.join(FIXUP_POLICIES)} (got {fixup!r})")
    decomp, _, order = decomp.partition("/")
    head, _, costs = decomp.partition(":")
    name, _, per_sm = head.partition("@")
    name, _, grid = name.partition("%")
    if name not in names():
        raise ScheduleError(f"variant {text!r}: unknown decomposition {name!r} (known: {', '.join(names())})")
    if not (grid or "0").isdigit() or not (per_sm or "0").isdigit():
        raise ScheduleError(f"variant {text!r}: %GRID and @CTAS_PER_SM must be whole numbers")
    narrow, pdl_on = NARROW_SUFFIXES[flag], PDL_SUFFIXES[pdl[0]] if pdl else None
    args: dict[str, Any] = {"schedule": name}
    if (narrow, pdl_on, multicast, cluster_2d) != ("auto", None, True, False):
        args["_tuning"] = Tuning(narrow, pdl_on, multicast, cluster_2d)
    if tile:
        args["tile"] = int(tile) if tile.isdigit() else tile
    if walk:
        args["walk"] = WALK_SUFFIXES[walk[0]]
    if rungs:
        args["_large_rungs"] = RUNGS_SUFFIXES[rungs[0]]
    if fixup:
        args["fixup"] = fixup
    if grid:
        args["grid"] = int(grid)
    if per_sm:
        args["machine"] = Machine(sms(), int(per_sm))
    if costs:
        costs, _, reduce = costs.partition("&")
        args["model_costs"] = Costs.parse(costs)
        if reduce:
            args["reduce_costs"] = Costs.parse(reduce)
    if order:
        args["tile_order"] = order
    return args


def tile_for(args: dict[str, Any], shape: GemmShape, dtype: str, target: Target) -> dict[str, Any]:
    """prepare() arguments of a variant for one shape: ``_large_rungs`` becomes the tile auto picks
    on ``target`` with those large-GEMM rungs (the rest of the arguments unchanged)."""
    args = dict(args)
    rungs = args.pop("_large_rungs", None)
    if rungs is not None:
        from ..gpu.decide.tiles import choose_tile

        args["tile"] = choose_tile(shape, dtype, target.with_large_rungs(rungs))
    return args


def launch_key(prepared: Any) -> tuple:
    """What makes two prepared launches the same computation: kernels, grids, the schedule's
    units and CTA ranges, the fixup plan's actions (buffers and pointers aside). The bench times
    such a pair once: two timings of identical kernels differed by up to 20% (LOG.md v11)."""
    steps = tuple((st.name, st.grid, st.grid_y, st.block, st.smem, st.pdl, st.cluster) for st in prepared.launch.steps)
    s = prepared.schedule
    return steps, s.tile_order, s.units.tobytes(), s.cta_offsets.tobytes(), prepared.plan.action.tobytes()
