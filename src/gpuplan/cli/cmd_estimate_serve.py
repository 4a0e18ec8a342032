"""`gpuplan estimate serve` and `gpuplan estimate capacity`: serving throughput, latency and GPUs needed.

Presentation only: the numbers come from gpuplan.perf.inference_estimate and gpuplan.perf.capacity.
"""
from __future__ import annotations

from typing import Annotated, Optional

import typer

from gpuplan.cli.app import estimate_app
from gpuplan.cli.options import ActiveParamsOpt, CsvOpt, JsonOpt, ModelOpt, ParamsOpt, resolve_model_option

GpuOpt = Annotated[Optional[str], typer.Option("--gpu", help="GPU type, e.g. H100, A100-80GB, MI300X.")]
PrecisionOpt = Annotated[str, typer.Option("--precision", help="Weights: bf16, fp16, fp8, int8, int4 (awq/gptq), fp4 (nvfp4).")]
ServePrecisionOpt = Annotated[Optional[str], typer.Option(
    "--precision", help="Weights: bf16, fp16, fp8, int8, int4 (awq/gptq), fp4 (nvfp4/mxfp4); default: the model's "
                        "native precision (DeepSeek-V3 fp8, gpt-oss fp4, Kimi-K2-Thinking int4), else bf16.")]
KvPrecisionOpt = Annotated[Optional[str], typer.Option("--kv-precision", help="KV cache: bf16, fp8, int8, fp4 (default: the engine's).")]
InputLenOpt = Annotated[str, typer.Option("--input-len", help="Prompt tokens per request (e.g. 1000, 8k).")]
OutputLenOpt = Annotated[str, typer.Option("--output-len", help="Generated tokens per request.")]
TtftOpt = Annotated[Optional[float], typer.Option("--max-ttft-ms", help="Time-to-first-token target, ms.")]
TpotOpt = Annotated[Optional[float], typer.Option("--max-tpot-ms", help="Time-per-output-token target, ms.")]
EngineOpt = Annotated[str, typer.Option("--engine", help="vllm, sglang, trtllm or optimum-habana (static batch, Gaudi).")]


def _tokens(text: str, what: str) -> int:
    from gpuplan.errors import UsageError
    from gpuplan.units import parse_quantity

    v = parse_quantity(text, what)
    if v != int(v):
        raise UsageError(f"{what} must be a whole number of tokens, got {text!r}")
    return int(v)


@estimate_app.command("serve")
def serve_command(
    model: ModelOpt = None,
    params: ParamsOpt = None,
    active_params: ActiveParamsOpt = None,
    gpu: GpuOpt = None,
    gpus: Annotated[Optional[int], typer.Option("--gpus", help="GPUs in total (default: smallest TP of 1/2/4/8 that fits).")] = None,
    tp: Annotated[Optional[int], typer.Option("--tp", help="GPUs per replica (default: all of --gpus).")] = None,
    ep: Annotated[Optional[int], typer.Option("--ep", help="MoE: expert-parallel degree, 1 or the replica's GPUs (whole experts per GPU).")] = None,
    attention_dp: Annotated[bool, typer.Option("--attention-dp", help="MoE: attention data parallel (each GPU its own sequences; experts EP over the replica).")] = False,
    precision: ServePrecisionOpt = None,
    kv_precision: KvPrecisionOpt = None,
    input_len: InputLenOpt = "1000",
    output_len: OutputLenOpt = "1000",
    concurrency: Annotated[Optional[int], typer.Option("--concurrency", help="Requests in flight (default: best throughput).")] = None,
    requests: Annotated[Optional[int], typer.Option("--requests", help="A benchmark's request count. With --concurrency (vllm bench serve --num-prompts): TTFT is the mean over them, the first wave arriving together. Without (trtllm-bench throughput): all queued at once, run in waves of as many as fit.")] = None,
    fixed_lengths: Annotated[bool, typer.Option("--fixed-lengths", help="With --concurrency: every prompt and output has one length (vllm bench serve's random data set at --random-range-ratio 0 with --ignore-eos); the clients then arrive in the groups their first wave was admitted in, each group prefilled together.")] = False,
    max_ttft_ms: TtftOpt = None,
    max_tpot_ms: TpotOpt = None,
    engine: EngineOpt = "vllm",
    memory_fraction: Annotated[Optional[float], typer.Option("--memory-fraction", help="Engine memory fraction (vLLM --gpu-memory-utilization).")] = None,
    max_num_seqs: Annotated[Optional[int], typer.Option("--max-num-seqs", help="The engine's cap on running requests per replica (default: the engine's on this GPU; vLLM: 256 under 70 GiB or on an A100, else 1024).")] = None,
    eta_bw: Annotated[Optional[float], typer.Option("--eta-bw", help="Override the fitted HBM bandwidth efficiency (0-1).")] = None,
    eta_c: Annotated[Optional[float], typer.Option("--eta-c", help="Override the fitted compute efficiency (0-1).")] = None,
    as_json: JsonOpt = False,
    as_csv: CsvOpt = False,
) -> None:
    """Serving throughput, TTFT/TPOT, KV cache and max concurrency for a model on a GPU."""
    from gpuplan.errors import GpuplanError, UsageError

    if gpu is None:
        raise UsageError("--gpu is required (e.g. --gpu H100)")
    from gpuplan.cli.options import build_request
    from gpuplan.planner.requests import ServeEstimateRequest, estimate_serve

    req = build_request(ServeEstimateRequest,
        model=model, params=params, active_params=active_params, gpu=gpu, gpus=gpus, tp=tp, ep=ep,
        attention_dp=attention_dp, precision=precision, kv_precision=kv_precision, input_len=input_len,
        output_len=output_len, concurrency=concurrency, requests=requests, fixed_lengths=fixed_lengths,
        max_ttft_ms=max_ttft_ms,
        max_tpot_ms=max_tpot_ms, engine=engine, memory_fraction=memory_fraction, max_num_seqs=max_num_seqs,
        eta_bw=eta_bw, eta_c=eta_c)
    est = estimate_serve(req)  # the request the API takes too (gpuplan.planner.requests)
    if as_json or as_csv:
        from gpuplan.cli.output import print_json

        print_json(est, as_csv)
    else:
        _print_serve(est)
    if not est.fits:
        raise GpuplanError(est.message)


def _print_serve(est) -> None:
    from gpuplan.cli.output import fmt_value, print_table

    layout = f"TP{est.tp}"
    if est.assumptions.get("dp_attention"):
        layout = f"attention-DP{est.tp} + EP{est.assumptions.get('ep')}"
    elif (est.assumptions.get("ep") or 1) > 1:
        layout += f" + EP{est.assumptions['ep']}"
    native = str(est.assumptions.get("precision_basis", "")).startswith("the model's native")
    weights = f"{est.precision}{' (native)' if native else ''}"
    if est.assumptions.get("weight_dequantized"):
        weights += " weight-only, bf16 math"
    acts = " x MXFP8 activations" if est.assumptions.get("weight_w4a8") else ""
    title = (f"{est.model} on {est.n_gpus}x {est.gpu} ({est.replicas} x {layout}), {est.engine}, "
             f"{weights} weights{acts} / {est.kv_precision} KV, {est.input_len:,} in / {est.output_len:,} out")
    b = est.memory_breakdown_gb
    rows = [
        ("fits", est.fits),
        ("output tokens/s (total)", est.output_tokens_per_s),
        ("output tokens/s per GPU", est.output_tokens_per_s_per_gpu),
        ("requests/s", est.requests_per_s),
        ("TTFT ms", est.ttft_ms),
        ("TPOT ms", est.tpot_ms),
        ("concurrency (operating)", est.concurrency),
        ("max concurrency (fits at once)", est.max_concurrency),
        ("KV cache tokens per replica", est.kv_cache_tokens),
        ("KV bytes per token", est.kv_bytes_per_token),
        ("decode bound by", est.decode_bound),
        ("operating point set by", est.limited_by),
        ("meets targets", est.meets_targets),
        ("memory per GPU GB (weights / runtime / KV)",
         f"{b.get('weights', 0):.1f} / {b.get('runtime_and_activations', 0):.1f} / {b.get('kv_cache', 0):.1f}"),
    ]
    a = est.assumptions
    caption = (f"eta_bw {a['eta_bw']:.2f}, eta_c {a['eta_c']:.2f}, engine factor {a['engine_factor']:.2f}, "
               f"architecture factor {a['architecture_factor']:.2f}, measured matmul realisation "
               f"{a['matmul_realisation']:.2f} of H100's, "
               f"memory fraction {a['memory_fraction']} of {a['memory_fraction_of']}, at most {a['max_num_seqs']:,} "
               f"running requests and {a['max_num_batched_tokens']:,} tokens per step; --json for all assumptions")
    print_table([{"k": k, "v": v if isinstance(v, str) else fmt_value(v)} for k, v in rows],
                [("k", ""), ("v", "")], title=title, caption=caption)
    if native and est.precision not in ("bf16", "fp16"):  # a quantized default is said; 16-bit goes without saying
        typer.echo(f"note: weights {est.precision}: {a['precision_basis']}", err=True)
    for key in ("weight_dequantized", "weight_w4a8", "scaleup_link"):
        if a.get(key):
            typer.echo(f"note: {a[key]}", err=True)
    for w in est.warnings:
        typer.echo(f"warning: {w}", err=True)


@estimate_app.command("capacity")
def capacity_command(
    model: ModelOpt = None,
    params: ParamsOpt = None,
    active_params: ActiveParamsOpt = None,
    gpu: Annotated[Optional[str], typer.Option("--gpu", help="GPU type (default: every GPU that can hold the model, ranked).")] = None,
    requests_per_s: Annotated[Optional[str], typer.Option("--requests-per-s", help="Average requests per second.")] = None,
    tokens_per_month: Annotated[Optional[str], typer.Option("--tokens-per-month", help="Input + output tokens per month (e.g. 10B).")] = None,
    input_len: InputLenOpt = "1000",
    output_len: OutputLenOpt = "300",
    peak_factor: Annotated[float, typer.Option("--peak-factor", help="Peak over average traffic.")] = 1.0,
    max_ttft_ms: TtftOpt = None,
    max_tpot_ms: TpotOpt = None,
    target_utilization: Annotated[float, typer.Option("--target-utilization", help="Load each replica to at most this share of its capacity.")] = 0.8,
    engine: EngineOpt = "vllm",
    precision: PrecisionOpt = "bf16",
    kv_precision: KvPrecisionOpt = None,
    price_per_gpu_hour: Annotated[Optional[float], typer.Option("--price-per-gpu-hour", help="$ per GPU-hour, for cost per million output tokens.")] = None,
    as_json: JsonOpt = False,
    as_csv: CsvOpt = False,
) -> None:
    """Fewest GPUs (replicas x TP) to serve a traffic level within TTFT/TPOT targets."""
    from gpuplan.errors import GpuplanError
    from gpuplan.perf.capacity import Targets, make_traffic, plan_capacity, plan_capacity_all_gpus
    from gpuplan.units import parse_quantity

    spec = resolve_model_option(model, params, active_params)
    traffic = make_traffic(
        _tokens(input_len, "--input-len"), _tokens(output_len, "--output-len"),
        requests_per_s=parse_quantity(requests_per_s, "--requests-per-s") if requests_per_s is not None else None,
        tokens_per_month=parse_quantity(tokens_per_month, "--tokens-per-month") if tokens_per_month is not None else None,
        peak_factor=peak_factor,
    )
    targets = Targets(max_ttft_ms=max_ttft_ms, max_tpot_ms=max_tpot_ms, target_utilization=target_utilization)
    if price_per_gpu_hour is not None:
        from gpuplan.perf.inference_estimate import _check_pos

        _check_pos("--price-per-gpu-hour", price_per_gpu_hour, hi=1e5)
    if gpu is not None:
        plans = [plan_capacity(spec, gpu, traffic, targets, engine, precision, kv_precision)]
    else:
        plans = plan_capacity_all_gpus(spec, traffic, targets, engine, precision, kv_precision,
                                       price_per_gpu_hour_usd=price_per_gpu_hour)
    rows = []
    for p in plans:
        r = p.model_dump()
        if price_per_gpu_hour is not None and p.feasible:
            r["cost_per_month_usd"] = p.cost_per_month_usd(price_per_gpu_hour)
            r["cost_per_million_output_tokens_usd"] = p.cost_per_million_output_tokens(price_per_gpu_hour)
            r["cost_per_million_output_tokens_at_full_load_usd"] = p.cost_per_million_output_tokens_at_full_load(price_per_gpu_hour)
        rows.append(r)
    if as_json or as_csv:
        from gpuplan.cli.output import print_json

        print_json(rows[0] if gpu is not None else rows, as_csv)
    else:
        from gpuplan.cli.output import fmt_usd, print_table

        feasible = [r for r in rows if r["feasible"]]
        cols = [("gpu", "GPU"), ("total_gpus", "GPUs"), ("replicas", "replicas"), ("gpus_per_replica", "TP"),
                ("utilization", "avg util"), ("per_replica_output_tokens_per_s", "tok/s per replica"),
                ("ttft_ms", "TTFT ms"), ("tpot_ms", "TPOT ms")]
        if price_per_gpu_hour is not None:
            cols += [("cost_per_month_usd", "$/month"), ("cost_per_million_output_tokens_usd", "$/M out")]
        avg = plans[0].average_requests_per_s if plans else 0
        title = (f"{spec.name}: {avg:.3g} req/s average (peak x{traffic.peak_factor:g}), "
                 f"{traffic.input_len:,} in / {traffic.output_len:,} out, {precision}, {engine}")
        print_table(feasible, cols, title=title,
                    formatters={"cost_per_month_usd": fmt_usd, "cost_per_million_output_tokens_usd": fmt_usd,
                                "utilization": lambda v: f"{v:.0%}" if v is not None else "-"})
        bad = [r for r in rows if not r["feasible"]]
        if gpu is not None and bad:
            typer.echo(f"{bad[0]['gpu']}: cannot serve it ({bad[0]['message']})", err=True)
        elif bad:
            typer.echo(f"{len(bad)} GPU types cannot serve it within the targets: "
                       + ", ".join(r["gpu"] for r in bad) + " (--gpu G --json says why)", err=True)
    if not any(p.feasible for p in plans):
        raise GpuplanError(plans[0].message if len(plans) == 1 else "no GPU type can serve this within the targets")
