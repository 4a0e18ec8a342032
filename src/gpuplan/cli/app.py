"""The Typer application and its command groups.

Command modules (`cmd_*.py`) attach commands to these apps; they import estimation code
inside the command body so `gpuplan --help` and light commands start fast.
"""
from __future__ import annotations

import typer

app = typer.Typer(
    name="gpuplan",
    help="Plan LLM compute across GPU clouds: how much, where, how, whether, then launch.",
    no_args_is_help=True,
    add_completion=False,
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


def _register_commands() -> None:
    """Import every command module so its decorators run; missing ones are skipped."""
    import importlib
    import pkgutil

    import gpuplan.cli as pkg

    for mod in sorted(m.name for m in pkgutil.iter_modules(pkg.__path__)):
        if mod.startswith("cmd_"):
            importlib.import_module(f"gpuplan.cli.{mod}")


_register_commands()
