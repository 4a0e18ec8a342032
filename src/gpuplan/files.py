"""Writing the user's output files: refuse a bad --out before any work, then write atomically.

The one writer of user files (exports, catalog export, reports). Its rules:

- ``-`` means stdout (so do ``/dev/stdout``, ``/dev/fd/1`` and ``/proc/self/fd/1``): the text is
  written there and nothing on disk is touched.
- A symlink is FOLLOWED: the file it points to is replaced atomically and the link itself stays a
  link (as a shell's ``>`` would write through it). A dangling link creates its target; a symlink
  loop is refused.
- Only regular files are replaced. A directory, a character or block device (``/dev/full``,
  ``/dev/null``), a FIFO or a socket is refused with one line, before any work is done.
- The text goes to a temp file in the target's own folder, is fsynced and then renamed over the
  target: a reader sees the old file or the new one, never half of it; on any failure (a full disk,
  a read-only filesystem, a kill) the old file is untouched and no temp file is left.
- An existing target keeps its permission bits; a new one gets 0666 minus the umask.
- Every problem is one line: a bad --out (missing folder, directory, device, loop, no permission)
  is a UsageError (exit 2) raised by `check_out_path` before any work; an OSError while writing
  (ENOSPC, EIO, EROFS...) is a `WriteError` (exit 1). No traceback ever reaches the user.
"""
from __future__ import annotations

import errno
import os
import re
import stat
import sys
import tempfile
from pathlib import Path

from gpuplan.errors import GpuplanError, UsageError

STDOUT = "-"
_STDOUT_ALIASES = ("/dev/stdout", "/dev/fd/1", "/proc/self/fd/1")
_KINDS = ((stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device"), (stat.S_ISFIFO, "a FIFO (named pipe)"),
          (stat.S_ISSOCK, "a socket"), (stat.S_ISDIR, "a directory"))


class WriteError(GpuplanError):
    """Writing a checked --out target failed (disk full, I/O error, read-only filesystem): exit 1."""


def is_stdout(out: str | os.PathLike) -> bool:
    """'-' (or /dev/stdout and its aliases): print instead of writing a file."""
    s = os.fspath(out)
    return s == STDOUT or s in _STDOUT_ALIASES


def _is_fd_path(text: str) -> bool:
    """/dev/stderr, /dev/fd/N, /proc/self/fd/N...: following them would replace whatever file the
    shell redirected that descriptor to, so only the stdout aliases (handled as '-') are allowed."""
    p = os.path.abspath(text)
    return (p in ("/dev/stdin", "/dev/stderr") or p.startswith(("/dev/fd/", "/proc/self/fd/", "/proc/thread-self/fd/"))
            or re.match(r"^/proc/\d+/fd/", p) is not None)


def _why(e: OSError) -> str:
    return e.strerror or errno.errorcode.get(e.errno or 0, "") or type(e).__name__


def _kind(mode: int) -> str | None:
    for test, name in _KINDS:
        if test(mode):
            return name
    return None


def shown_name(text: str, limit: int = 40) -> str:
    """A column name from a user's file, fit to quote in an error: as written when it looks like a name, else
    only its length (a file that is not a table, /etc/passwd say, is not echoed)."""
    t = str(text)
    if len(t) <= limit and re.fullmatch(r"[A-Za-z0-9_ .()/%-]+", t):
        return repr(t)
    return f"(a {len(t)}-character value that is not a column name)"


def check_in_file(path: str | os.PathLike, label: str | None = None) -> None:
    """Refuse an input path that is a FIFO, device or socket (a FIFO would block the read forever, a device
    never ends): one UsageError line. Missing paths and folders are left to the caller's own message."""
    try:
        st = os.stat(path)
    except OSError:
        return
    kind = _kind(st.st_mode)
    if kind is not None and not stat.S_ISDIR(st.st_mode):  # folders keep each reader's own message
        raise UsageError(f"{label or os.fspath(path)}: is {kind}, not a file")


def _target(path: Path) -> Path:
    """The file a write to `path` lands in: `path` itself, or where its symlink chain ends."""
    if not path.is_symlink():
        return path
    try:
        return Path(os.path.realpath(path, strict=True))
    except FileNotFoundError:
        return Path(os.path.realpath(path))  # dangling: writing creates the link's target
    except OSError as e:
        if e.errno == errno.ELOOP:
            raise UsageError(f"--out {path}: symlink loop; give a file name") from None
        raise UsageError(f"--out {path}: cannot follow the symlink ({_why(e)})") from None
    except RuntimeError:  # a loop on Pythons whose realpath raises RuntimeError
        raise UsageError(f"--out {path}: symlink loop; give a file name") from None


def check_out_path(out: str | os.PathLike) -> Path:
    """The --out path, checked before any work: refused in one line (UsageError) when it names a
    directory, a device, a FIFO or a socket, a symlink loop, a missing folder, or a place this
    user may not write. '-' (stdout) is returned as is. Returns the path as given (not resolved)."""
    if is_stdout(out):
        return Path(os.fspath(out))
    text = os.fspath(out)
    if not str(text).strip():
        raise UsageError("--out is empty; give a file name or '-' for stdout")
    if "\x00" in str(text):
        raise UsageError("--out contains a NUL byte; give a file name")
    if _is_fd_path(str(text)):
        raise UsageError(f"--out {text}: is one of this process's file descriptors; use '-' to print to stdout")
    path = Path(out)
    real = _target(path)
    shown = str(path) if real == path else f"{path} (-> {real})"
    try:
        st = os.stat(real)
    except FileNotFoundError:
        st = None
    except NotADirectoryError:
        raise UsageError(f"--out {shown}: a part of the path is not a directory") from None
    except OSError as e:
        if e.errno == errno.ELOOP:
            raise UsageError(f"--out {shown}: symlink loop; give a file name") from None
        raise UsageError(f"--out {shown}: cannot use it ({_why(e)})") from None
    if st is not None and not stat.S_ISREG(st.st_mode):
        kind = _kind(st.st_mode) or "not a regular file"
        if stat.S_ISDIR(st.st_mode):
            raise UsageError(f"--out {shown}: is a directory; give a file name")
        raise UsageError(f"--out {shown}: is {kind}, not a regular file; refusing to replace it "
                         f"(use '-' to print to stdout)")
    parent = real.parent if str(real.parent) else Path(".")
    try:
        parent_ok = parent.is_dir()
    except OSError:
        parent_ok = False
    if not parent_ok:
        raise UsageError(f"--out {shown}: directory {parent} does not exist")
    if _on_readonly_fs(parent):
        raise UsageError(f"--out {shown}: {parent} is on a read-only filesystem")
    if not os.access(parent, os.W_OK | os.X_OK):
        raise UsageError(f"--out {shown}: permission denied (cannot create files in {parent})")
    if st is not None and not os.access(real, os.W_OK):
        raise UsageError(f"--out {shown}: permission denied (the file is not writable)")
    return path


def _on_readonly_fs(folder: Path) -> bool:
    try:
        return bool(os.statvfs(folder).f_flag & os.ST_RDONLY)
    except (OSError, AttributeError):
        return False


def _umask() -> int:
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def _write_stdout(text: str) -> Path:
    try:
        sys.stdout.write(text)
        sys.stdout.flush()
    except BrokenPipeError:
        raise
    except OSError as e:
        raise WriteError(f"cannot write to stdout ({_why(e)})") from None
    return Path(STDOUT)


def write_atomic(out: str | os.PathLike, text: str) -> Path:
    """Write `text` to `out` (see the module docstring): '-' prints it; a symlink is followed and the
    file it points to replaced atomically (the link stays); non-regular targets are refused. Via a temp
    file in the same directory, fsync, then rename: a reader sees the old file or the new one, never half
    of it, and a failure leaves the old file and no temp file behind. Returns the path as given."""
    path = check_out_path(out)
    if is_stdout(path):
        return _write_stdout(text)
    real = _target(path)
    try:
        old_mode = stat.S_IMODE(os.stat(real).st_mode)
    except OSError:
        old_mode = None
    try:
        fd, tmp = tempfile.mkstemp(prefix=f".{real.name}.", suffix=".tmp", dir=real.parent)
    except OSError as e:
        raise WriteError(f"--out {path}: cannot write ({_why(e)})") from None
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="") as f:
            f.write(text)
            f.flush()
            os.fsync(f.fileno())
        os.chmod(tmp, old_mode if old_mode is not None else 0o666 & ~_umask())
        os.replace(tmp, real)
    except BaseException as e:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        if isinstance(e, OSError):
            raise WriteError(f"--out {path}: cannot write ({_why(e)}); the previous file is unchanged") from None
        if isinstance(e, (UnicodeError, ValueError)):
            raise WriteError(f"--out {path}: cannot write ({type(e).__name__})") from None
        raise
    _fsync_dir(real.parent)
    return path


def _fsync_dir(folder: Path) -> None:
    """Make the rename durable; best effort (some filesystems refuse to open a directory)."""
    try:
        fd = os.open(folder, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


# ---- CSV cells a spreadsheet would run ---------------------------------------------------------
FORMULA_PREFIXES = ("=", "+", "-", "@", "\t", "\r")
_NEEDS_ESCAPE = re.compile(r"^'*[=+\-@\t\r]")


def csv_safe(value):
    """A text cell that a spreadsheet would evaluate as a formula ('=cmd|...', '+1+2', '@SUM(A1)',
    or one starting with a tab or CR) gets a leading apostrophe, the OWASP-recommended escape:
    shown as text, never run. A cell that already starts with apostrophes before such a character
    gets one more, so `csv_unescape` restores every cell exactly (export -> import round-trips).
    Numbers (negative ones included) and other text pass unchanged."""
    if isinstance(value, str) and _NEEDS_ESCAPE.match(value):
        return "'" + value
    return value


def csv_unescape(value):
    """The inverse of `csv_safe` for a cell read back from a CSV file."""
    if isinstance(value, str) and value[:1] == "'" and _NEEDS_ESCAPE.match(value[1:]):
        return value[1:]
    return value
