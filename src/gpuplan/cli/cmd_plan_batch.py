"""`gpuplan plan batch`: N independent items by a deadline, on a fleet split across offers and providers."""
from __future__ import annotations

from typing import Annotated, Any, Optional

import typer

from gpuplan.cli.app import plan_app
from gpuplan.cli.options import (
    ActiveParamsOpt, BudgetOpt, DbOpt, ExcludeOpt, GpuFilterOpt, JsonOpt, KindsOpt, MaxGpusOpt, MaxPriceAgeOpt,
    MinConfidenceOpt, ModelOpt, NoSpotOpt, ParamsOpt, ProvidersOpt, RegionsOpt,
)

ItemsOpt = Annotated[Optional[str], typer.Option("--items", help="Independent items (prompts, documents, images), e.g. 10M.")]
KindOpt = Annotated[Optional[str], typer.Option("--kind", help="generate (LLM generation), embed (embeddings) or gpu (generic GPU work); default from the other options.")]
BatchDeadlineOpt = Annotated[Optional[str], typer.Option("--deadline", "--deadline-hours", help="Every item done within this wall time: hours, or 36h, 3d, 2w.")]
InputLenOpt = Annotated[Optional[int], typer.Option("--input-len", help="Input tokens per item (generate; default 1000).")]
OutputLenOpt = Annotated[Optional[int], typer.Option("--output-len", help="Output tokens per item (generate; default 250).")]
TokensPerItemOpt = Annotated[Optional[int], typer.Option("--tokens-per-item", help="Tokens per item (embed).")]
GpuSecondsOpt = Annotated[Optional[float], typer.Option("--gpu-seconds", "--gpu-seconds-per-item", help="Generic work: GPU-seconds per item on --reference-gpu.")]
ReferenceGpuOpt = Annotated[str, typer.Option("--reference-gpu", help="The GPU --gpu-seconds was measured on.")]
MinGpuMemOpt = Annotated[Optional[float], typer.Option("--min-gpu-memory", "--min-gpu-memory-gb", help="Generic work: skip GPUs with less memory, GB.")]
PrecisionOpt = Annotated[Optional[str], typer.Option("--precision", help="Weights: bf16, fp16, fp8, int8, int4 or fp4 (default: the model's native precision).")]
KvPrecisionOpt = Annotated[Optional[str], typer.Option("--kv-precision", help="KV cache: bf16, fp8, int8, fp4.")]
EngineOpt = Annotated[str, typer.Option("--engine", help="vllm, sglang or trtllm.")]
DownloadOpt = Annotated[Optional[float], typer.Option("--download-gb", help="What every new host downloads (image + weights), GB.")]
InputKbOpt = Annotated[Optional[float], typer.Option("--input-kb", "--input-kb-per-item", help="Input staged per item, kB (default: 4 bytes per token).")]
OutputKbOpt = Annotated[Optional[float], typer.Option("--output-kb", "--output-kb-per-item", help="Output shipped per item, kB (default: 4 bytes per token; embeddings float32).")]
BandwidthOpt = Annotated[Optional[float], typer.Option("--bandwidth-gbps", help="Every host's link, Gb/s (default by provider kind).")]
HostsPerOfferOpt = Annotated[Optional[int], typer.Option("--hosts-per-offer", help="Hosts one offer can supply (default: its max_nodes, else 8 marketplace / 16 decentralized...).")]
StrictDeadlineOpt = Annotated[bool, typer.Option("--strict-deadline", help="Size fleets so the p90 finish (estimate, price and interruption spreads) meets the deadline, not only the expected one.")]
LimitOpt = Annotated[int, typer.Option("--limit", help="Show at most N fleets.")]
SeedOpt = Annotated[int, typer.Option("--seed", help="Seed of the Monte Carlo bands.")]
ExportOpt = Annotated[Optional[str], typer.Option("--export", help="Print the launch files of fleet --rank instead: skypilot or k8s.")]
RankOpt = Annotated[int, typer.Option("--rank", help="The fleet to export.")]
BucketOpt = Annotated[str, typer.Option("--bucket", help="Shared storage for the work queue (SkyPilot mounts it at /data).")]
ModelIdOpt = Annotated[Optional[str], typer.Option("--model-id", help="Hugging Face repo the workers load (default: the preset's).")]

FLAGS = {"items": "--items", "deadline_hours": "--deadline", "budget_usd": "--budget-usd", "input_len": "--input-len",
         "output_len": "--output-len", "gpu_seconds_per_item": "--gpu-seconds", "reference_gpu": "--reference-gpu",
         "min_gpu_memory_gb": "--min-gpu-memory", "download_gb": "--download-gb", "input_kb_per_item": "--input-kb",
         "output_kb_per_item": "--output-kb", "bandwidth_gbps": "--bandwidth-gbps",
         "hosts_per_offer": "--hosts-per-offer", "max_price_age_days": "--max-price-age-days", "gpus": "--gpu",
         "max_gpus": "--max-gpus", "params": "--params", "active_params": "--active-params"}


def batch_request(*, model, params, active_params, items, kind, deadline, budget, input_len, output_len, tokens_per_item,
                  gpu_seconds, reference_gpu, min_gpu_memory, precision, kv_precision, engine, download_gb, input_kb,
                  output_kb, bandwidth_gbps, hosts_per_offer, constraints, limit, seed, strict_deadline=False):
    """The BatchPlanRequest from command-line values; every defect is one line naming its option."""
    from gpuplan.cli.options import parse_duration_hours, validated
    from gpuplan.errors import UsageError
    from gpuplan.planner.batch_request import BatchPlanRequest
    from gpuplan.units import parse_quantity

    if items is None:
        raise UsageError("--items is required (e.g. --items 10M)")
    if deadline is None:
        raise UsageError("--deadline is required (e.g. --deadline 3d)")
    if kind is None:
        kind = "gpu" if gpu_seconds is not None else "embed" if tokens_per_item is not None else "generate"
    kind = kind.strip().lower()
    if kind not in ("generate", "embed", "gpu"):
        raise UsageError(f"--kind {kind!r}: use generate, embed or gpu")
    if kind in ("generate", "embed") and (model is None) == (params is None):
        raise UsageError(f"{kind} work needs exactly one of --model and --params")
    if kind == "gpu" and gpu_seconds is None:
        raise UsageError("--kind gpu needs --gpu-seconds (GPU-seconds per item on --reference-gpu)")
    if kind != "gpu" and gpu_seconds is not None:
        raise UsageError("--gpu-seconds is for --kind gpu")
    if kind == "embed":
        if output_len is not None:
            raise UsageError("--output-len is for generation; embeddings have --tokens-per-item")
        if tokens_per_item is not None and input_len is not None:
            raise UsageError("give --tokens-per-item (or --input-len), not both")
        input_len = tokens_per_item if tokens_per_item is not None else input_len
    elif tokens_per_item is not None:
        raise UsageError("--tokens-per-item is for --kind embed")
    data: dict[str, Any] = dict(
        kind=kind, model=model, params=parse_quantity(params, "--params") if params else None,
        active_params=parse_quantity(active_params, "--active-params") if active_params else None,
        items=parse_quantity(items, "--items"), deadline_hours=parse_duration_hours(deadline),
        budget_usd=budget, gpu_seconds_per_item=gpu_seconds, reference_gpu=reference_gpu,
        min_gpu_memory_gb=min_gpu_memory, precision=precision, kv_precision=kv_precision, engine=engine,
        download_gb=download_gb, input_kb_per_item=input_kb, output_kb_per_item=output_kb,
        bandwidth_gbps=bandwidth_gbps, hosts_per_offer=hosts_per_offer, constraints=constraints, limit=limit, seed=seed,
        strict_deadline=strict_deadline)
    if input_len is not None:
        data["input_len"] = input_len
    if output_len is not None:
        data["output_len"] = output_len
    flags = dict(FLAGS)
    if kind == "embed":
        flags["input_len"] = "--tokens-per-item"
    try:
        return validated(BatchPlanRequest, data, flags=flags)
    except UsageError as e:
        raise UsageError(str(e).replace("Value error, ", "")) from None


@plan_app.command("batch")
def plan_batch_command(
    model: ModelOpt = None, params: ParamsOpt = None, active_params: ActiveParamsOpt = None,
    items: ItemsOpt = None, kind: KindOpt = None, deadline: BatchDeadlineOpt = None, budget: BudgetOpt = None,
    strict_deadline: StrictDeadlineOpt = False,
    input_len: InputLenOpt = None, output_len: OutputLenOpt = None, tokens_per_item: TokensPerItemOpt = None,
    gpu_seconds: GpuSecondsOpt = None, reference_gpu: ReferenceGpuOpt = "H100-SXM",
    min_gpu_memory: MinGpuMemOpt = None, precision: PrecisionOpt = None, kv_precision: KvPrecisionOpt = None,
    engine: EngineOpt = "vllm", download_gb: DownloadOpt = None, input_kb: InputKbOpt = None,
    output_kb: OutputKbOpt = None, bandwidth_gbps: BandwidthOpt = None, hosts_per_offer: HostsPerOfferOpt = None,
    providers: ProvidersOpt = None, exclude: ExcludeOpt = None, kinds: KindsOpt = None, regions: RegionsOpt = None,
    gpu: GpuFilterOpt = None, max_gpus: MaxGpusOpt = None, no_spot: NoSpotOpt = False,
    min_confidence: MinConfidenceOpt = None, max_price_age: MaxPriceAgeOpt = None, limit: LimitOpt = 10,
    seed: SeedOpt = 0, export: ExportOpt = None, rank: RankOpt = 1, bucket: BucketOpt = "s3://my-bucket/gpuplan-batch",
    model_id: ModelIdOpt = None, db: DbOpt = None, as_json: JsonOpt = False,
    as_csv: Annotated[bool, typer.Option("--csv", help="Print the ranked fleets as CSV.")] = False,
) -> None:
    """Plan a batch job (LLM generation, embeddings or generic GPU work) across marketplace, decentralized
    and cloud GPUs: ranked fleets that finish by the deadline, split across offers at least cost."""
    from gpuplan.catalog.catalog import Catalog
    from gpuplan.cli.options import constraints_from_options
    from gpuplan.planner.batch_plan import plan_batch

    constraints = constraints_from_options(None, None, providers, exclude, kinds, regions, gpu, max_gpus, no_spot,
                                           min_confidence, max_price_age, True)
    req = batch_request(model=model, params=params, active_params=active_params, items=items, kind=kind,
                        deadline=deadline, budget=budget, input_len=input_len, output_len=output_len,
                        tokens_per_item=tokens_per_item, gpu_seconds=gpu_seconds, reference_gpu=reference_gpu,
                        min_gpu_memory=min_gpu_memory, precision=precision, kv_precision=kv_precision, engine=engine,
                        download_gb=download_gb, input_kb=input_kb, output_kb=output_kb,
                        bandwidth_gbps=bandwidth_gbps, hosts_per_offer=hosts_per_offer, constraints=constraints,
                        limit=limit, seed=seed, strict_deadline=strict_deadline)
    result = plan_batch(req, Catalog.load(db))
    if export is not None:
        _export(result, export, rank, bucket, model_id, as_json)
        return
    if as_csv and not as_json:
        from gpuplan.cli.plan_csv import print_batch_csv

        return print_batch_csv(result)
    render_batch(result, as_json)


def _export(result, target: str, rank: int, bucket: str, model_id: str | None, as_json: bool) -> None:
    import sys

    from gpuplan.cli.output import print_json
    from gpuplan.errors import GpuplanError
    from gpuplan.export.batch_job import batch_job

    if not result.fleets:
        raise GpuplanError(result.why[0] if result.why else "no fleet to export")
    out = batch_job(result, target, rank, bucket=bucket, model_id=model_id)
    if as_json:
        print_json({"target": out.target, "files": out.files, "command": out.command, "shards": out.shards,
                    "shard_items": out.shard_items, "warnings": out.warnings})
        return
    sys.stdout.write(out.text)
    sys.stdout.write("\n# ---- run it ----\n" + "\n".join(f"# {line}" if not line.startswith("#") else line
                                                           for line in out.command.splitlines()) + "\n")
    for w in out.warnings:
        print(f"warning: {w}", file=sys.stderr)


def _fmt_h(h: float) -> str:
    from gpuplan.cli.render_plans import fmt_hours

    return fmt_hours(h)


def render_batch(result, as_json: bool) -> None:
    """The ranked fleets, #1's groups, why, and the fit to decentralized GPUs; exit 1 when none fits."""
    import sys

    from rich.console import Console

    from gpuplan.cli.output import fmt_usd, fmt_usd_short, print_json, print_table
    from gpuplan.planner.batch_plan import fleet_text

    if as_json:
        print_json(result)
        if not result.fleets:
            print(f"error: {result.why[0]}", file=sys.stderr)
            raise typer.Exit(1)
        return
    s = result.summary
    what = (f"{s['input_len']:,} in / {s['output_len']:,} out tokens" if result.kind == "generate" else
            f"{s['input_len']:,} tokens" if result.kind == "embed" else
            f"{s['gpu_seconds_per_item']:g} GPU-s on {s['reference_gpu']}")
    rows = []
    for f in result.fleets:
        unit = (f.cost_per_million_output_tokens_usd if result.kind == "generate"
                else f.cost_per_million_tokens_usd if result.kind == "embed" else f.cost_per_item_usd * 1000)
        peer = f.peer_share
        rows.append({
            "rank": f"{f.rank}", "fleet": fleet_text(f, 3), "label": f.label, "hosts": f"{f.hosts}" + (f" ({f.spare_hosts} spare)" if f.spare_hosts else ""),
            "gpus": f.gpus, "finish": _fmt_h(f.finish_hours), "finish_p90": _fmt_h(f.finish_p90_hours),
            "cost": fmt_usd(f.cost_usd),
            "band": f"{fmt_usd_short(f.cost_p10_usd)}-{fmt_usd_short(f.cost_p90_usd)}" + (" =" if f.ties_first else ""),
            "unit": (f"${unit:,.3f}" if unit < 10 else fmt_usd(unit)) if unit is not None else "-", "peer": f"{peer:.0%}", "risk": f"{f.risk:.2f}",
        })
    unit_head = {"generate": "$/M out", "embed": "$/M tok", "gpu": "$/1k items"}[result.kind]
    title = (f"batch fleets for {result.model or 'generic GPU work'}: {s['items']:,.0f} items ({what}) "
             f"by {_fmt_h(s['deadline_hours'])}: {len(rows)} shown")
    if rows:
        print_table(rows, [("rank", "#"), ("fleet", "fleet (hosts x offer, share of items)"), ("label", "why this one"),
                           ("hosts", "hosts"), ("gpus", "GPUs"), ("finish", "finish"), ("finish_p90", "p90"),
                           ("cost", "cost"), ("band", "p10-p90 cost"), ("unit", unit_head),
                           ("peer", "market+decentr."), ("risk", "risk")],
                    title=title, keep_whole=("rank", "cost", "band", "unit", "finish", "finish_p90"),
                    caption="= ties with #1 (bands overlap); market+decentr. = share of items on marketplace, "
                            "decentralized and community-cloud hosts")
    console = Console(width=None if sys.stdout.isatty() else 160)
    if result.fleets:
        best = result.fleets[0]
        console.print(f"#1 in detail ({best.hosts} hosts, {best.gpus} GPUs; cold starts "
                      f"{fmt_usd(best.cold_start_usd)}, egress {best.egress_gb:,.1f} GB {fmt_usd(best.egress_usd)}, "
                      f"interruptions +{best.interruption_overhead:.1%} host time, "
                      f"~{best.expected_interruptions:,.1f} expected):", style="bold", markup=False)
        for g in best.groups:
            where = ", ".join(g.regions[:3]) + (f" +{len(g.regions) - 3}" if len(g.regions) > 3 else "")
            console.print(
                f"  {g.hosts} of {g.hosts_available} hosts ({g.hosts_available_basis}) {g.provider_name} "
                f"{g.gpus_per_node:g}x {g.gpu} {g.pricing} [{where or '?'}]: {g.share:.0%} of items "
                f"({g.items:,.0f}), TP{g.tp} x{g.replicas_per_host}/host, {g.items_per_host_hour:,.0f} items/h/host, "
                f"cold start {g.cold_start_hours * 60:.0f} min ({g.download_gb:,.0f} GB at {g.bandwidth_gbps:g} Gb/s), "
                f"{g.interruptions_per_host_hour:.3g} interruptions/host-h, {fmt_usd(g.cost_usd)}", markup=False)
            for n in g.notes[:2]:
                console.print(f"    {n}", style="dim", markup=False)
        for n in best.notes:
            console.print(f"  {n}", style="yellow", markup=False)
    for line in result.why:
        console.print(f"  {line}", markup=False)
    suit = result.suitability
    if suit:
        console.print(f"decentralized / marketplace GPUs: {suit['verdict']}", style="bold", markup=False)
        for r in suit.get("for", []):
            console.print(f"  + {r}", markup=False)
        for r in suit.get("against", []):
            console.print(f"  - {r}", markup=False)
    if result.closest is not None:
        c = result.closest
        console.print(f"  closest (not ranked): {fleet_text(c, 4)}: {_fmt_h(c.finish_hours)}, {fmt_usd(c.cost_usd)}",
                      markup=False)
    if result.rejected:
        why = ", ".join(f"{k}: {v}" for k, v in sorted(result.rejected.items(), key=lambda kv: -kv[1]))
        console.print(f"not ranked: {why}", style="dim", markup=False)
    if not result.fleets:
        print(f"error: {result.why[0]}", file=sys.stderr)
        raise typer.Exit(1)
