"""Selection quality, as a user judges it: per shape, how close the schedule a selector picks runs
to the measured best of every candidate timed (a fidelity run's rows; no GPU needed here).

Two selectors: the calibrated simulator's pick (the candidate of least ``predicted_us``) and auto
(the run's ``auto`` row, as run). For each, the share of shapes whose pick runs within 5% of the
best, the worst ratio and the geomean, per tile family (the kernel a fidelity run pins every
candidate to) and over all rows (a shape's best over every tile's candidates).
"""

from __future__ import annotations

import hashlib
import math
from collections import defaultdict
from typing import Any, Sequence

import numpy as np

WITHIN = 1.05  # "within 5% of the measured best"
SELECTORS = ("predicted_best", "auto")


def shape_half(m: int, n: int, k: int) -> int:
    """A shape's half of a corpus for held-out checks: sha1("MxNxK")'s first byte even (0: where a
    rule or term is derived) or odd (1: held out); LOG.md v47, v49."""
    return hashlib.sha1(f"{m}x{n}x{k}".encode()).digest()[0] % 2


def _measured(row: dict[str, Any]) -> float:
    try:
        us = float(row.get("measured_us") or "nan")
    except ValueError:
        return math.nan
    return us if not row.get("error") and us > 0 else math.nan


def _is_auto(row: dict[str, Any]) -> bool:
    return str(row["variant"]).partition("#")[0].partition(":")[0].partition("+")[0] == "auto"


def _score(ratios: list[float]) -> dict[str, Any]:
    r = np.array(ratios)
    return {"shapes": len(r), "within_5pct": float(np.mean(r <= WITHIN)) if len(r) else math.nan,
            "worst": float(r.max()) if len(r) else math.nan,
            "cost_geomean": float(np.exp(np.mean(np.log(r)))) if len(r) else math.nan}


def _select(groups: dict[tuple, list[dict[str, Any]]]) -> dict[str, Any]:
    ratios: dict[str, list[float]] = {name: [] for name in SELECTORS}
    for cands in groups.values():
        timed = [(r, _measured(r)) for r in cands if math.isfinite(_measured(r))]
        if not timed:
            continue
        best = min(us for _, us in timed)
        predicted = [(float(r["predicted_us"]), us) for r, us in timed
                     if math.isfinite(float(r.get("predicted_us") or "nan"))]
        if predicted:
            ratios["predicted_best"].append(min(predicted)[1] / best)
        auto = [us for r, us in timed if _is_auto(r)]
        if auto:
            ratios["auto"].append(auto[0] / best)
    return {"shapes": len(groups), **{name: _score(ratios[name]) for name in SELECTORS}}


def selection(rows: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """Selection quality of ``rows`` (fidelity rows with ``predicted_us``): ``per_tile`` {tile: ...}
    and ``overall``, each {shapes, predicted_best: {shapes, within_5pct, worst, cost_geomean}, auto: ...}."""
    per_tile: dict[str, dict[tuple, list]] = defaultdict(lambda: defaultdict(list))
    overall: dict[tuple, list] = defaultdict(list)
    for r in rows:
        shape = (int(r["m"]), int(r["n"]), int(r["k"]))
        tile = r.get("tile") or str(r["variant"]).partition("#")[2].partition("+")[0] or "?"
        per_tile[tile][shape].append(r)
        overall[shape].append(r)
    return {"within": WITHIN, "per_tile": {tile: _select(groups) for tile, groups in sorted(per_tile.items())},
            "overall": _select(overall)}


def report(sel: dict[str, Any]) -> str:
    """The selection numbers as a short table."""
    lines = [f"selection: each shape's pick against the measured best of its candidates "
             f"(within {100 * (sel['within'] - 1):.0f}%, worst, geomean)",
             f"{'tile':<12} {'selector':<15} {'shapes':>6} {'within':>7} {'worst':>6} {'geomean':>7}"]
    for tile, s in [*sel["per_tile"].items(), ("all", sel["overall"])]:
        for name in SELECTORS:
            x = s[name]
            if not x["shapes"]:
                continue
            lines.append(f"{tile:<12} {name.replace('_', ' '):<15} {x['shapes']:>6} {100 * x['within_5pct']:>6.1f}% "
                         f"{x['worst']:>6.3f} {x['cost_geomean']:>7.3f}")
    return "\n".join(lines)
