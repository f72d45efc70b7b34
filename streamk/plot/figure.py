"""Writing a finished matplotlib figure: whole or not at all, and with nothing cut off."""

from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

from ..atomic import replacing  # noqa: E402

PAD_IN = 0.08  # inches of margin kept around the drawn content


def save(fig: plt.Figure, path: str | Path, dpi: int, *, tight: bool = True) -> Path:
    """Write ``fig`` to ``path`` (its suffix picks the format) and close it; the file appears only
    once complete (Ctrl-C leaves none). ``tight``: the bounding box is the content's, so a long
    title or legend grows the image rather than being cut off (a figure laid out to the inch, as
    the Gantt charts are, passes False)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    try:
        with replacing(path) as tmp:
            fig.savefig(tmp, dpi=dpi, **({"bbox_inches": "tight", "pad_inches": PAD_IN} if tight else {}))
    finally:
        plt.close(fig)
    return path
