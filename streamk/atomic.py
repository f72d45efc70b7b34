"""Files written whole or not at all: the bytes go to a temporary file beside the target, which
replaces it only once complete, so Ctrl-C or a full disk never leaves a partial file behind."""

from __future__ import annotations

import contextlib
import os
import tempfile
from pathlib import Path
from typing import Iterator


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


@contextlib.contextmanager
def replacing(path: str | Path) -> Iterator[Path]:
    """Yield a temporary path in ``path``'s folder, with its suffix (so matplotlib picks the same
    format); on success it replaces ``path``, on any exception (KeyboardInterrupt too) it is removed."""
    path = Path(path)
    fd, name = tempfile.mkstemp(prefix=f".{path.stem}.", suffix=f".part{path.suffix}",
                                dir=path.parent)
    os.close(fd)
    tmp = Path(name)
    try:
        yield tmp
        os.chmod(tmp, 0o666 & ~_umask())  # mkstemp's 0600 would make the result private
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            tmp.unlink()
        raise
