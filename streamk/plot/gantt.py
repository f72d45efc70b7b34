"""Wave-schedule (Gantt) charts of a simulated Timeline, like the paper's Figures 1-4.

One row per SM slot that runs a CTA (SM 0 on top; an idle slot's row would be empty, so it is
left out, and rows keep their real SM and slot labels), time along x in the cost model's unit
(one MAC iteration under the paper's models; microseconds under a calibration: ``time_label``).
A CTA's MAC segments are coloured by the output tile they compute (a qualitative colormap, so
neighbouring tiles differ) and labelled "CTA i / t j" where the bar is wide enough; the other
segment kinds (CTA overhead, partial store, wait, fixup, tile store) each get their own fill and
hatch, named in a legend of only the kinds the figure shows. Makespan and utilization are in the
panel title.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Sequence

import matplotlib

matplotlib.use("Agg")
import matplotlib.colors  # noqa: E402
import matplotlib.pyplot as plt  # noqa: E402
from matplotlib.collections import PatchCollection  # noqa: E402
from matplotlib.patches import Patch, Rectangle  # noqa: E402

from ..errors import ScheduleError  # noqa: E402
from ..sim.timeline import Segment, Timeline  # noqa: E402
from .figure import save  # noqa: E402

ROW_HEIGHT_IN = 0.42  # inches of figure height per SM-slot row (at most)
MIN_ROW_IN = 0.06  # inches per row at the least, however many SMs
MAX_PANEL_IN = 8.0  # inches a panel of many SMs shrinks its rows to fit
MAX_ROWS = 1024  # busy slots a panel draws at most: at MIN_ROW_IN that is a PNG ~6,800 px tall
LABEL_MIN_ROW_PX = 11  # pixels a bar needs in height for a label (and per y tick label)
TITLE_IN = 0.35  # inches above the top panel for its title
SUPTITLE_IN = 0.3  # inches more for a figure title
GAP_IN = 0.45  # inches between stacked panels (the lower panel's title)
XAXIS_IN = 0.55  # inches below the last panel for tick labels and the axis label
LEGEND_IN = 0.45  # inches at the bottom for the legend (two rows)
FIG_WIDTH_IN = 11.0  # inches: wide enough for "CTA 12" labels on the paper's examples
DPI = 110  # dots per inch of the PNGs (docs keep them small)
BAR_HEIGHT = 0.8  # fraction of a row a segment bar fills
LABEL_CHAR_PX = 6.5  # approximate width of one label character at font size 8, in pixels
# 60 distinct tile colours: tab20's strong then light halves (neighbouring tiles differ), then
# tab20b's and tab20c's; beyond 60 tiles colours repeat and the bar labels carry the tile.
TILE_COLORS = tuple(c for name in ("tab20", "tab20b", "tab20c")
                    for c in plt.get_cmap(name).colors[::2] + plt.get_cmap(name).colors[1::2])

# Non-MAC segment kinds: face colour, hatch, legend label. "mac" is coloured by tile instead.
KIND_STYLE: dict[str, tuple[str, str, str]] = {
    "overhead": ("#d9d9d9", "", "CTA overhead (a)"),
    "store_partial": ("#ffffff", "////", "store partial to workspace (b)"),
    "wait": ("#f4cccc", "xx", "wait on peers"),
    "fixup": ("#ffd966", "...", "fixup: add peer partials (d)"),
    "store_tile": ("#7f7f7f", "", "store output tile"),
}


STUCK_COLOR = "#f8d7d7"  # the bar of a CTA stuck in a deadlock
STUCK_ROOM = 1.25  # under a deadlock the time axis runs this far past the last segment


def tile_color(tile: int) -> tuple[float, float, float]:
    return TILE_COLORS[tile % len(TILE_COLORS)]


def count(n: int, word: str) -> str:
    """"1 SM", "4 SMs"."""
    return f"{n} {word}" + ("" if n == 1 else "s")


def _dark(color) -> bool:
    """Whether black text on ``color`` would be hard to read (relative luminance below 0.25)."""
    r, g, b = matplotlib.colors.to_rgb(color)
    return 0.2126 * r + 0.7152 * g + 0.0722 * b < 0.25


def timeline_title(timeline: Timeline) -> str:
    """"stream-k 384x384x128, tile 128x128x4, 4 SMs, g=4: makespan 72, utilization 1.00"."""
    s = timeline.schedule
    machine = s.machine
    where = count(machine.sms, "SM") + (f" x {count(machine.ctas_per_sm, 'CTA slot')}"
                                         if machine.ctas_per_sm > 1 else "")
    head = f"{s.decomposition} {s.shape}, tile {s.tile}, {where}, g={s.grid}"
    if timeline.deadlock:
        reason = (timeline.deadlock_reason or "").split(":")[0]  # the first clause names the wait
        return f"{head}: DEADLOCK, {reason}"
    return f"{head}: makespan {timeline.makespan:g}, utilization {timeline.utilization:.2f}"


def time_extent(timeline: Timeline) -> float:
    """The makespan; under a deadlock, room past the last segment for the stuck CTAs' bars."""
    if math.isfinite(timeline.makespan) and timeline.makespan > 0:
        return float(timeline.makespan)
    return max([float(seg.end) for seg in timeline.segments] + [1.0]) * STUCK_ROOM


def _label(seg: Segment, px_width: float, two_lines: bool) -> str | None:
    full = [f"CTA {seg.cta}", f"t{seg.tile}"]
    if two_lines and max(len(t) for t in full) * LABEL_CHAR_PX < px_width:
        return "\n".join(full)
    for text in (" ".join(full), f"CTA {seg.cta}", str(seg.cta)):
        if len(text) * LABEL_CHAR_PX < px_width:
            return text
    return None


def busy_slots(timeline: Timeline) -> list[int]:
    """The global slot ids that run a CTA or reduce task, in order: the rows of its chart."""
    dispatched = {int(slot) for slot in timeline.cta_slot if slot >= 0}
    return sorted(dispatched | {seg.slot for seg in timeline.segments})


def slot_name(slot: int, slots_per_sm: int) -> str:
    """"SM 3", or with several slots per SM "SM 3.1" (SM 3's second slot)."""
    return f"SM {slot}" if slots_per_sm == 1 else f"SM {slot // slots_per_sm}.{slot % slots_per_sm}"


def row_height_in(rows: int, max_panel_in: float = MAX_PANEL_IN) -> float:
    """Inches per SM-slot row: ROW_HEIGHT_IN for a few SMs, shrinking so that a panel of many
    SMs (an A100's 108) stays under ``max_panel_in``: MIN_ROW_IN at the least, unless a cap below
    MAX_PANEL_IN asks for thinner rows."""
    floor = MIN_ROW_IN if max_panel_in >= MAX_PANEL_IN else min(MIN_ROW_IN, max_panel_in / rows)
    return min(ROW_HEIGHT_IN, max(floor, max_panel_in / rows))


def draw_timeline(ax: plt.Axes, timeline: Timeline, *, xmax: float | None = None, title: str | None = None) -> bool:
    """Draw one Timeline on ``ax``: rows are the busy SM slots, bars are segments. Returns whether
    any bar's label names its tile (bars too narrow for one carry none)."""
    slots_per_sm = timeline.schedule.machine.ctas_per_sm
    busy = busy_slots(timeline)
    row_of = {slot: row for row, slot in enumerate(busy)}
    rows = max(len(busy), 1)
    xmax = xmax or time_extent(timeline)
    box = ax.get_position()
    px_per_unit = ax.figure.get_figwidth() * ax.figure.dpi * box.width / xmax
    row_px = ax.figure.get_figheight() * ax.figure.dpi * box.height / rows
    edge = 0.6 if row_px >= LABEL_MIN_ROW_PX else 0.2
    groups: dict[tuple, list[Rectangle]] = {}  # one collection per look: thousands of bars stay fast
    named_tiles = False
    for seg in timeline.segments:
        width = float(seg.end - seg.start)
        if width <= 0:
            continue
        row = row_of[seg.slot]
        if seg.kind == "mac":
            face, hatch = tile_color(seg.tile), ""
        else:
            face, hatch, _ = KIND_STYLE.get(seg.kind, ("#cccccc", "..", seg.kind))
        groups.setdefault((face, hatch), []).append(
            Rectangle((float(seg.start), row - BAR_HEIGHT / 2), width, BAR_HEIGHT))
        text = _label(seg, width * px_per_unit, two_lines=row_px * BAR_HEIGHT >= 2 * LABEL_MIN_ROW_PX) \
            if seg.kind == "mac" and row_px * BAR_HEIGHT >= LABEL_MIN_ROW_PX else None
        if text:
            ax.text(float(seg.start) + width / 2, row, text, ha="center", va="center", fontsize=8,
                    color="white" if _dark(face) else "black")
            named_tiles |= text.endswith(f"t{seg.tile}")  # the longer labels end with the tile
    for (face, hatch), rects in groups.items():
        ax.add_collection(PatchCollection(rects, facecolor=face, hatch=hatch or None, edgecolor="black",
                                          linewidth=edge))
    if timeline.deadlock:
        _draw_stuck(ax, timeline, xmax, px_per_unit, row_of)
    ax.set_ylim(rows - 0.5, -0.5)  # SM 0 on top
    ticks = range(0, len(busy), max(1, math.ceil(LABEL_MIN_ROW_PX / row_px)))
    ax.set_yticks(list(ticks))
    ax.set_yticklabels([slot_name(busy[r], slots_per_sm) for r in ticks])
    ax.set_xlim(0, xmax * 1.01)
    ax.grid(axis="x", linestyle=":", linewidth=0.6, alpha=0.7)
    ax.set_axisbelow(True)
    ax.set_title(title or timeline_title(timeline), fontsize=10, loc="left",
                 color="firebrick" if timeline.deadlock else "black")
    return named_tiles


def _draw_stuck(ax: plt.Axes, timeline: Timeline, xmax: float, px_per_unit: float, row_of: dict[int, int]) -> None:
    """Under a deadlock, a red bar from where each resident, unfinished CTA stopped to the edge."""
    last_end: dict[int, float] = {}
    for seg in timeline.segments:
        last_end[seg.cta] = max(last_end.get(seg.cta, 0.0), float(seg.end))
    for cta in range(len(timeline.cta_end)):
        if timeline.cta_slot[cta] < 0 or math.isfinite(timeline.cta_end[cta]):
            continue
        start = last_end.get(cta, float(timeline.cta_start[cta]))
        row = row_of[int(timeline.cta_slot[cta])]
        ax.barh(row, max(xmax * 1.01 - start, 0), left=start, height=BAR_HEIGHT,
                color=STUCK_COLOR, hatch="xx", edgecolor="firebrick", linewidth=0.6)
        text = f"CTA {cta} waits forever"
        if len(text) * LABEL_CHAR_PX < (xmax * 1.01 - start) * px_per_unit:
            ax.text(start + (xmax * 1.01 - start) / 2, row, text,
                    ha="center", va="center", fontsize=8, color="firebrick",
                    bbox={"facecolor": "white", "edgecolor": "none", "pad": 1})


def _legend(fig: plt.Figure, timelines: Sequence[Timeline], named_tiles: bool) -> None:
    """The kinds of segment the figure shows, and nothing else; ``named_tiles``: some bar's label
    names its tile."""
    kinds = {seg.kind for t in timelines for seg in t.segments if seg.end > seg.start}
    tiles = max(t.schedule.problem.tiles for t in timelines)
    repeat = f"; colours repeat every {len(TILE_COLORS)} tiles" + (", labels name the tile" if named_tiles else "")
    mac = "MAC iterations (colour = tile" + (repeat if tiles > len(TILE_COLORS) else "") + ")"
    handles = [Patch(facecolor=tile_color(0), edgecolor="black", label=mac)] if "mac" in kinds else []
    for kind, (face, hatch, label) in KIND_STYLE.items():
        if kind in kinds:
            handles.append(Patch(facecolor=face, hatch=hatch, edgecolor="black", label=label))
    if any(t.deadlock for t in timelines):
        handles.append(Patch(facecolor=STUCK_COLOR, hatch="xx", edgecolor="firebrick", label="waits forever (deadlock)"))
    fig.legend(handles=handles, loc="lower center", ncol=min(len(handles), 3), fontsize=8, frameon=False,
               bbox_to_anchor=(0.5, 0.0))


def plot_schedules(timelines: Sequence[Timeline], path: str | Path, titles: Sequence[str | None] | None = None,
                   suptitle: str | None = None, *, dpi: int = DPI, time_label: str = "time (MAC iterations)",
                   max_panel_in: float = MAX_PANEL_IN) -> Path:
    """Several timelines stacked with a shared time axis (the paper's Figure 4); returns the path.
    ``time_label`` names the unit of the cost model's time (microseconds under a calibration);
    ``max_panel_in`` caps each panel's height in inches (rows shrink to fit)."""
    if not timelines:
        raise ValueError("plot_schedules needs at least one timeline (got none)")
    titles = list(titles) if titles is not None else [None] * len(timelines)
    if len(titles) != len(timelines):
        raise ValueError(f"need one title per timeline (got {len(titles)} for {len(timelines)})")
    heights = [len(busy_slots(t)) or 1 for t in timelines]
    if max(heights) > MAX_ROWS:
        raise ScheduleError(f"the schedule runs CTAs on {max(heights):,} SM slots, more rows than a chart can "
                            f"show ({MAX_ROWS:,}); plot a smaller grid or machine")
    axes_in = [h * row_height_in(h, max_panel_in) for h in heights]
    top_in = TITLE_IN + (SUPTITLE_IN if suptitle else 0.0)
    bottom_in = XAXIS_IN + LEGEND_IN
    fig_h = sum(axes_in) + GAP_IN * (len(heights) - 1) + top_in + bottom_in
    fig, axes = plt.subplots(len(timelines), 1, sharex=True, figsize=(FIG_WIDTH_IN, fig_h),
                             gridspec_kw={"height_ratios": axes_in}, squeeze=False)
    xmax = max(time_extent(t) for t in timelines)
    fig.subplots_adjust(left=0.08, right=0.98, bottom=bottom_in / fig_h, top=1 - top_in / fig_h,
                        hspace=GAP_IN / (sum(axes_in) / len(axes_in)))
    named_tiles = False
    for ax, timeline, title in zip(axes[:, 0], timelines, titles):
        named_tiles |= draw_timeline(ax, timeline, xmax=xmax, title=title)
    axes[-1, 0].set_xlabel(time_label)
    if suptitle:
        fig.suptitle(suptitle, fontsize=11, y=1 - 0.08 / fig_h, va="top")
    _legend(fig, timelines, named_tiles)
    return save(fig, path, dpi, tight=False)


def plot_schedule(timeline: Timeline, path: str | Path, title: str | None = None, *, dpi: int = DPI) -> Path:
    """The wave schedule of one simulated Timeline, written as a PNG; returns the path."""
    return plot_schedules([timeline], path, [title], dpi=dpi)
