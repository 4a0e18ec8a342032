"""`gpuplan export skypilot | dstack | k8s --from PLAN.json`: a chosen plan as launch files."""
from __future__ import annotations

from typing import Annotated, Optional

import typer

from gpuplan.cli.app import export_app

FromOpt = Annotated[str, typer.Option("--from", help="Plan file from `gpuplan plan ... --json`; '-' reads stdin.")]
RankOpt = Annotated[Optional[int], typer.Option("--rank", help="Which plan (default: rank 1, the best).")]
OutOpt = Annotated[str, typer.Option("--out", "-o", help="File to write (atomically); '-' prints to stdout.")]
NameOpt = Annotated[Optional[str], typer.Option("--name", help="Job/service name (default: <model>-<workload>).")]
ImageOpt = Annotated[Optional[str], typer.Option("--image", help="Container image (default: one per GPU vendor and engine).")]
ScriptOpt = Annotated[str, typer.Option("--script", help="Training script torchrun starts.")]
ArgOpt = Annotated[Optional[list[str]], typer.Option("--arg", help="Extra argument for the script (repeatable).")]
ModelIdOpt = Annotated[Optional[str], typer.Option("--model-id", help="Hugging Face repo to serve (default: the preset's).")]
RestartsOpt = Annotated[int, typer.Option("--max-restarts", help="Restarts on errors before giving up.")]
MegatronOpt = Annotated[bool, typer.Option("--megatron-args/--no-megatron-args",
                                           help="Pass the layout as Megatron-LM flags too (env vars are always set).")]


def _run(target: str, source: str, rank: int | None, out: str, name, image, script, args, model_id, max_restarts,
         megatron: bool) -> None:
    import sys

    from pathlib import Path

    from gpuplan.errors import UsageError
    from gpuplan.export import ExportOptions, export_result, load_plan_result, write_atomic

    if out != "-" and Path(out).is_dir():
        raise UsageError(f"--out {out}: is a directory; give a file name")
    options = ExportOptions(name=name, image=image, script=script, script_args=tuple(args or ()), model_id=model_id,
                            max_restarts=max_restarts, megatron_args=megatron)
    result = export_result(load_plan_result(source), target, rank, options)
    for w in result.warnings:
        print(f"warning: {w}", file=sys.stderr)
    if out == "-":
        sys.stdout.write(result.text)
        return
    path = write_atomic(out, result.text)
    print(f"wrote {path}; launch: {result.launch.replace('<this file>', str(path))}", file=sys.stderr)


@export_app.command("skypilot")
def export_skypilot(source: FromOpt, out: OutOpt = "-", rank: RankOpt = None, name: NameOpt = None,
                    image: ImageOpt = None, script: ScriptOpt = "train.py", arg: ArgOpt = None,
                    model_id: ModelIdOpt = None, max_restarts: RestartsOpt = 3, megatron: MegatronOpt = True) -> None:
    """SkyPilot task (training: sky jobs launch) or service (serving: sky serve up) YAML."""
    _run("skypilot", source, rank, out, name, image, script, arg, model_id, max_restarts, megatron)


@export_app.command("dstack")
def export_dstack(source: FromOpt, out: OutOpt = "-", rank: RankOpt = None, name: NameOpt = None,
                  image: ImageOpt = None, script: ScriptOpt = "train.py", arg: ArgOpt = None,
                  model_id: ModelIdOpt = None, max_restarts: RestartsOpt = 3, megatron: MegatronOpt = True) -> None:
    """dstack `type: task` (training) or `type: service` (serving) configuration."""
    _run("dstack", source, rank, out, name, image, script, arg, model_id, max_restarts, megatron)


@export_app.command("k8s")
def export_k8s(source: FromOpt, out: OutOpt = "-", rank: RankOpt = None, name: NameOpt = None,
               image: ImageOpt = None, script: ScriptOpt = "train.py", arg: ArgOpt = None,
               model_id: ModelIdOpt = None, max_restarts: RestartsOpt = 3, megatron: MegatronOpt = True) -> None:
    """Kubernetes manifests: PyTorchJob (multi-node) or Job (one node) for training; Deployment + Service for serving."""
    _run("k8s", source, rank, out, name, image, script, arg, model_id, max_restarts, megatron)
