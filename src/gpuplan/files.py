"""Writing the user's output files: refuse a bad --out before any work, then write atomically."""
from __future__ import annotations

import os
import tempfile
from pathlib import Path

from gpuplan.errors import UsageError


def check_out_path(out: str | os.PathLike) -> Path:
    """The --out path, refused in one line when it names a directory or its folder is missing."""
    path = Path(out)
    if path.is_dir():
        raise UsageError(f"--out {path}: is a directory; give a file name")
    parent = path.parent if str(path.parent) else Path(".")
    if not parent.is_dir():
        raise UsageError(f"--out {path}: directory {parent} does not exist")
    return path


def _umask() -> int:
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def write_atomic(out: str | os.PathLike, text: str) -> Path:
    """Write via a temp file in the same directory, fsync, then rename over the target: a reader
    sees the old file or the new one, never half of it, and a failure leaves no file behind."""
    path = check_out_path(out)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="") as f:
            f.write(text)
            f.flush()
            os.fsync(f.fileno())
        os.chmod(tmp, 0o666 & ~_umask())
        os.replace(tmp, path)
    except BaseException as e:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        if isinstance(e, OSError):
            raise UsageError(f"--out {path}: cannot write ({e.strerror or type(e).__name__})") from None
        raise
    return path
