"""`gpuplan estimate train` and `gpuplan estimate memory`: training FLOPs, layout, time, memory.

Presentation only: the numbers come from gpuplan.perf.training_estimate.
"""
from __future__ import annotations

from typing import Annotated, Optional

import typer

from gpuplan.cli.app import estimate_app
from gpuplan.cli.options import (ActiveParamsOpt, CsvOpt, FrameworkOpt, JsonOpt, ModelOpt, ParamsOpt, SampleLenOpt,
                                 resolve_model_option)

GpuOpt = Annotated[Optional[str], typer.Option("--gpu", help="GPU type, e.g. H100, A100-80GB, MI300X.")]
TokensOpt = Annotated[Optional[str], typer.Option("--tokens", help="Training tokens (e.g. 15T, 1e12, 300B); optional with --gpus.")]
EpochsOpt = Annotated[Optional[float], typer.Option("--epochs", help="Epochs over --dataset-tokens (fine-tuning).")]
DatasetOpt = Annotated[Optional[str], typer.Option("--dataset-tokens", help="Tokens in the data set (with --epochs).")]
PrecisionOpt = Annotated[str, typer.Option("--precision", help="bf16, fp16, fp8 (GPUs with FP8) or fp4 (GPUs with FP4).")]
SeqOpt = Annotated[int, typer.Option("--seq-len", help="Tokens per sequence.")]
BatchOpt = Annotated[Optional[int], typer.Option("--global-batch", help="Sequences per optimizer step (default ~4M tokens pre-training, ~128k fine-tuning).")]
MethodOpt = Annotated[str, typer.Option("--method", help="full, lora or qlora.")]
RankOpt = Annotated[int, typer.Option("--lora-rank", help="LoRA rank.")]
TargetsOpt = Annotated[str, typer.Option("--lora-targets", help="LoRA on 'attention' projections or 'all' linear layers.")]
RecomputeOpt = Annotated[Optional[str], typer.Option("--recompute", help="Activation recompute: none, selective or full (default: searched).")]
ZeroOpt = Annotated[Optional[int], typer.Option("--zero", help="ZeRO stage 0-3 (1 = distributed optimizer; default: searched).")]
FabricOpt = Annotated[str, typer.Option("--fabric", help="Inter-node network per GPU: infiniband (400 Gb/s), ethernet (100 Gb/s) or Gb/s.")]
GpnOpt = Annotated[int, typer.Option("--gpus-per-node", help="GPUs per node (TP stays inside a node).")]
FusedMoeOpt = Annotated[bool, typer.Option("--fused-moe", help="MoE on B200/B300/GB200/GB300: time a graph-captured fused "
                                           "stack (one CUDA graph per iteration, one fused grouped-MLP kernel per MoE "
                                           "layer, as Megatron-Bridge's MXFP8 MoE recipes run from NeMo 26.06): no "
                                           "per-expert or per-layer launch costs. The exported files do not set it up.")]

DispatcherOpt = Annotated[Optional[str], typer.Option("--moe-dispatcher", help="MoE token dispatcher: flex (DeepEP "
                                                      "/ HybridEP, one copy per destination GPU and per remote node; "
                                                      "default) or alltoall (Megatron's NCCL all-to-all, what the "
                                                      "exported files launch).")]
EpOverlapOpt = Annotated[bool, typer.Option("--ep-overlap", help="MoE: overlap the expert-parallel all-to-all with "
                                            "another micro-batch's compute (Megatron's combined 1F1B schedule, "
                                            "--overlap-moe-expert-parallel-comm; PP 1 or an interleaved pipeline). "
                                            "Off by default, as in Megatron and the exported files.")]


def _int_opt(name: str, help_: str):
    return Annotated[Optional[int], typer.Option(name, help=help_)]


def _workload(tokens, epochs, dataset_tokens, method, seq_len, global_batch, precision, lora_rank, lora_targets,
              default_tokens: float | None = None):
    from gpuplan.planner.requests import training_workload

    return training_workload(tokens, epochs, dataset_tokens, method, seq_len, global_batch, precision, lora_rank,
                             lora_targets, default_tokens=default_tokens)


@estimate_app.command("train")
def train_command(
    model: ModelOpt = None,
    params: ParamsOpt = None,
    active_params: ActiveParamsOpt = None,
    tokens: TokensOpt = None,
    epochs: EpochsOpt = None,
    dataset_tokens: DatasetOpt = None,
    gpu: GpuOpt = None,
    gpus: _int_opt("--gpus", "GPU count (default: with --deadline-days the smallest that meets it; without, the smallest within 10% of the fewest GPU-hours that finishes in 30 days, else the fewest GPU-hours within 90 days).") = None,
    precision: PrecisionOpt = "bf16",
    seq_len: SeqOpt = 4096,
    sample_len: SampleLenOpt = None,
    global_batch: BatchOpt = None,
    micro_batch: _int_opt("--micro-batch", "Sequences per micro-batch (default: searched).") = None,
    tp: _int_opt("--tp", "Tensor parallel size (default: searched).") = None,
    pp: _int_opt("--pp", "Pipeline stages (default: searched).") = None,
    cp: _int_opt("--cp", "Context parallel size (default: searched).") = None,
    ep: _int_opt("--ep", "Expert parallel size, MoE (default: searched).") = None,
    etp: _int_opt("--etp", "MoE: the experts' tensor parallel size, 1 (folded whole over the TP ranks) or the TP size (default: searched).") = None,
    vp: _int_opt("--vp", "Interleaved pipeline chunks per GPU (default: searched).") = None,
    recompute: RecomputeOpt = None,
    zero: ZeroOpt = None,
    method: MethodOpt = "full",
    lora_rank: RankOpt = 16,
    lora_targets: TargetsOpt = "all",
    goodput: Annotated[Optional[float], typer.Option("--goodput", help="Whole-run productive share of wall time (default: fitted).")] = None,
    efficiency: Annotated[Optional[float], typer.Option("--efficiency", help="Achieved fraction of peak for compute (default: fitted curve).")] = None,
    fabric: FabricOpt = "infiniband",
    gpus_per_node: GpnOpt = 8,
    deadline_days: Annotated[Optional[float], typer.Option("--deadline-days", help="Wall-time target that picks the GPU count (default: none, see --gpus).")] = None,
    attention: Annotated[str, typer.Option("--flops-convention", help="Attention FLOPs in MFU: causal, full or none.")] = "causal",
    teacher: Annotated[Optional[str], typer.Option("--teacher", help="Distill from this model: its forward pass per token counts in FLOPs, time and memory.")] = None,
    recompute_layers: _int_opt("--recompute-layers", "With --recompute full: recompute only this many layers per pipeline stage (partial recompute).") = None,
    framework: FrameworkOpt = "megatron",
    fused_moe: FusedMoeOpt = False,
    moe_dispatcher: DispatcherOpt = None,
    ep_overlap: EpOverlapOpt = False,
    as_json: JsonOpt = False,
    as_csv: CsvOpt = False,
) -> None:
    """GPU-hours, wall time, MFU, memory and parallel layout to train or fine-tune a model."""
    from gpuplan.errors import GpuplanError, UsageError

    if gpu is None:
        raise UsageError("--gpu is required (e.g. --gpu H100)")
    from gpuplan.cli.options import build_request
    from gpuplan.planner.requests import TrainEstimateRequest, estimate_train

    req = build_request(TrainEstimateRequest,
        model=model, params=params, active_params=active_params, tokens=tokens, epochs=epochs,
        dataset_tokens=dataset_tokens, gpu=gpu, gpus=gpus, precision=precision, seq_len=seq_len,
        sample_len=sample_len, global_batch=global_batch, micro_batch=micro_batch, tp=tp, pp=pp, cp=cp, ep=ep, etp=etp,
        vp=vp, recompute=recompute, zero=zero, method=method, lora_rank=lora_rank, lora_targets=lora_targets, goodput=goodput,
        efficiency=efficiency, fabric=fabric, gpus_per_node=gpus_per_node, deadline_days=deadline_days,
        flops_convention=attention, teacher=teacher, recompute_layers=recompute_layers, framework=framework,
        fused_moe=fused_moe, moe_dispatcher=moe_dispatcher, ep_overlap=ep_overlap)
    est = estimate_train(req)  # the request the API takes too (gpuplan.planner.requests)
    if as_json or as_csv:
        from gpuplan.cli.output import print_json

        print_json(est, as_csv)
    else:
        _print_train(est)
    if not est.fits:
        raise GpuplanError(f"does not fit: {est.memory_per_gpu_gb:.1f} GB per GPU needed, "
                           f"{est.memory_shortfall_gb:.1f} GB more than a {est.gpu} holds")


def _layout_text(lay) -> str:
    etp = f" ETP{lay.etp}" if lay.etp < lay.tp else ""
    return (f"TP{lay.tp} PP{lay.pp} DP{lay.dp} CP{lay.cp} EP{lay.ep}{etp} VP{lay.vp}, micro-batch {lay.micro_batch} "
            f"x {lay.micro_batches}, recompute {lay.recompute}, ZeRO-{lay.zero}")


def _print_train(est) -> None:
    from rich.console import Console
    from rich.panel import Panel

    from gpuplan.cli.output import fmt_value, print_table
    from gpuplan.display import fit_provenance

    console = Console() if Console().is_terminal else Console(width=160)
    a = est.assumptions
    lines = [
        f"[bold]{est.model}[/] on [bold]{est.n_gpus} x {est.gpu}[/], {est.method} {est.precision}, "
        f"{est.tokens:,.3g} tokens",
        f"GPU-hours [bold]{est.gpu_hours:,.0f}[/]   wall [bold]{est.wall_days:,.2f} days[/] "
        f"({est.wall_hours:,.1f} h)   {est.steps:,} steps of {est.step_time_s:.3g} s",
        f"MFU {est.mfu:.1%}   HFU {est.hfu:.1%}   {est.tokens_per_s:,.0f} tokens/s   FLOPs {est.flops:.3g}",
        # memory_gb is GiB (gpuplan.units); both sides in decimal GB so the comparison reads true
        f"memory {est.memory_per_gpu_gb:.1f} / {_device_gb(est.gpu_memory_gb):.1f} GB per GPU ({est.gpu_memory_gb:g} GiB)"
        + ("" if est.fits else f"  [red]short by {est.memory_shortfall_gb:.1f} GB[/]"),
        f"layout: {_layout_text(est.layout)}; global batch {est.layout.global_batch} x {a['seq_len']} tokens",
        f"assumed: efficiency {a['efficiency']:.3f} ({fit_provenance(a['efficiency_source'])}), goodput {a['goodput']:.3f}, "
        f"peak {a['peak_tflops']:g} TFLOP/s, fabric {a['fabric']['inter_node_gbps_per_gpu']:g} Gb/s per GPU",
    ]
    lines += [f"note: {n}" for n in est.notes]
    console.print(Panel("\n".join(lines), title="training estimate", expand=False))
    mem_rows = [{"part": k, "gb": v} for k, v in est.memory.items()]
    mem_rows.append({"part": "total", "gb": est.memory_per_gpu_gb})
    step_rows = [{"part": k, "s": v} for k, v in est.step_breakdown_s.items() if v > 0]
    print_table(mem_rows, [("part", "memory"), ("gb", "GB/GPU")], title="memory per GPU",
                formatters={"gb": lambda v: f"{v:.2f}"})
    print_table(step_rows, [("part", "step part"), ("s", "seconds")], title="step time",
                formatters={"s": lambda v: f"{v:.3g}"})
    if est.runners_up:
        rows = [{"layout": _layout_text(r.layout), "step_s": r.step_time_s, "mfu": r.mfu,
                 "mem": r.memory_per_gpu_gb, "slower": r.slower_pct} for r in est.runners_up]
        print_table(rows, [("layout", "runner-up layout"), ("step_s", "step s"), ("mfu", "MFU"),
                           ("mem", "GB/GPU"), ("slower", "slower %")],
                    formatters={"step_s": lambda v: f"{v:.3g}", "mfu": lambda v: f"{v:.1%}",
                                "mem": lambda v: f"{v:.1f}", "slower": lambda v: f"{v:+.1f}"})
    rej = {k: v for k, v in est.rejected.items() if v}
    if rej:
        console.print("rejected layouts: " + ", ".join(f"{k} {fmt_value(v)}" for k, v in rej.items()))


@estimate_app.command("memory")
def memory_command(
    model: ModelOpt = None,
    params: ParamsOpt = None,
    active_params: ActiveParamsOpt = None,
    gpu: GpuOpt = None,
    gpus: Annotated[int, typer.Option("--gpus", help="GPU count (dp = gpus / (tp x pp x cp)).")] = 1,
    precision: PrecisionOpt = "bf16",
    seq_len: SeqOpt = 4096,
    global_batch: BatchOpt = None,
    micro_batch: Annotated[int, typer.Option("--micro-batch", help="Sequences per micro-batch.")] = 1,
    tp: Annotated[int, typer.Option("--tp", help="Tensor parallel size.")] = 1,
    pp: Annotated[int, typer.Option("--pp", help="Pipeline stages.")] = 1,
    cp: Annotated[int, typer.Option("--cp", help="Context parallel size.")] = 1,
    ep: Annotated[int, typer.Option("--ep", help="Expert parallel size (MoE).")] = 1,
    etp: Annotated[Optional[int], typer.Option("--etp", help="MoE: the experts' tensor parallel size, 1 (folded whole over the TP ranks) or the TP size (default).")] = None,
    vp: Annotated[int, typer.Option("--vp", help="Interleaved pipeline chunks per GPU.")] = 1,
    recompute: Annotated[str, typer.Option("--recompute", help="none, selective or full.")] = "none",
    zero: Annotated[int, typer.Option("--zero", help="ZeRO stage 0-3.")] = 0,
    method: MethodOpt = "full",
    lora_rank: RankOpt = 16,
    lora_targets: TargetsOpt = "all",
    fp32_grads: Annotated[bool, typer.Option("--fp32-grads", help="fp32 gradient accumulation buffers (18 B/param).")] = False,
    as_json: JsonOpt = False,
    as_csv: CsvOpt = False,
) -> None:
    """Training memory per GPU for one layout: weights, gradients, optimizer, activations."""
    from gpuplan.errors import GpuplanError
    from gpuplan.perf.training_estimate import estimate_memory

    spec = resolve_model_option(model, params, active_params)
    wl = _workload(None, None, None, method, seq_len, global_batch, precision, lora_rank, lora_targets,
                   default_tokens=1e9)
    if fp32_grads:
        wl = wl.model_copy(update={"fp32_grads": True})
    est = estimate_memory(spec, wl, gpu, gpus, tp=tp, pp=pp, cp=cp, ep=ep, micro_batch=micro_batch,
                          recompute=recompute, zero=zero, vp=vp, etp=etp)
    if as_json or as_csv:
        from gpuplan.cli.output import print_json

        print_json(est, as_csv)
    else:
        from gpuplan.cli.output import print_table

        rows = [{"part": k, "gb": v} for k, v in est.memory.items()]
        rows.append({"part": "total", "gb": est.memory_per_gpu_gb})
        lay = est.layout
        etp = f" ETP{lay['etp']}" if lay["etp"] < lay["tp"] else ""
        typer.echo(f"{est.model} {est.method} {wl.precision}: TP{lay['tp']} PP{lay['pp']} DP{lay['dp']} CP{lay['cp']} "
                   f"EP{lay['ep']}{etp} VP{lay['vp']}, micro-batch {lay['micro_batch']} x {wl.seq_len} tokens, "
                   f"recompute {lay['recompute']}, ZeRO-{lay['zero']}")
        title = "memory per GPU"
        cap = None
        if est.gpu:
            cap = (f"{est.gpu} holds {est.gpu_memory_gb:g} GiB = {_device_gb(est.gpu_memory_gb):.1f} GB: "
                   + ("fits" if est.fits else f"short by {est.memory_shortfall_gb:.1f} GB"))
        print_table(rows, [("part", "memory"), ("gb", "GB/GPU")], title=title, caption=cap,
                    formatters={"gb": lambda v: f"{v:.2f}"})
    if est.fits is False:
        raise GpuplanError(f"does not fit: {est.memory_per_gpu_gb:.1f} GB per GPU needed, "
                           f"{est.memory_shortfall_gb:.1f} GB more than a {est.gpu} holds")


def _device_gb(memory_gb: float) -> float:
    """A catalog memory_gb (GiB, see gpuplan.units) in decimal GB, the unit of the memory estimates."""
    from gpuplan.units import GB, gpu_memory_bytes

    return gpu_memory_bytes(memory_gb) / GB
