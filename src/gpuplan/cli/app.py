"""The Typer application and its command groups.

Command modules (`cmd_*.py`) attach commands to these apps; they import estimation code
inside the command body so `gpuplan --help` and light commands start fast.

The root adds what people expect of a CLI (`gh`, `sky`, Datasette): `--version`, shell
completion (`--install-completion` / `--show-completion`), a quick start when run bare, and the
exit codes in the `--help` epilog. A command module may register the root callback (the global
`--profile` lives in cmd_calibrate.py); `_install_root_callback` wraps it with these.
"""
from __future__ import annotations

import inspect
import typing
from typing import Annotated

import typer

EXIT_OK, EXIT_FAILURE, EXIT_USAGE = 0, 1, 2

EPILOG = (
    "Exit codes: 0 ok; 1 nothing fits or the command failed; 2 usage error (bad option or value). "
    "Shell completion: gpuplan --install-completion (bash, zsh, fish, PowerShell), "
    "or --show-completion to print the script. Start with `gpuplan` alone for a quick start."
)

QUICK_START = """\
gpuplan: plan LLM compute across GPU clouds: how much, where, how, whether, then launch.

Quick start, in workflow order:
  1. catalog   gpuplan offers --gpu H100               what can be rented, cheapest per GPU-hour
               gpuplan catalog status                  where the prices come from, and their age
  2. estimate  gpuplan estimate train --model llama-3.1-8b --tokens 1e12 --gpu H100 --gpus 64
               gpuplan estimate serve --model llama-3.1-70b --gpu H100 --tp 4
  3. plan      gpuplan plan train --model llama-3.1-8b --tokens 1e12
               gpuplan plan serve --model llama-3.1-70b --tokens-per-month 5B
  4. export    gpuplan plan train --model llama-3.1-8b --tokens 1e11 --json > plan.json
               gpuplan export skypilot --from plan.json --out train.sky.yaml
  5. web       gpuplan web                             plans, charts and exports in a browser

Every command: --help; data commands: --json (and --csv for tables).
Exit codes: 0 ok, 1 nothing fits / failure, 2 usage. Completion: gpuplan --install-completion.
All commands: gpuplan --help\
"""

app = typer.Typer(
    name="gpuplan",
    help="Plan LLM compute across GPU clouds: how much, where, how, whether, then launch.",
    epilog=EPILOG,
    no_args_is_help=False,  # bare `gpuplan` prints QUICK_START instead
    add_completion=True,
    pretty_exceptions_enable=False,
)
estimate_app = typer.Typer(help="How much compute: FLOPs, memory, time, throughput.", no_args_is_help=True)
plan_app = typer.Typer(help="Where and how: every offer ranked by total job cost, time and risk.", no_args_is_help=True)
catalog_app = typer.Typer(help="The offer catalog: store, live refresh, history, imports.", no_args_is_help=True)
export_app = typer.Typer(help="Launch a plan: SkyPilot, dstack or Kubernetes files.", no_args_is_help=True)

app.add_typer(estimate_app, name="estimate")
app.add_typer(plan_app, name="plan")
app.add_typer(catalog_app, name="catalog")
app.add_typer(export_app, name="export")


def version_text() -> str:
    from gpuplan import __version__

    return f"gpuplan {__version__}"


def _print_version(value: bool) -> None:
    if value:
        print(version_text())
        raise typer.Exit(EXIT_OK)


VersionOpt = Annotated[bool, typer.Option(
    "--version", callback=_print_version, is_eager=True, help="Print the version and exit.")]


def _register_commands() -> None:
    """Import every command module so its decorators run; missing ones are skipped."""
    import importlib
    import pkgutil

    import gpuplan.cli as pkg

    for mod in sorted(m.name for m in pkgutil.iter_modules(pkg.__path__)):
        if mod.startswith("cmd_"):
            importlib.import_module(f"gpuplan.cli.{mod}")


def _install_root_callback() -> None:
    """Root callback = `--version` + bare-run quick start + whatever callback a command module registered."""
    info = app.registered_callback
    inner = info.callback if info is not None else None
    inner_params: list[inspect.Parameter] = []
    hints: dict[str, object] = {}
    if inner is not None:
        hints = typing.get_type_hints(inner, include_extras=True)
        inner_params = [p.replace(annotation=hints.get(p.name, p.annotation))
                        for p in inspect.signature(inner).parameters.values()]
    inner_takes_ctx = any(p.name == "ctx" for p in inner_params)

    def root(ctx: typer.Context, version: bool = False, **kwargs: object) -> None:
        if ctx.invoked_subcommand is None:
            print(QUICK_START)
            raise typer.Exit(EXIT_OK)
        if inner is not None:
            inner(ctx, **kwargs) if inner_takes_ctx else inner(**kwargs)

    ctx_param = inspect.Parameter("ctx", inspect.Parameter.POSITIONAL_OR_KEYWORD, annotation=typer.Context)
    version_param = inspect.Parameter("version", inspect.Parameter.POSITIONAL_OR_KEYWORD,
                                      default=False, annotation=VersionOpt)
    rest = [p for p in inner_params if p.name != "ctx"]
    root.__signature__ = inspect.Signature([ctx_param, version_param, *rest])  # type: ignore[attr-defined]
    root.__annotations__ = {"ctx": typer.Context, "version": VersionOpt,
                            **{p.name: hints.get(p.name, p.annotation) for p in rest}}
    root.__doc__ = inner.__doc__ if inner is not None else None
    app.callback(invoke_without_command=True)(root)


_register_commands()
_install_root_callback()
