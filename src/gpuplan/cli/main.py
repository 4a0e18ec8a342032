"""Console entry point: runs the app and turns user-facing errors into one line."""
from __future__ import annotations

import sys


def main(argv: list[str] | None = None) -> int:
    import typer

    from gpuplan.cli.app import app
    from gpuplan.errors import GpuplanError

    click_exceptions = _click_exceptions()

    try:
        # Without standalone mode click returns a command's typer.Exit code instead of raising it.
        code = app(args=argv, standalone_mode=False)
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
        return 0
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130
    return code if isinstance(code, int) else 0


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
