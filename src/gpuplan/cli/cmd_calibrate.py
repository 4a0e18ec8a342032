"""`gpuplan calibrate`: fit the efficiency to your own runs, and manage the named profiles.

    gpuplan calibrate runs.csv [--name NAME] [--no-use]   fit, store and (by default) activate a profile
    gpuplan calibrate list | show NAME | use NAME|none | remove NAME

Also the global `gpuplan --profile NAME|none ...`: which profile this one command uses.
The numbers and the CSV format are in gpuplan.perf.calibration (its module docstring).
"""
from __future__ import annotations

import sys
from typing import Annotated, Any, Optional

import typer

from gpuplan.cli.app import app

CSV_HELP = """Fit the efficiency to your own measured runs, keep it as a named profile.

Every estimate, plan, report and web answer then uses the active profile and
names it (assumptions.calibration; plans: summary.calibration). The bundled
fit stays the default: `gpuplan calibrate use none`, `gpuplan --profile none`
or GPUPLAN_PROFILE=none go back to it.

The first argument is a CSV file, or: list | show NAME | use NAME|none |
remove NAME.

CSV: one header line; train and serve rows may share a file; other columns
(e.g. source) are ignored; lines starting with # are comments.

kind=train: model, gpu, n_gpus, tp, pp, micro_batch, global_batch, seq_len,
and step_time_s (seconds per optimizer step) or tokens_per_s (whole job).
Optional: gpus_per_node (8), dp, cp, ep, etp, vp, method (full|lora|qlora),
precision (bf16), recompute, zero, lora_rank, lora_targets, fabric,
sample_len (mean packed example length), framework (megatron|pytorch),
fused_moe (1: MoE on Blackwell under a full-iteration CUDA graph with a fused
grouped-MLP kernel), moe_dispatcher (flex: DeepEP / HybridEP, default|alltoall),
ep_overlap (1: the MoE all-to-all overlapped in the combined 1F1B schedule).

kind=serve: model, gpu, tp, input_len, output_len, output_tokens_per_s (all
replicas). Optional: precision (bf16), kv_precision, engine (vllm|sglang|
trtllm; vllm), concurrency (empty: max throughput), n_gpus (= tp),
fixed_lengths (1: clients with one prompt and one output length, as vllm bench
serve's random data set at range ratio 0 with --ignore-eos; needs concurrency).

One factor per (regime, GPU architecture) multiplies the bundled efficiency:
the one that makes the geometric mean of measured / predicted speed 1 over
your rows of that key, with a p10-p90 band from their spread.
Example: examples/calibration-runs.csv."""


ProfileOpt = Annotated[Optional[str], typer.Option(
    "--profile", metavar="NAME|none",
    help="Calibration profile for this command (default: $GPUPLAN_PROFILE, else `gpuplan calibrate use`); "
         "none = the bundled fit.")]


@app.callback()
def _root(ctx: typer.Context, profile: ProfileOpt = None) -> None:
    """Plan LLM compute across GPU clouds: how much, where, how, whether, then launch."""
    from gpuplan.perf import calibration

    calibration.set_cli_profile(profile)
    calibration.reset_applied()
    ctx.call_on_close(_note_applied)
    if profile is not None:  # for this command only (matters when the CLI runs in-process)
        ctx.call_on_close(lambda: calibration.set_cli_profile(None))


def _note_applied() -> None:
    """After a command that succeeded: one stderr line naming the profile factors its estimates used."""
    from gpuplan.perf import calibration

    if sys.exc_info()[0] is not None:
        return
    used = calibration.applied()
    if not used:
        return
    names = sorted({p for p, _, _ in used})
    parts = ", ".join(f"{r} {a} x{f:.3f}" for (_, r, a), f in sorted(used.items()))
    print(f"note: calibration profile {', '.join(repr(n) for n in names)} applied ({parts}); "
          f"`gpuplan --profile none ...` for the bundled fit", file=sys.stderr)


@app.command("calibrate", help=CSV_HELP, no_args_is_help=True)
def calibrate_command(
    target: Annotated[str, typer.Argument(metavar="RUNS.csv|list|show|use|remove",
                                          help="CSV of measured runs, or a profile action.")],
    profile_name: Annotated[Optional[str], typer.Argument(metavar="NAME", show_default=False,
                                                          help="The profile for show / use / remove.")] = None,
    name: Annotated[Optional[str], typer.Option("--name", help="Profile name (default: the CSV file's name).")] = None,
    use: Annotated[bool, typer.Option("--use/--no-use", help="Make the fitted profile the active one.")] = True,
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON.")] = False,
) -> None:
    from gpuplan.errors import UsageError

    action = target.strip().lower()
    if action in ("list", "show", "use", "remove"):
        if name is not None:
            raise UsageError(f"--name is for fitting a CSV; use `gpuplan calibrate {action} NAME`")
        if action == "list":
            if profile_name is not None:
                raise UsageError("`gpuplan calibrate list` takes no name")
            return _list(as_json)
        if profile_name is None:
            raise UsageError(f"give a profile name: gpuplan calibrate {action} NAME"
                             + (" (or none)" if action == "use" else ""))
        return {"show": _show, "use": _use, "remove": _remove}[action](profile_name, as_json)
    if profile_name is not None:
        raise UsageError(f"unexpected argument {profile_name!r}; the profile name goes in --name")
    _fit(target, name, use, as_json)


# ---------------------------------------------------------------- fitting -------------------------
def _default_name(path: str) -> str:
    import re
    from pathlib import Path

    stem = re.sub(r"[^A-Za-z0-9._-]+", "-", Path(path).stem).strip("-._")[:64]
    return stem if stem and stem.lower() != "none" else "default"


def _fit(path: str, name: Optional[str], use: bool, as_json: bool) -> None:
    from gpuplan.perf import calibration as cal

    name = cal.check_name(name if name is not None else _default_name(path))
    runs = cal.read_runs(path)
    data = cal.fit(runs, name, source=path)
    stored = cal.profile_path(name)
    replaced = stored.exists()
    saved = cal.save_profile(data)
    if use:
        cal.set_active(name)
    if as_json:
        from gpuplan.cli.output import print_json

        print_json({"profile": data, "path": str(saved), "active": use, "replaced": replaced})
        return
    _print_profile(data)
    verb = "replaced" if replaced else "written"
    typer.echo(f"profile {name!r} {verb}: {saved}")
    if use:
        typer.echo("active now: every estimate uses it and names it under assumptions.calibration "
                   "(`gpuplan calibrate use none` goes back to the bundled fit)")
        _note_override(name)
    else:
        typer.echo(f"not active (--no-use): `gpuplan calibrate use {name}` or `gpuplan --profile {name} ...`")


def _note_override(name: str) -> None:
    import os

    from gpuplan.perf import calibration as cal

    env = os.environ.get(cal.ENV_PROFILE, "").strip()
    if env and env != name:
        print(f"note: ${cal.ENV_PROFILE}={env} overrides the active profile in this shell", file=sys.stderr)


def _fmt_band(e: dict[str, Any]) -> str:
    if e.get("p10") is None:
        return "bundled"
    return f"{e['p10']:.3f}-{e['p90']:.3f}"


def _print_profile(data: dict[str, Any]) -> None:
    from gpuplan.cli.output import print_table

    rows = []
    for regime, archs in data.get("factors", {}).items():
        for arch, e in archs.items():
            rows.append({"regime": regime, "arch": arch, "rows": e.get("rows"), "factor": e.get("factor"),
                         "band": _fmt_band(e), "gpus": ", ".join(e.get("gpus", [])),
                         "before": e.get("median_abs_error_pct_before"), "after": e.get("median_abs_error_pct_after")})
    pct = lambda v: "-" if v is None else f"{v:.1f}%"  # noqa: E731
    print_table(rows, [("regime", "regime"), ("arch", "architecture"), ("gpus", "measured on"), ("rows", "rows"),
                       ("factor", "factor"), ("band", "p10-p90"), ("before", "median err before"),
                       ("after", "after")],
                title=f"calibration profile {data.get('name')}",
                formatters={"factor": lambda v: f"x{v:.3f}", "before": pct, "after": pct},
                caption="factor multiplies the bundled efficiency for every GPU of that architecture")
    if data.get("rows"):
        per = [{"line": r.get("line"), "run": r.get("run"), "measured": r.get("measured_tokens_per_s"),
                "before": r.get("predicted_before"), "after": r.get("predicted_after")} for r in data["rows"]]
        num = lambda v: "-" if v is None else (f"{v:,.0f}" if abs(v) >= 100 else f"{v:.4g}")  # noqa: E731
        print_table(per, [("line", "line"), ("run", "run"), ("measured", "measured tok/s"),
                          ("before", "predicted before"), ("after", "after")],
                    title="runs", formatters={"measured": num, "before": num, "after": num})


# ---------------------------------------------------------------- profiles -----------------------
def _list(as_json: bool) -> None:
    from gpuplan.errors import UsageError
    from gpuplan.perf import calibration as cal

    try:
        active, origin = cal.active_choice()
        active_err = None
    except UsageError as e:
        active, origin, active_err = None, "", str(e)
    out = []
    for n in cal.list_names():
        entry: dict[str, Any] = {"name": n, "active": n == active, "path": str(cal.profile_path(n))}
        data, problem = cal.inspect_profile(n)
        if data is None:
            entry["error"] = problem
        else:
            entry.update(created=data.get("created"), source=data.get("source"),
                         factors={r: {a: e["factor"] for a, e in archs.items()}
                                  for r, archs in data["factors"].items()},
                         rows=sum(e.get("rows", 0) for archs in data["factors"].values() for e in archs.values()))
        out.append(entry)
    if as_json:
        from gpuplan.cli.output import print_json

        print_json({"profiles": out, "active": active, "active_from": origin, "config_dir": str(cal.config_dir()),
                    "error": active_err})
        return
    if not out:
        typer.echo(f"no calibration profiles in {cal.profiles_dir()}; fit one with `gpuplan calibrate RUNS.csv`")
    else:
        from gpuplan.cli.output import print_table

        rows = [{"active": "*" if e["active"] else "", "name": e["name"],
                 "factors": "; ".join(f"{r} " + ", ".join(f"{a} x{f:.3f}" for a, f in archs.items())
                                      for r, archs in (e.get("factors") or {}).items()) if "error" not in e
                 else f"unreadable ({e['error']}): `gpuplan calibrate remove {e['name']}`",
                 "rows": e.get("rows", "-"), "created": e.get("created") or "-"} for e in out]
        print_table(rows, [("active", "active"), ("name", "profile"), ("factors", "factors"), ("rows", "rows"),
                           ("created", "created")], title=f"calibration profiles in {cal.profiles_dir()}")
    if active_err:
        typer.echo(f"error: {active_err}", err=True)
    elif active is None:
        typer.echo("active: none (the bundled fit)" + (f", from {origin}" if origin not in ("default",) else ""))
    else:
        typer.echo(f"active: {active} (from {origin})")


def _show(profile_name: str, as_json: bool) -> None:
    from gpuplan.perf import calibration as cal

    prof = cal.load_profile(profile_name)  # checked: a corrupt file is one line
    _, data = cal.read_profile_data(prof.name)
    if as_json:
        from gpuplan.cli.output import print_json

        print_json(data)
        return
    _print_profile(data)
    typer.echo(f"{prof.path}; fitted {data.get('created', '?')} from {data.get('source') or '?'}")


def _use(profile_name: str, as_json: bool) -> None:
    from gpuplan.perf import calibration as cal

    off = profile_name.strip().lower() == cal.OFF
    path = cal.set_active(None if off else profile_name)
    if as_json:
        from gpuplan.cli.output import print_json

        print_json({"active": None if off else profile_name.strip(), "path": str(path)})
        return
    typer.echo("calibration off: estimates use the bundled fit" if off
               else f"active calibration profile: {profile_name.strip()} ({path})")
    if not off:
        _note_override(profile_name.strip())


def _remove(profile_name: str, as_json: bool) -> None:
    from gpuplan.perf import calibration as cal

    path, was_active = cal.remove_profile(profile_name)
    if as_json:
        from gpuplan.cli.output import print_json

        print_json({"removed": profile_name, "path": str(path), "was_active": was_active})
        return
    typer.echo(f"removed {path}" + ("; it was active: estimates use the bundled fit now" if was_active else ""))
