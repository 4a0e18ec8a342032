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
ScriptOpt = Annotated[Optional[str], typer.Option(
    "--script", help="Your training script (default: Megatron-LM's pretrain_gpt.py for model parallelism and for "
                     "pre-training timed on Megatron's stack, else train.py under `accelerate launch` with the plan's "
                     "ZeRO sharding).")]
ArgOpt = Annotated[Optional[list[str]], typer.Option("--arg", help="Extra argument for the script (repeatable).")]
ModelIdOpt = Annotated[Optional[str], typer.Option("--model-id", help="Hugging Face repo to serve (default: the preset's).")]
RestartsOpt = Annotated[int, typer.Option("--max-restarts", help="Restarts on errors before giving up.")]
MegatronOpt = Annotated[bool, typer.Option("--megatron-args/--no-megatron-args",
                                           help="Pass a model-parallel layout to --script as Megatron-LM flags too "
                                                "(env vars are always set).")]
InfraOpt = Annotated[Optional[str], typer.Option(
    "--infra", help="Run on your own nodes instead of a SkyPilot cloud: k8s, k8s/<context> or ssh/<node-pool>.")]
FleetOpt = Annotated[Optional[str], typer.Option(
    "--fleet", help="Run on this existing dstack fleet (e.g. an SSH fleet of the provider's nodes).")]


def _run(target: str, source: str, rank: int | None, out: str, name, image, script, args, model_id, max_restarts,
         megatron: bool, infra: str | None = None, fleet: str | None = None) -> None:
    import sys

    from pathlib import Path

    from gpuplan.export import ExportOptions, export_result, load_plan_result, write_atomic

    from gpuplan.files import check_out_path, is_stdout

    if not is_stdout(out):
        check_out_path(out)  # a directory, device, FIFO or unwritable folder: one line, before any work
    options = ExportOptions(name=name, image=image, script=script, script_args=tuple(args or ()), model_id=model_id,
                            max_restarts=max_restarts, megatron_args=megatron, infra=infra, fleet=fleet)
    result = export_result(load_plan_result(source), target, rank, options)
    for w in result.warnings:
        print(f"warning: {w}", file=sys.stderr)
    if out == "-":
        sys.stdout.write(result.text)
        for fname, text in result.files.items():
            print(f"note: this launch also needs {fname}; export with --out FILE to write it next to FILE",
                  file=sys.stderr)
        return
    path = Path(out)
    written = []
    for fname, text in result.files.items():  # what the main file's launch applies first (dstack fleet)
        written.append(str(write_atomic(path.parent / fname, text)))
    written.insert(0, str(write_atomic(path, result.text)))
    print(f"wrote {', '.join(written)}", file=sys.stderr)
    # The launch command on stdout, ready to run from the directory the files are in.
    launch = result.launch.replace("<this file>", str(path))
    for fname in result.files:
        launch = launch.replace(f"-f {fname}", f"-f {path.parent / fname}")
    print(launch)


@export_app.command("skypilot")
def export_skypilot(source: FromOpt, out: OutOpt = "-", rank: RankOpt = None, name: NameOpt = None,
                    image: ImageOpt = None, script: ScriptOpt = None, arg: ArgOpt = None,
                    model_id: ModelIdOpt = None, max_restarts: RestartsOpt = 3, megatron: MegatronOpt = True,
                    infra: InfraOpt = None) -> None:
    """SkyPilot task (training: sky jobs launch) or service (serving: sky serve up) YAML."""
    _run("skypilot", source, rank, out, name, image, script, arg, model_id, max_restarts, megatron, infra=infra)


@export_app.command("dstack")
def export_dstack(source: FromOpt, out: OutOpt = "-", rank: RankOpt = None, name: NameOpt = None,
                  image: ImageOpt = None, script: ScriptOpt = None, arg: ArgOpt = None,
                  model_id: ModelIdOpt = None, max_restarts: RestartsOpt = 3, megatron: MegatronOpt = True,
                  fleet: FleetOpt = None) -> None:
    """dstack `type: task` (training) or `type: service` (serving) configuration; multi-node training also
    writes the `placement: cluster` fleet it runs on, next to --out."""
    _run("dstack", source, rank, out, name, image, script, arg, model_id, max_restarts, megatron, fleet=fleet)


@export_app.command("k8s")
def export_k8s(source: FromOpt, out: OutOpt = "-", rank: RankOpt = None, name: NameOpt = None,
               image: ImageOpt = None, script: ScriptOpt = None, arg: ArgOpt = None,
               model_id: ModelIdOpt = None, max_restarts: RestartsOpt = 3, megatron: MegatronOpt = True) -> None:
    """Kubernetes manifests: PyTorchJob (multi-node) or Job (one node) for training; Deployment + Service for serving."""
    _run("k8s", source, rank, out, name, image, script, arg, model_id, max_restarts, megatron)
