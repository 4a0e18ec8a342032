"""Console entry point: runs the app and turns user-facing errors into one line.

Exit codes (also in `gpuplan --help`): 0 ok; 1 nothing fits or the command failed; 2 usage
error. A reader that stops early (`gpuplan offers | head -1`) is not an error: exit 0, no
traceback.
"""
from __future__ import annotations

import os
import sys

# gpuplan makes no BLAS calls worth a thread pool: without these, OpenBLAS starts (and spins) a
# thread per core at `import numpy`, 60-100 ms of CPU per command. Set before numpy is imported,
# and only where the user has not chosen a value.
BLAS_THREAD_VARS = ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS", "BLIS_NUM_THREADS",
                    "VECLIB_MAXIMUM_THREADS", "NUMEXPR_NUM_THREADS")
for _var in BLAS_THREAD_VARS:
    os.environ.setdefault(_var, "1")


def main(argv: list[str] | None = None) -> int:
    import typer

    from gpuplan.cli.app import app
    from gpuplan.errors import GpuplanError

    click_exceptions = _click_exceptions()

    try:
        # Without standalone mode click returns a command's typer.Exit code instead of raising it.
        # prog_name fixed: completion scripts and usage lines say `gpuplan` however it was started.
        code = app(args=argv, prog_name="gpuplan", standalone_mode=False)
    except GpuplanError as e:
        print(f"error: {e}", file=sys.stderr)
        return e.exit_code
    except typer.Abort:
        print("aborted", file=sys.stderr)
        return 1
    except click_exceptions.ClickException as e:
        msg = " ".join(e.format_message().split())
        param = getattr(e, "param", None)
        if param is not None and getattr(param, "opts", None) and param.opts[0] not in msg:
            msg = f"{param.opts[0]}: {msg}"
        if msg:  # an empty message is click's 'no arguments, help shown'
            print(f"error: {msg}", file=sys.stderr)
        return 2
    except typer.Exit as e:
        return e.exit_code
    except BrokenPipeError:
        return _quiet_broken_pipe()
    except SystemExit as e:
        # click answers EPIPE with sys.exit(1) from inside its `except OSError`; the pipe's reader
        # stopped reading, which is not a failure.
        if _is_broken_pipe(e.__context__):
            return _quiet_broken_pipe()
        if e.code is None or isinstance(e.code, int):  # e.g. --show-completion exits through sys.exit
            return e.code or 0
        print(e.code, file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130
    return code if isinstance(code, int) else 0


def _is_broken_pipe(exc: BaseException | None) -> bool:
    return isinstance(exc, BrokenPipeError) or (isinstance(exc, OSError) and exc.errno == 32)


def _quiet_broken_pipe() -> int:
    """Point stdout at /dev/null so the interpreter's final flush cannot raise again; exit 0."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError, AttributeError):  # stdout without a file descriptor (in-process runs)
        pass
    return 0


def _click_exceptions():
    """Typer vendors its own copy of click; its exceptions are the ones raised."""
    try:
        from typer._click import exceptions
    except ImportError:  # older Typer releases use click itself
        from click import exceptions
    return exceptions


def run() -> None:  # pragma: no cover - console script shim
    sys.exit(main())


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
