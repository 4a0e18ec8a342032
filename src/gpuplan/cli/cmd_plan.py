"""`gpuplan plan train | serve | project`: every offer ranked by total job cost, time and risk."""
from __future__ import annotations

from typing import Annotated, Optional

import typer

from gpuplan.cli.app import plan_app
from gpuplan.cli.options import (
    ActiveParamsOpt, AllowDecentralizedOpt, BudgetOpt, CsvOpt, DbOpt, DeadlineOpt, ExcludeOpt, FrameworkOpt,
    GpuFilterOpt, JsonOpt,
    KindsOpt, LimitOpt, MaxGpusOpt, MaxPriceAgeOpt, MinConfidenceOpt, ModelOpt, NoSpotOpt, ParamsOpt,
    ProvidersOpt, RegionsOpt, SampleLenOpt, WideOpt, build_request, constraints_from_options,
)

TokensOpt = Annotated[Optional[str], typer.Option("--tokens", help="Training tokens (e.g. 1e12, 15T).")]
EpochsOpt = Annotated[Optional[float], typer.Option("--epochs", help="Epochs over --dataset-tokens (fine-tuning).")]
DatasetTokensOpt = Annotated[Optional[str], typer.Option("--dataset-tokens", help="Dataset size in tokens.")]
MethodOpt = Annotated[str, typer.Option("--method", help="full, lora or qlora.")]
LoraRankOpt = Annotated[int, typer.Option("--lora-rank", help="LoRA rank.")]
TrainPrecisionOpt = Annotated[str, typer.Option("--precision", help="bf16, fp16, fp8 or fp4 (GPUs without it are skipped).")]
SeqLenOpt = Annotated[int, typer.Option("--seq-len", help="Sequence length, tokens.")]
GlobalBatchOpt = Annotated[Optional[int], typer.Option("--global-batch", help="Global batch, sequences.")]
GoodputOpt = Annotated[Optional[float], typer.Option("--goodput", help="Override the non-failure goodput (evaluation, stalls).")]
DatasetGbOpt = Annotated[float, typer.Option("--dataset-gb", help="Training data stored next to the run, GB.")]

ServePrecisionOpt = Annotated[Optional[str], typer.Option("--precision", help="Weights: bf16, fp16, fp8, int8, int4 or fp4 (default: the model's native precision).")]
OfflineOpt = Annotated[bool, typer.Option("--offline", help="No latency target (batch work): the max-throughput point.")]
NoRedundancyOpt = Annotated[bool, typer.Option("--no-redundancy", help="No spare replica (default N+1 on another node).")]
MaxWallOpt = Annotated[Optional[str], typer.Option("--max-wall", "--max-wall-hours", help="Hard cap on wall time (default 90d).")]
AllowUnclusteredOpt = Annotated[bool, typer.Option("--allow-unclustered", help="Join VMs not sold as a cluster for multi-node training, over their own (slow or unknown) network.")]
AllRowsOpt = Annotated[bool, typer.Option("--all-rows", help="Every offer's row; default one row per distinct choice.")]
KvPrecisionOpt = Annotated[Optional[str], typer.Option("--kv-precision", help="KV cache: bf16, fp8, int8, fp4.")]
EngineOpt = Annotated[str, typer.Option("--engine", help="vllm, sglang or trtllm.")]
InputLenOpt = Annotated[str, typer.Option("--input-len", help="Prompt tokens per request (e.g. 1000, 8k).")]
OutputLenOpt = Annotated[str, typer.Option("--output-len", help="Output tokens per request.")]
RpsOpt = Annotated[Optional[str], typer.Option("--requests-per-s", help="Average requests per second.")]
TokensPerMonthOpt = Annotated[Optional[str], typer.Option("--tokens-per-month", help="Input + output tokens per month (e.g. 5B).")]
PeakFactorOpt = Annotated[float, typer.Option("--peak-factor", help="Peak-to-average traffic ratio.")]
TtftOpt = Annotated[Optional[float], typer.Option("--max-ttft-ms", help="Time-to-first-token target, ms.")]
TpotOpt = Annotated[Optional[float], typer.Option("--max-tpot-ms", help="Time-per-output-token target, ms.")]
HorizonOpt = Annotated[float, typer.Option("--horizon-months", "--months", help="Serving horizon, months (reserved offers need their term).")]
UsersOpt = Annotated[Optional[str], typer.Option("--users", help="Where users are, e.g. eu,us-east,ap-south.")]


def _train_request(model, params, active_params, tokens, epochs, dataset_tokens, method, lora_rank, precision,
                   seq_len, global_batch, goodput, dataset_gb, constraints, limit, all_rows=False, sample_len=None,
                   framework="megatron"):
    """The TrainPlanRequest the API takes too: strings such as '15T' are parsed by the request itself."""
    from gpuplan.errors import UsageError
    from gpuplan.planner.requests import TrainPlanRequest

    if tokens is None and not (epochs and dataset_tokens):
        raise UsageError("give --tokens, or --epochs with --dataset-tokens")
    return build_request(TrainPlanRequest, **dict(
        model=model, params=params, active_params=active_params, tokens=tokens, epochs=epochs,
        dataset_tokens=dataset_tokens, method=method, lora_rank=lora_rank, precision=precision, seq_len=seq_len,
        global_batch=global_batch, goodput=goodput, dataset_gb=dataset_gb, constraints=constraints, limit=limit,
        all_rows=all_rows, sample_len=sample_len, framework=framework,
    ))



def _serve_request(model, params, active_params, precision, kv_precision, engine, input_len, output_len,
                   requests_per_s, tokens_per_month, peak_factor, max_ttft_ms, max_tpot_ms, months, users,
                   constraints, limit, offline=False, redundancy=True, all_rows=False):
    from gpuplan.planner.geography import parse_user_geographies
    from gpuplan.planner.requests import ServePlanRequest

    return build_request(ServePlanRequest, **dict(
        model=model, params=params, active_params=active_params,
        precision=precision, kv_precision=kv_precision, engine=engine, input_len=input_len, output_len=output_len,
        requests_per_s=requests_per_s, tokens_per_month=tokens_per_month, peak_factor=peak_factor, max_ttft_ms=max_ttft_ms, max_tpot_ms=max_tpot_ms, horizon_months=months,
        users=parse_user_geographies(users) if users else None, constraints=constraints, limit=limit,
        offline=offline, redundancy=redundancy, all_rows=all_rows,
    ))


@plan_app.command("train")
def plan_train(
    model: ModelOpt = None, params: ParamsOpt = None, active_params: ActiveParamsOpt = None,
    tokens: TokensOpt = None, epochs: EpochsOpt = None, dataset_tokens: DatasetTokensOpt = None,
    method: MethodOpt = "full", lora_rank: LoraRankOpt = 16, precision: TrainPrecisionOpt = "bf16",
    seq_len: SeqLenOpt = 4096, sample_len: SampleLenOpt = None, global_batch: GlobalBatchOpt = None,
    goodput: GoodputOpt = None, dataset_gb: DatasetGbOpt = 0.0, framework: FrameworkOpt = "megatron",
    budget: BudgetOpt = None, deadline: DeadlineOpt = None, providers: ProvidersOpt = None,
    exclude: ExcludeOpt = None, kinds: KindsOpt = None, regions: RegionsOpt = None, gpu: GpuFilterOpt = None,
    max_gpus: MaxGpusOpt = None, no_spot: NoSpotOpt = False, min_confidence: MinConfidenceOpt = None,
    max_price_age: MaxPriceAgeOpt = None, allow_decentralized: AllowDecentralizedOpt = False,
    allow_unclustered: AllowUnclusteredOpt = False, max_wall: MaxWallOpt = None, all_rows: AllRowsOpt = False,
    limit: LimitOpt = None, wide: WideOpt = False, db: DbOpt = None, as_json: JsonOpt = False, as_csv: CsvOpt = False,
) -> None:
    """Rank every training offer by total cost, time and risk, with p10-p90 bands."""
    from gpuplan.catalog.catalog import Catalog
    from gpuplan.cli.render_plans import render_plan_result
    from gpuplan.planner import plan_training

    constraints = constraints_from_options(budget, deadline, providers, exclude, kinds, regions, gpu, max_gpus,
                                           no_spot, min_confidence, max_price_age, allow_decentralized,
                                           allow_unclustered=allow_unclustered, max_wall=max_wall)
    req = _train_request(model, params, active_params, tokens, epochs, dataset_tokens, method, lora_rank,
                         precision, seq_len, global_batch, goodput, dataset_gb, constraints, limit, all_rows,
                         sample_len=sample_len, framework=framework)
    result = plan_training(req, Catalog.load(db))
    if as_csv and not as_json:
        from gpuplan.cli.plan_csv import print_plan_csv

        return print_plan_csv(result)
    render_plan_result(result, as_json, wide)


@plan_app.command("serve")
def plan_serve(
    model: ModelOpt = None, params: ParamsOpt = None, active_params: ActiveParamsOpt = None,
    precision: ServePrecisionOpt = None, kv_precision: KvPrecisionOpt = None, engine: EngineOpt = "vllm",
    input_len: InputLenOpt = "1000", output_len: OutputLenOpt = "250", requests_per_s: RpsOpt = None,
    tokens_per_month: TokensPerMonthOpt = None, peak_factor: PeakFactorOpt = 2.0,
    max_ttft_ms: TtftOpt = None, max_tpot_ms: TpotOpt = None, offline: OfflineOpt = False,
    no_redundancy: NoRedundancyOpt = False, months: HorizonOpt = 1.0, users: UsersOpt = None,
    all_rows: AllRowsOpt = False, budget: BudgetOpt = None, providers: ProvidersOpt = None,
    exclude: ExcludeOpt = None, kinds: KindsOpt = None, regions: RegionsOpt = None, gpu: GpuFilterOpt = None,
    max_gpus: MaxGpusOpt = None, no_spot: NoSpotOpt = False, min_confidence: MinConfidenceOpt = None,
    max_price_age: MaxPriceAgeOpt = None, limit: LimitOpt = None, wide: WideOpt = False, db: DbOpt = None,
    as_json: JsonOpt = False, as_csv: CsvOpt = False,
) -> None:
    """Rank every offer for serving a traffic profile: GPUs needed, monthly cost, $/M tokens, latency."""
    from gpuplan.catalog.catalog import Catalog
    from gpuplan.cli.render_plans import render_plan_result
    from gpuplan.planner import plan_serving

    constraints = constraints_from_options(budget, None, providers, exclude, kinds, regions, gpu, max_gpus,
                                           no_spot, min_confidence, max_price_age, True)
    req = _serve_request(model, params, active_params, precision, kv_precision, engine, input_len, output_len,
                         requests_per_s, tokens_per_month, peak_factor, max_ttft_ms, max_tpot_ms, months, users,
                         constraints, limit, offline=offline, redundancy=not no_redundancy, all_rows=all_rows)
    result = plan_serving(req, Catalog.load(db))
    if as_csv and not as_json:
        from gpuplan.cli.plan_csv import print_plan_csv

        return print_plan_csv(result)
    render_plan_result(result, as_json, wide)


@plan_app.command("project")
def plan_project_command(
    model: ModelOpt = None, params: ParamsOpt = None, active_params: ActiveParamsOpt = None,
    tokens: TokensOpt = None, method: MethodOpt = "full", train_precision: Annotated[str, typer.Option("--train-precision")] = "bf16",
    seq_len: SeqLenOpt = 4096, deadline: DeadlineOpt = None,
    serve_precision: Annotated[Optional[str], typer.Option("--serve-precision", help="Default: the model's native precision.")] = None, engine: EngineOpt = "vllm",
    input_len: InputLenOpt = "1000", output_len: OutputLenOpt = "250", requests_per_s: RpsOpt = None,
    tokens_per_month: TokensPerMonthOpt = None, peak_factor: PeakFactorOpt = 2.0,
    max_ttft_ms: TtftOpt = None, max_tpot_ms: TpotOpt = None, months: HorizonOpt = 12.0, users: UsersOpt = None,
    providers: ProvidersOpt = None, exclude: ExcludeOpt = None, no_spot: NoSpotOpt = False,
    db: DbOpt = None, as_json: JsonOpt = False, as_csv: CsvOpt = False,
) -> None:
    """Train on one provider, serve on another: the best of each, chosen separately, and the total."""
    from gpuplan.catalog.catalog import Catalog
    from gpuplan.cli.render_plans import render_project
    from gpuplan.planner import plan_project

    c_train = constraints_from_options(None, deadline, providers, exclude, None, None, None, None, no_spot,
                                       None, None, False)
    c_serve = constraints_from_options(None, None, providers, exclude, None, None, None, None, no_spot,
                                       None, None, True)
    train = _train_request(model, params, active_params, tokens, None, None, method, 16, train_precision,
                           seq_len, None, None, 0.0, c_train, 5)
    serve = _serve_request(model, params, active_params, serve_precision, None, engine, input_len, output_len,
                           requests_per_s, tokens_per_month, peak_factor, max_ttft_ms, max_tpot_ms, months, users,
                           c_serve, 5)
    project = plan_project(train, serve, Catalog.load(db))
    if as_csv and not as_json:
        from gpuplan.cli.plan_csv import print_project_csv

        return print_project_csv(project)
    render_project(project, as_json)
